"""Requests the server makes to URLs its users gave it: refused when they aim inside.

A minimal ``check_url`` for Web Push endpoints; the "public" work brings the full
module (``post`` with the same guard) and takes this one's place on merge, keeping
this interface: ``RefusedURL(ValueError)`` and ``check_url(url, *, allow_private)``.
"""

from __future__ import annotations

import ipaddress
import socket
from urllib.parse import urlsplit


class RefusedURL(ValueError):
    """A URL the server will not send to (a private address, a bad scheme...)."""


def _public(address: str) -> bool:
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if ip.version == 6 and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_global and not ip.is_multicast


def check_url(url: str, *, allow_private: bool) -> None:
    """RefusedURL unless ``url`` is http(s) to a host whose every address is public.

    ``allow_private`` (``ESCOBA_NOTIFY_ALLOW_PRIVATE=1``) lets loopback and private
    addresses through, for tests and private networks.
    """
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise RefusedURL(f"not a URL: {exc}") from None
    if parts.scheme not in ("http", "https"):
        raise RefusedURL("only http and https URLs")
    if not parts.hostname:
        raise RefusedURL("the URL names no host")
    if parts.username or parts.password:
        raise RefusedURL("no credentials in the URL")
    if allow_private:
        return
    try:
        infos = socket.getaddrinfo(parts.hostname, port or (443 if parts.scheme == "https" else 80),
                                   type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise RefusedURL(f"the host does not resolve: {exc}") from None
    addresses = {info[4][0] for info in infos}
    if not addresses or not all(_public(a) for a in addresses):
        raise RefusedURL(f"{parts.hostname} is not a public address")


__all__ = ["RefusedURL", "check_url"]
