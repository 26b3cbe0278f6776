"""The request class, made once: the application's request properties and methods in one class.

Pyramid applies ``config.add_request_method`` to every request it makes
(``apply_request_extensions``): each method is bound and set on the instance, and for the
properties (``reify=True`` or ``property=True``: the library's ``dbsession``, ``dbconnection``,
``request_id``, ``jsonapi_body``, pyramid_tm's ``tm``, the application's own) a new class is
created for that one request (``InstancePropertyHelper.apply_properties``: ``type(...)``), which the
cycle collector then has to free. About 15 microseconds and a dozen objects of garbage per
request, whatever the request (bench/README.md, "The request class").

Once the configuration is committed (the last action but ``jsonapi.gc_freeze``'s), ``bake``
makes one subclass of the request factory's class holding those properties and methods, and
registers it as the request factory: a request made by the router (or by ``pyramid.scripting``,
``pyramid.paster.bootstrap``, pyramid_retry's attempts) is an instance of it, and nothing is
applied to it. A request made elsewhere (``Request.blank(...)`` given to ``invoke_subrequest`` or
to ``prepare``) still gets every extension as Pyramid would apply it: the extensions Pyramid
reads keep one method of the library's, ``_ExtendForeign``, which does that for a request that is
not an instance of the class. Nothing changes for the application: the same names, the same
reified values, ``request.set_property`` as before.

Left as they are: a request factory that is not a class (a function), and an application whose
request extensions have no property (no class would be made per request anyway).
"""
from __future__ import annotations

from typing import Any

from pyramid.interfaces import IRequestExtensions, IRequestFactory
from pyramid.request import Request, apply_request_extensions

__all__ = ["bake"]

#: the name Pyramid sets on each request for ``_ExtendForeign`` (None on a request of the baked class)
_MARK = "_jsonapi_request_class"


class _Extensions:
    """What Pyramid's router and ``prepare`` apply to each request once the class is baked: no
    property, one method (``_ExtendForeign``). Shaped as Pyramid's own (``descriptors``,
    ``methods``), so a later ``add_request_method`` (a second commit) adds to it as Pyramid would."""

    def __init__(self, foreign: _ExtendForeign) -> None:
        self.descriptors: dict[str, Any] = {}
        self.methods: dict[str, Any] = {_MARK: foreign}


class _ExtendForeign:
    """Pyramid binds each request method with ``method.__get__(request, type(request))``: this one
    applies the application's extensions to a request that is not of the baked class, and binds
    to nothing (``request._jsonapi_request_class`` is None)."""

    def __init__(self, baked: type, original: Any) -> None:
        self.baked, self.original = baked, original

    def __get__(self, request: Any, owner: Any = None) -> None:
        if request is not None and not isinstance(request, self.baked):
            apply_request_extensions(request, extensions=self.original)


def bake(registry: Any) -> None:
    """Register one request class with the application's request extensions (see the module)."""
    extensions = registry.queryUtility(IRequestExtensions)
    factory = registry.queryUtility(IRequestFactory, default=Request)
    if extensions is None or not extensions.descriptors or not isinstance(factory, type):
        return
    attributes: dict[str, Any] = {"__module__": factory.__module__, **extensions.methods, **extensions.descriptors}
    baked = type(factory.__name__, (factory,), attributes)
    for name in ("__implemented__", "__provides__"):  # as Pyramid's per-request class: its parent's interfaces
        if hasattr(factory, name):
            setattr(baked, name, getattr(factory, name))
    registry.registerUtility(baked, IRequestFactory)
    registry.registerUtility(_Extensions(_ExtendForeign(baked, extensions)), IRequestExtensions)
