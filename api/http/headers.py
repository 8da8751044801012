"""The security headers every answer carries: the page's and the API's alike, in one place.

- Content-Security-Policy: the page loads only its own files: scripts and styles from this
  origin, no inline script, no eval, no plugin; it talks (fetch, WebSocket) only to this
  origin. ``frame-ancestors 'none'``: no other site may frame the table and trick a tap on
  RESIGN (``X-Frame-Options: DENY`` says the same to older browsers).
- ``X-Content-Type-Options: nosniff``: a JSON answer is never run as a script.
- ``Referrer-Policy: no-referrer``: the table's address (``/t/{id}``) never reaches another
  site's logs when a player follows a link.
"""

from __future__ import annotations

CONTENT_SECURITY_POLICY = "; ".join((
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    "font-src 'self'",
    # 'self' covers this origin's ws:/wss: in current browsers; the page opens no other socket
    "connect-src 'self'",
    "manifest-src 'self'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
))

HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


_LOWER = tuple((name.lower(), (name, value)) for name, value in HEADERS.items())


def install(app) -> None:
    """Every answer gets ``HEADERS``, save those it sets itself: added to the WSGI header list as
    the answer starts (werkzeug's Headers.setdefault scans the headers once per name)."""
    inner = app.wsgi_app

    def wsgi_app(environ, start_response):
        def start(status, headers, exc_info=None):
            have = {name.lower() for name, _ in headers}
            headers.extend(item for name, item in _LOWER if name not in have)
            return start_response(status, headers, exc_info)

        return inner(environ, start)

    app.wsgi_app = wsgi_app
