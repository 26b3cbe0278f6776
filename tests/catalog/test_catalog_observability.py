"""Metrics on the catalogue (any model): every type's collection, item and missing item, labelled
by its template, whatever its ids (integers, UUIDs, client-made strings)."""
from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

import catalog
from tests.conftest import JsonApiTestApp


def test_every_type_is_labelled_by_its_templates(database_url, schema_validator):
    app = catalog.main({}, **{"sqlalchemy.url": database_url, "retry.attempts": "1", "jsonapi.metrics": "true"})
    try:
        client = JsonApiTestApp(app, extra_environ={"HTTP_HOST": "example.test", "REMOTE_ADDR": "127.0.0.1"})
        client.validator = schema_validator
        registry = app.registry.jsonapi
        expected = set()
        for type_name, definition in registry.types.items():
            client.get(f"/api/{type_name}", status=200)
            client.get(f"/api/{type_name}/no-such-id-42", status=404)
            expected |= {("GET", f"/api/{type_name}", "200"), ("GET", f"/api/{type_name}/{{id}}", "404")}
            for name in [relationship.name for relationship in definition.relationships][:1]:
                client.get(f"/api/{type_name}/no-such-id-42/relationships/{name}", status=404)
                expected.add(("GET", f"/api/{type_name}/{{id}}/relationships/{{relationship}}", "404"))
        text = client.get("/metrics", status=200).text
        seen = set()
        for family in text_string_to_metric_families(text):
            if family.name == "http_server_request_duration_seconds":
                for sample in family.samples:
                    if sample.name.endswith("_count"):
                        labels = sample.labels
                        assert sample.value == 1, labels
                        seen.add((labels["http_request_method"], labels["http_route"], labels["http_response_status_code"]))
        assert seen == expected
    finally:
        app.registry["db.engine"].dispose()
