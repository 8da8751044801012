"""The WebSockets: the route, moves sent over it, the fan-out of change notices, frames, bounds."""
