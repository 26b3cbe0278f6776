"""Build one benchmarked application in this process: ``build(name, url) -> (wsgi app, source)``,
``source`` being what bench/counting.py counts statements on (an engine or a counter).

``ours`` the reference service (jsonapi_blog) as shipped, with the settings bench/serve.py always
used; ``ours-prod`` the same under production.ini's ``[app:main]`` settings (the PostgreSQL phase,
bench/pgphase.py: only the database URL and the cursor secret replaced, ``PRODUCTION_OVERRIDES``);
``ours-noetag`` the same with ``jsonapi.etags = false`` (the ETag cost); ``ours-nometrics`` with
``jsonapi.metrics = false`` and ``ours-traced`` with OpenTelemetry spans too (their cost); ``ceiling``
(bench/ceiling.py: DBAPI connections, SQL strings), ``ceiling-core`` (the same on SQLAlchemy Core:
an engine with ``pool_pre_ping``, ``engine.connect()`` per request, ``text()`` statements; the
ceiling issue 37's targets name), ``floor`` (bench/floor.py), ``peer`` (bench/peer_app.py, in
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


#: What the PostgreSQL phase replaces in production.ini's ``[app:main]`` (the rest is read as it is).
PRODUCTION_OVERRIDES = {
    "sqlalchemy.url": "the bench's database (its application_name tells the backends apart)",
    "jsonapi.cursor_secret": "the ceiling's (production gives every process the same one by JSONAPI_CURSOR_SECRET)",
}


def production_settings(ini: pathlib.Path | None = None) -> dict:
    """production.ini's ``[app:main]`` settings as pserve passes them (``use`` left out)."""
    import configparser

    parser = configparser.RawConfigParser()
    parser.optionxform = str  # keys as written
    parser.read(ini or pathlib.Path(__file__).resolve().parent.parent / "production.ini")
    return {key: value for key, value in parser.items("app:main") if key != "use"}


def build_production(url: str):
    """``ours`` under production.ini's settings: only ``PRODUCTION_OVERRIDES`` replaced."""
    for name in ("DATABASE_URL", "DATABASE_READ_URL", "JSONAPI_CURSOR_SECRET", "JSONAPI_ETAGS", "JSONAPI_CORS_ORIGINS"):
        os.environ.pop(name, None)
    from ceiling import CURSOR_SECRET

    from jsonapi_blog import main

    app = main({}, **{**production_settings(), "sqlalchemy.url": url, "jsonapi.cursor_secret": CURSOR_SECRET})
    return app, app.registry["db.engine"]


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
    if name == "ours-prod":
        return build_production(url)
    if name == "ours-noetag":
        return build_ours(url, etags=False)
    if name == "ours-nometrics":
        return build_ours(url, metrics=False)
    if name == "ours-traced":
        return build_ours(url, traced=True)
    if name == "ceiling":
        from ceiling import make_app

        return make_app(url)
    if name == "ceiling-core":
        from ceiling import make_app

        return make_app(url, core=True)
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
