"""The HTTP API of shared/API.md: routes, their schemas and refusals, limits, headers, /openapi.json."""
