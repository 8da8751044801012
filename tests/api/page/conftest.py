"""The page's tests: each module plays against its own served app (tests/api/browser.serve)."""

from __future__ import annotations

import pytest

from ..browser import serve


@pytest.fixture(scope="module")
def server():
    """A served app on fakeredis, with a worker for its bots (a module's own: tables never mix)."""
    s = serve()
    try:
        yield s
    finally:
        s.stop()
