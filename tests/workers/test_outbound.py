"""The guard on URLs users give us: nothing inside is reached, at registration or at sending."""

from __future__ import annotations

import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from workers import outbound

from .receiver import Receiver

INSIDE = [
    "http://127.0.0.1:6379/",
    "http://localhost:8000/x",
    "http://10.1.2.3/",
    "http://192.168.0.10/",
    "http://172.16.5.4/",
    "http://169.254.169.254/latest/meta-data/",
    "http://[::1]:8000/",
    "http://[::ffff:127.0.0.1]/",
    "http://[::ffff:a9fe:a9fe]/",  # 169.254.169.254, IPv4-mapped
    "http://[fe80::1]/",
    "http://[fd00::1]/",
    "http://224.0.0.1/",
    "http://0.0.0.0:80/",
    "http://240.0.0.1/",
    "http://100.64.0.1/",  # shared address space: not public
    "http://2130706433/",  # 127.0.0.1 written as a number
]


@pytest.mark.parametrize("url", INSIDE)
def test_addresses_inside_are_refused(url):
    with pytest.raises(outbound.RefusedURL) as refused:
        outbound.check_url(url, allow_private=False)
    assert "address" in str(refused.value)


@pytest.mark.parametrize("url,why", [
    ("ftp://93.184.216.34/", "http and https"),
    ("file:///etc/passwd", "http and https"),
    ("http:///nohost", "no host"),
    ("http://user:pw@93.184.216.34/", "credentials"),
    ("http://nothing.invalid/", "does not resolve"),
    ("http://93.184.216.34:99999/", "valid URL"),
])
def test_urls_of_the_wrong_kind_are_refused(url, why):
    with pytest.raises(outbound.RefusedURL, match=why):
        outbound.check_url(url, allow_private=False)


def test_a_public_address_passes_and_private_ones_pass_when_allowed():
    outbound.check_url("https://93.184.216.34/hook", allow_private=False)
    outbound.check_url("http://127.0.0.1:6379/", allow_private=True)


def test_a_name_is_judged_by_every_address_it_resolves_to(monkeypatch):
    real = socket.getaddrinfo

    def two_faced(host, *args, **kwargs):
        if host == "mixed.example":
            return real("93.184.216.34", *args, **kwargs) + real("127.0.0.1", *args, **kwargs)
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", two_faced)
    with pytest.raises(outbound.RefusedURL, match="loopback"):
        outbound.check_url("http://mixed.example/", allow_private=False)


def test_post_judges_the_host_again_when_it_sends(monkeypatch):
    """DNS rebinding: public at registration, 127.0.0.1 when the notice goes out."""
    real = socket.getaddrinfo
    answers = {"now": "93.184.216.34"}

    def rebinding(host, *args, **kwargs):
        if host == "rebind.example":
            return real(answers["now"], *args, **kwargs)
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", rebinding)
    with Receiver() as rx:
        port = rx.server.server_port
        url = f"http://rebind.example:{port}/notice"
        outbound.check_url(url, allow_private=False)  # registration: public
        answers["now"] = "127.0.0.1"
        with pytest.raises(outbound.RefusedURL, match="loopback"):
            outbound.post(url, data=b"{}", headers={}, allow_private=False)
        assert rx.attempts == []
        # allowed, it connects to the address it judged (the receiver), whatever the name
        assert outbound.post(url, data=b'{"a": 1}', headers={}, allow_private=True) == 200
        assert rx.delivered == [{"a": 1}]


def test_post_follows_no_redirect():
    hits = []

    class Target(BaseHTTPRequestHandler):
        def do_POST(self):
            hits.append(self.path)
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args):
            pass

    target = ThreadingHTTPServer(("127.0.0.1", 0), Target)

    class Redirect(Target):
        def do_POST(self):
            self.send_response(307)
            self.send_header("Location", f"http://127.0.0.1:{target.server_port}/inside")
            self.send_header("Content-Length", "0")
            self.end_headers()

    redirect = ThreadingHTTPServer(("127.0.0.1", 0), Redirect)
    threads = [threading.Thread(target=s.serve_forever, daemon=True) for s in (target, redirect)]
    for t in threads:
        t.start()
    try:
        status = outbound.post(f"http://127.0.0.1:{redirect.server_port}/", data=b"{}", headers={},
                               allow_private=True)
        assert status == 307
        assert hits == []
    finally:
        for s in (target, redirect):
            s.shutdown()
            s.server_close()


def test_post_gives_up_after_its_timeout():
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)  # accepts, never answers
    try:
        with pytest.raises(OSError):
            outbound.post(f"http://127.0.0.1:{listener.getsockname()[1]}/", data=b"{}", headers={},
                          timeout=0.3, allow_private=True)
    finally:
        listener.close()


def test_the_notice_job_sends_nothing_inside(env):
    """A URL stored before the guard (or by hand) is judged again by the job, and not retried."""
    import dataclasses

    from workers import context, scheduling

    context.configure(dataclasses.replace(env.config, notify_allow_private=False), env.clock,
                   tables=env.redis)
    with Receiver() as rx:
        tid = env.open(bots=("tito",))
        env.redis.hset(scheduling.notify_key(tid), "0", rx.url)
        env.start(tid)
        env.drain()
        assert env.state(tid).turn == 0
        assert rx.attempts == []
        assert not [k for k in env.queue.keys("rq:job:*") if b"notify" in k]
