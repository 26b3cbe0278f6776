"""The request properties of the library and its add-ons live on one request class made at
start-up, not on a class Pyramid makes for every request."""
from __future__ import annotations

import webtest
from pyramid.config import Configurator
from pyramid.response import Response
from pyramid.security import NO_PERMISSION_REQUIRED
from pyramid.util import InstancePropertyHelper

from jsonapi_pyramid.traversal import Root


def test_one_request_class_carries_every_property(tmp_path, monkeypatch):
    classes, made = [], []
    original = InstancePropertyHelper.apply_properties.__func__

    def counting(cls, target, properties):
        if properties:
            made.append(target)
        return original(cls, target, properties)

    monkeypatch.setattr(InstancePropertyHelper, "apply_properties", classmethod(counting))

    def view(request):
        classes.append(type(request))
        request.dbsession.connection()  # the library's property, reified on the instance
        return Response(f"{request.request_id} {request.tm is not None} {request.shout()}")

    config = Configurator(settings={"sqlalchemy.url": f"sqlite:///{tmp_path / 'app.sqlite'}"})
    config.include("jsonapi_pyramid.db")
    config.include("jsonapi_pyramid")
    config.add_request_method(lambda request: "hi", "shout")  # a method: still bound per request
    config.add_view(view, context=Root, name="probe", permission=NO_PERMISSION_REQUIRED)
    app = webtest.TestApp(config.make_wsgi_app())
    first = app.get("/probe", headers={"X-Request-Id": "abc"}).text
    second = app.post("/probe").text
    assert first == "abc True hi" and second.endswith(" True hi")
    assert classes[0] is classes[1]  # one class for every request ...
    assert {"dbsession", "tm", "request_id"} <= set(vars(classes[0]))  # ... holding the properties
    assert made == []  # and Pyramid never built one per request
