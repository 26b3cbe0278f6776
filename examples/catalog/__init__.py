"""A second example application: a small library catalogue on jsonapi_pyramid's public API only.

Unlike the blog it has UUID and text keys, a self-referential tree, an association object, a
one-to-one, two relationships to one target, a custom ``primaryjoin``, and computed attributes.
The schema is made with ``Base.metadata.create_all`` (``catalog.initdb``); no migrations.

    from catalog import main
    app = main({}, **{"sqlalchemy.url": "sqlite:///catalog.sqlite"})
"""
from __future__ import annotations

from pyramid.config import Configurator


def main(global_config, **settings):
    """The WSGI application (a paste ``app_factory``)."""
    with Configurator(settings=settings) as config:
        config.include("jsonapi_pyramid.db")  # engine from sqlalchemy.url, pyramid_tm, request.dbsession
        config.include("jsonapi_pyramid")  # traversal tree, views, JSON:API errors, negotiation
        config.include(".resources")  # the catalogue's types and what may be written
    return config.make_wsgi_app()


def initdb(engine) -> None:
    """Create every table (the catalogue has no migrations)."""
    from .models import Base

    Base.metadata.create_all(engine)
