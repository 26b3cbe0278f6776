"""``jsonapi.gc_freeze``: gc.freeze() once the configuration is committed (``make_wsgi_app``),
only when asked, and without an event subscriber (which would make Pyramid notify its events on
every request)."""
from __future__ import annotations

import gc

import pytest
from pyramid.config import Configurator


@pytest.fixture
def unfrozen():
    gc.unfreeze()
    yield
    gc.unfreeze()  # the rest of the test session collects as before


def make_app(**settings):
    config = Configurator(settings=settings)
    config.include("jsonapi_pyramid")
    return config.make_wsgi_app()


def test_the_heap_is_frozen_once_the_application_is_made_when_asked(unfrozen):
    config = Configurator(settings={"jsonapi.gc_freeze": "true"})
    config.include("jsonapi_pyramid")
    assert gc.get_freeze_count() == 0  # not while configuring: when the configuration is committed
    app = config.make_wsgi_app()
    assert gc.get_freeze_count() > 1000  # the configuration's objects, and everything else alive
    assert not app.registry.has_listeners


def test_the_heap_is_not_frozen_by_default(unfrozen):
    make_app()
    make_app(**{"jsonapi.gc_freeze": "false"})
    assert gc.get_freeze_count() == 0
