"""Requests this server makes to URLs its users gave it (turn notices, web push).

A URL from a guest must not reach inside: loopback, the private networks, link-local
(cloud metadata at 169.254.169.254), multicast, reserved and unspecified addresses are
refused, IPv4-mapped IPv6 (``::ffff:127.0.0.1``) included. ``check_url`` judges a URL at
registration; ``post`` resolves the host again when it sends, judges every address it
got, and connects to the very address it judged, so a name that resolved to a public
address at registration and to 127.0.0.1 now (DNS rebinding) is refused too. No
redirects are followed (a 3xx is an answer, not an instruction), and timeouts are short.
``allow_private`` (``ESCOBA_NOTIFY_ALLOW_PRIVATE=1``) lets tests and private networks
reach their own addresses.
"""

from __future__ import annotations

import http.client
import ipaddress
import socket
import ssl
from urllib.parse import urlsplit

SCHEMES = {"http": 80, "https": 443}


class RefusedURL(ValueError):
    """A URL this server will not send to; the message says why."""


def _refusal(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str | None:
    """Why ``address`` is inside (or nowhere), or None for a public address."""
    if isinstance(address, ipaddress.IPv6Address):
        mapped = address.ipv4_mapped or address.sixtofour
        if mapped is not None:
            return _refusal(mapped)
    for kind in ("loopback", "private", "link_local", "multicast", "reserved", "unspecified"):
        if getattr(address, f"is_{kind}"):
            return kind.replace("_", "-")
    if not address.is_global:  # shared address space (100.64/10), documentation ranges, ...
        return "not public"
    return None


def _split(url: str) -> tuple[str, str, int, str]:
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise RefusedURL(f"not a valid URL: {exc}") from None
    scheme = parts.scheme.lower()
    if scheme not in SCHEMES:
        raise RefusedURL("only http and https URLs are allowed")
    host = parts.hostname
    if not host:
        raise RefusedURL("the URL has no host")
    if parts.username is not None or parts.password is not None:
        raise RefusedURL("credentials in the URL are not allowed")
    path = parts.path or "/"
    if parts.query:
        path += "?" + parts.query
    return scheme, host, port or SCHEMES[scheme], path


def _resolve(host: str, port: int) -> list[str]:
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise RefusedURL(f"the host {host!r} does not resolve ({exc})") from None
    addresses: list[str] = []
    for *_, sockaddr in infos:
        address = str(sockaddr[0])  # getaddrinfo's INET and INET6 addresses are strings
        if address not in addresses:
            addresses.append(address)
    if not addresses:
        raise RefusedURL(f"the host {host!r} does not resolve")
    return addresses


def _checked_addresses(host: str, port: int, allow_private: bool) -> list[str]:
    """Every address ``host`` resolves to, refused if any of them is inside."""
    addresses = _resolve(host, port)
    if allow_private:
        return addresses
    for raw in addresses:
        why = _refusal(ipaddress.ip_address(raw.split("%", 1)[0]))
        if why is not None:
            raise RefusedURL(f"the host {host!r} resolves to a {why} address ({raw})")
    return addresses


def check_url(url: str, *, allow_private: bool) -> None:
    """Raise RefusedURL unless ``url`` is http(s) to a host whose every address is public."""
    _scheme, host, port, _path = _split(url)
    _checked_addresses(host, port, allow_private)


class _PinnedHTTP(http.client.HTTPConnection):
    """An HTTP connection to one checked address, whatever the Host header says."""

    def __init__(self, host: str, port: int, address: str, timeout: float):
        super().__init__(host, port, timeout=timeout)
        self._address = address

    def connect(self):
        self.sock = socket.create_connection((self._address, self.port), self.timeout)


class _PinnedHTTPS(http.client.HTTPSConnection):
    """HTTPS to one checked address; the certificate is still checked against the host's name."""

    def __init__(self, host: str, port: int, address: str, timeout: float):
        super().__init__(host, port, timeout=timeout, context=ssl.create_default_context())
        self._address = address

    def connect(self):
        sock = socket.create_connection((self._address, self.port), self.timeout)
        self.sock = self._context.wrap_socket(sock, server_hostname=self.host)


def post(url: str, *, data: bytes, headers: dict, timeout: float = 5.0, allow_private: bool) -> int:
    """POST ``data`` to ``url`` and return the status; RefusedURL for a URL that reaches inside.

    The host is resolved and judged now (not only at registration) and the connection goes to
    the first address judged; redirects are not followed. Network failures raise OSError.
    """
    scheme, host, port, path = _split(url)
    address = _checked_addresses(host, port, allow_private)[0]
    cls = _PinnedHTTPS if scheme == "https" else _PinnedHTTP
    conn = cls(host, port, address, timeout)
    try:
        conn.request("POST", path, body=data, headers={"Content-Length": str(len(data)), **headers})
        response = conn.getresponse()
        response.read(64 * 1024)  # a receiver's answer is not ours to store: read a little, drop it
        return response.status
    finally:
        conn.close()
