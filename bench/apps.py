"""Build one benchmarked application in this process: ``build(name, url) -> (wsgi app, source)``,
``source`` being what bench/counting.py counts statements on (an engine or a counter).

``ours`` the reference service (jsonapi_blog) as shipped, with the settings bench/serve.py always
used; ``ours-noetag`` the same with ``jsonapi.etags = false`` (the ETag cost); ``ours-nometrics``
with ``jsonapi.metrics = false`` and ``ours-traced`` with OpenTelemetry spans too (their cost); ``ceiling``
(bench/ceiling.py), ``floor`` (bench/floor.py), ``peer`` (bench/peer_app.py, in
bench/.peer-venv's Python), ``drf`` (bench/drf_app.py, in bench/.drf-venv's Python), ``before``
(ours from the tree on PYTHONPATH).
"""
from __future__ import annotations

import os
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

OURS_SETTINGS = {
    "retry.attempts": "3",
    "jsonapi.default_page_size": "20",
    "jsonapi.max_page_size": "100",
    "jsonapi.gc_freeze": "true",  # as production.ini
    "jsonapi.metrics": "true",  # as production.ini
}


def _discarding_provider():
    """A TracerProvider whose batches are dropped: the spans' cost in the process, not an exporter's."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

    class Discard(SpanExporter):
        def export(self, spans):
            return SpanExportResult.SUCCESS

    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(Discard()))
    return provider


def build_ours(url: str, etags: bool = True, metrics: bool = True, traced: bool = False):
    os.environ.pop("DATABASE_URL", None)
    from ceiling import CURSOR_SECRET

    from jsonapi_blog import main

    settings = {"sqlalchemy.url": url, "jsonapi.cursor_secret": CURSOR_SECRET, **OURS_SETTINGS}
    os.environ.pop("JSONAPI_ETAGS", None)
    if not etags:  # (only then: an older tree, BENCH_BEFORE, may not know the setting)
        settings["jsonapi.etags"] = "false"
    if not metrics:
        settings["jsonapi.metrics"] = "false"
    if traced:
        settings["jsonapi.tracer_provider"] = _discarding_provider()
    app = main({}, **settings)
    return app, app.registry["db.engine"]


def build(name: str, url: str):
    if name in ("ours", "before"):  # "before": the same service from another source tree (PYTHONPATH)
        return build_ours(url)
    if name == "ours-noetag":
        return build_ours(url, etags=False)
    if name == "ours-nometrics":
        return build_ours(url, metrics=False)
    if name == "ours-traced":
        return build_ours(url, traced=True)
    if name == "ceiling":
        from ceiling import make_app

        return make_app(url)
    if name == "floor":
        from floor import make_app

        return make_app(url)
    if name == "peer":
        from peer_app import make_app

        return make_app(url)
    if name == "drf":
        from drf_app import make_app

        return make_app(url)
    raise SystemExit(f"unknown app {name!r}")
