"""CORS turned off (the catalogue sets no ``jsonapi.cors_origins``): a browser's preflight is 403
saying why, not 405 "OPTIONS is not allowed here"; an OPTIONS that is no preflight is still 405."""
from __future__ import annotations

CORS_HEADERS = ("Access-Control-Allow-Origin", "Access-Control-Allow-Methods", "Access-Control-Allow-Headers")


def test_a_preflight_without_cors_is_403_naming_the_setting(api, db):
    preflight = {"Origin": "http://localhost:8000", "Access-Control-Request-Method": "POST"}
    for url in ("/api/people", "/api/openapi.json"):
        response = api.options(url, headers=preflight, status=403)
        error = response.json["errors"][0]
        assert error["source"] == {"header": "Origin"}
        assert error["detail"] == ("The origin http://localhost:8000 may not call this API from a browser page: "
                                   "CORS is off (jsonapi.cors_origins is empty).")
        assert not any(name in response.headers for name in CORS_HEADERS)
    assert api.options("/api/people", status=405).headers["Allow"]  # not a preflight
    api.options("/api/people", headers={"Access-Control-Request-Method": "POST"}, status=405)  # no Origin
