"""The HTTP API of docs/api.md: routes, their schemas and refusals, limits, headers, /openapi.json."""
