"""A waitress runner whose ``listen`` may name ``%(http_port)s``, defaulting to 6543.

PasteDeploy lets a file's ``[DEFAULT]`` win over ``pserve ... http_port=NNNN``, so the port cannot
have a default in the ini itself. The ini escapes the placeholder (``%%(http_port)s``); this
runner fills it from the command line's variables, or with 6543.
"""
from __future__ import annotations

from waitress import serve_paste

DEFAULT_PORT = "6543"


def serve(app, global_conf, **settings):
    listen = settings.get("listen")
    if listen and "%(" in listen:
        settings["listen"] = listen % {"http_port": global_conf.get("http_port", DEFAULT_PORT)}
    return serve_paste(app, global_conf, **settings)
