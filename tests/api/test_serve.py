"""``escoba serve``'s app factory: what each gunicorn worker builds."""

from __future__ import annotations

import gc

from flask import Flask

from api import observability, serve


def test_the_worker_app_freezes_what_it_built_out_of_the_collectors_full_passes():
    gc.unfreeze()
    try:
        app = serve._escoba_app()
        assert isinstance(app, Flask)
        assert gc.get_freeze_count() > 1000  # the modules, schemas and routes built so far
    finally:
        gc.unfreeze()
        observability.stop_logging()
