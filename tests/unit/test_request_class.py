"""One request class for the application's request properties (``request_class``): requests the
router and ``pyramid.scripting`` make are of it, with every ``add_request_method`` of the library
and of the application; a request made elsewhere still gets them as Pyramid applies them."""
from __future__ import annotations

import itertools

from pyramid.config import Configurator
from pyramid.events import NewResponse
from pyramid.interfaces import IRequestFactory
from pyramid.request import Request, apply_request_extensions
from pyramid.router import Router
from pyramid.scripting import prepare
from webtest import TestApp


def make_app(tmp_path, factory=None):
    counter = itertools.count()
    config = Configurator(settings={"sqlalchemy.url": f"sqlite:///{tmp_path / 'app.sqlite'}"})
    if factory is not None:
        config.set_request_factory(factory)
    config.include("jsonapi_pyramid.db")
    config.include("jsonapi_pyramid")
    config.add_request_method(lambda request: next(counter), "ticket", reify=True)  # the application's own
    config.add_request_method(lambda request: request.path_info.upper(), "shout", property=True)
    config.add_request_method(lambda request, n: n * 2, "double")

    def report(request):
        request.response.text = f"{type(request).__qualname__} {request.ticket} {request.ticket} {request.shout} {request.double(21)}"
        return request.response

    config.add_route("report", "/report")
    config.add_view(report, route_name="report")
    return config.make_wsgi_app()


def test_requests_of_the_router_share_one_class_with_every_property(tmp_path):
    app = make_app(tmp_path)
    factory = app.registry.queryUtility(IRequestFactory)
    assert issubclass(factory, Request) and factory is not Request
    assert {"ticket", "shout", "double", "dbsession", "dbconnection", "tm", "request_id", "jsonapi_body"} <= set(vars(factory))
    client = TestApp(app)
    first, second = client.get("/report").text, client.get("/report").text
    assert first == "Request 0 0 /REPORT 42" and second == "Request 1 1 /REPORT 42"  # reified once per request
    seen = []
    app.registry.registerHandler(lambda event: seen.append(type(event.request)), (NewResponse,))
    client.get("/report")
    client.get("/report")
    assert seen == [factory, factory]
    app.registry["db.engine"].dispose()


def test_a_script_request_is_of_the_class(tmp_path):
    app = make_app(tmp_path)
    env = prepare(registry=app.registry)
    try:
        request = env["request"]
        assert type(request) is app.registry.queryUtility(IRequestFactory)
        assert request.ticket == request.ticket and request.double(2) == 4
    finally:
        env["closer"]()
    app.registry["db.engine"].dispose()


def test_a_request_made_elsewhere_gets_every_extension_as_pyramid_applies_them(tmp_path):
    app = make_app(tmp_path)
    request = Request.blank("/report", headers={"X-Request-Id": "abc-1"})
    request.registry = app.registry
    apply_request_extensions(request)
    assert request.request_id == "abc-1" and request.shout == "/REPORT" and request.double(4) == 8
    assert request.ticket == request.ticket
    env = prepare(request=Request.blank("/x"), registry=app.registry)
    try:
        assert env["request"].shout == "/X"
    finally:
        env["closer"]()
    app.registry["db.engine"].dispose()


def test_a_subrequest_made_by_hand_gets_them_too(tmp_path):
    app = make_app(tmp_path)
    config = Configurator(registry=app.registry)
    config.add_route("outer", "/outer")
    config.add_view(lambda request: request.invoke_subrequest(Request.blank("/report")), route_name="outer")
    config.commit()
    assert TestApp(Router(app.registry)).get("/outer").text.endswith("/REPORT 42")
    app.registry["db.engine"].dispose()


def test_a_request_factory_that_is_not_a_class_is_left_alone(tmp_path):
    def factory(environ):
        return Request(environ)

    app = make_app(tmp_path, factory=factory)
    assert app.registry.queryUtility(IRequestFactory) is factory
    assert TestApp(app).get("/report").text.endswith("/REPORT 42")
    app.registry["db.engine"].dispose()
