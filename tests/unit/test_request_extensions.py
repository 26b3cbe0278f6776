"""The library's request properties are Pyramid request extensions (``add_request_method``), so
``Request.blank()`` + ``apply_request_extensions()``, what tests and scripts use, gives them."""
from __future__ import annotations

import transaction
from pyramid.config import Configurator
from pyramid.request import Request, apply_request_extensions
from sqlalchemy import text


def test_apply_request_extensions_gives_dbsession_tm_and_request_id(tmp_path):
    config = Configurator(settings={"sqlalchemy.url": f"sqlite:///{tmp_path / 'app.sqlite'}"})
    config.include("jsonapi_pyramid.db")
    config.include("jsonapi_pyramid")
    app = config.make_wsgi_app()
    request = Request.blank("/api", headers={"X-Request-Id": "abc-1"})
    request.registry = app.registry
    apply_request_extensions(request)
    assert request.request_id == "abc-1"
    assert isinstance(request.tm, transaction.TransactionManager)
    with request.tm:  # no server served it: its session is joined to request.tm, as in a script
        assert request.dbsession.execute(text("SELECT 1")).scalar_one() == 1
    app.registry["db.engine"].dispose()
