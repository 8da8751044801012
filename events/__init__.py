"""The event log: records and schemas (``records``), the Redis stream store
(``store``), snapshots (``snapshots``), ``TableService`` (``service``), export
as JSON lines (``export``), ``escoba replay`` (``replay``), random legal play
for tests and benchmarks (``autoplay``) and the configuration (``config``)."""
