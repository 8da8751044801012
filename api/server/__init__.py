"""The process around the app: gunicorn (serve), the one-process try-out (dev), the wire, logs and metrics."""
