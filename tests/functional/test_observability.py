"""Metrics and traces (CONTRACT.md section 11): ``GET /metrics`` and its counts after known
requests, route templates instead of URLs, the allow-list, retries and throttled logins, the
pool gauge; spans per request and per SQL statement (the SDK's in-memory exporter), the caller's
``traceparent`` continued, the trace id in the access line."""
from __future__ import annotations

import contextlib
import logging

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode
from prometheus_client.parser import text_string_to_metric_families
from pyramid.config import Configurator
from pyramid.exceptions import ConfigurationError
from sqlalchemy import event, text
from sqlalchemy.exc import OperationalError
from webob import Request

from jsonapi_blog import main
from jsonapi_pyramid.operations import item
from tests.conftest import APP_SETTINGS, JsonApiTestApp

JSONAPI = "application/vnd.api+json"
LOCAL = {"HTTP_HOST": "example.test", "REMOTE_ADDR": "127.0.0.1"}
DURATION = "http_server_request_duration_seconds"
STATEMENTS = "jsonapi_sql_statements_per_request"


@pytest.fixture(scope="module")
def exporter():
    return InMemorySpanExporter()


@pytest.fixture(scope="module")
def observed_app(database_url, exporter):
    """The reference service with metrics on and its spans in ``exporter``."""
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    app = main({}, **{**APP_SETTINGS, "sqlalchemy.url": database_url, "jsonapi.metrics": "true",
                      "jsonapi.tracer_provider": provider})
    yield app
    app.registry["db.engine"].dispose()


@pytest.fixture
def client(observed_app, schema_validator, exporter, db):
    exporter.clear()
    app = JsonApiTestApp(observed_app, extra_environ=LOCAL)
    app.validator = schema_validator
    return app


def scrape(client) -> dict:
    """``{(sample name, labels as sorted tuples): value}`` of ``GET /metrics``."""
    response = client.get("/metrics")
    samples = {}
    for family in text_string_to_metric_families(response.text):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return samples


def labels(method, route, status):
    return (("http_request_method", method), ("http_response_status_code", str(status)), ("http_route", route))


def delta(before, after, name, *label_values):
    key = (name, labels(*label_values) if label_values else ())
    return after.get(key, 0) - before.get(key, 0)


@contextlib.contextmanager
def counted(engine):
    """The statements ``engine`` runs inside the block (as ``tests.conftest.count_statements`` counts)."""
    statements = []

    def record(conn, cursor, statement, parameters, context, executemany):
        if not statement.lstrip().upper().startswith(("SAVEPOINT", "RELEASE", "ROLLBACK", "COMMIT", "BEGIN")):
            statements.append(statement)

    event.listen(engine, "before_cursor_execute", record)
    try:
        yield statements
    finally:
        event.remove(engine, "before_cursor_execute", record)


# -- GET /metrics ------------------------------------------------------------------------------

def test_requests_are_counted_under_their_route_template(client, blog, auth_headers):
    hello, bob = blog["hello"], blog["bob"]
    before = scrape(client)
    client.get("/api/articles", status=200)
    client.get(f"/api/articles/{hello.id}", status=200)
    client.get(f"/api/articles/{hello.id}", status=200)
    client.get("/api/articles/999999", status=404)  # a missing id: its endpoint's template
    client.get(f"/api/articles/{hello.id}/relationships/tags", status=200)
    client.get("/api/articles/999999/relationships/tags", status=404)
    client.get(f"/api/articles/{hello.id}/author", status=200)
    client.get("/api/articles?nonsense=1", status=400)  # answered by a tween, before traversal
    client.get("/api/no-such-type/1", status=404)
    client.get("/no/such/path", status=404)
    client.post(f"/api/users/{bob.id}/activate", headers=auth_headers(blog["admin"]), status=200)
    after = scrape(client)
    expected = {
        ("GET", "/api/articles", 200): 1,
        ("GET", "/api/articles/{id}", 200): 2,
        ("GET", "/api/articles/{id}", 404): 1,
        ("GET", "/api/articles/{id}/relationships/{relationship}", 200): 1,
        ("GET", "/api/articles/{id}/relationships/{relationship}", 404): 1,
        ("GET", "/api/articles/{id}/{relationship}", 200): 1,
        ("GET", "/api/articles", 400): 1,
        ("GET", "unmatched", 404): 2,
        ("POST", "/api/users/{id}/activate", 200): 1,
    }
    for key, count in expected.items():
        assert delta(before, after, f"{DURATION}_count", *key) == count, key
        assert delta(before, after, f"{STATEMENTS}_count", *key) == count, key
    # every series of the two histograms is one of those (or the scrapes'), never a raw URL
    routes = {dict(k[1])["http_route"] for k in after if k[0].startswith((DURATION, STATEMENTS))}
    assert routes <= {route for _, route, _ in expected} | {"/metrics"}, routes


def test_statements_per_request_are_the_statements_it_ran(client, blog, observed_app):
    hello = blog["hello"]
    before = scrape(client)
    with counted(observed_app.registry["db.engine"]) as statements:
        client.get(f"/api/articles/{hello.id}?include=author,comments", status=200)
    after = scrape(client)
    assert statements
    assert delta(before, after, f"{STATEMENTS}_sum", "GET", "/api/articles/{id}", 200) == len(statements)
    assert delta(before, after, f"{DURATION}_sum", "GET", "/api/articles/{id}", 200) > 0


def test_metrics_are_text_whatever_the_accept(client):
    for accept in (JSONAPI, "application/json", "*/*", f"{JSONAPI}; charset=utf-8"):
        response = client.get("/metrics", headers={"Accept": accept}, status=200)
        assert response.headers["Content-Type"].startswith("text/plain"), accept
        assert "# TYPE http_server_request_duration_seconds histogram" in response.text
        assert "# TYPE jsonapi_sql_statements_per_request histogram" in response.text
        assert "# TYPE jsonapi_retries_total counter" in response.text
        assert "# TYPE jsonapi_login_throttled_total counter" in response.text
    assert client.get("/metrics?format=json", status=200).headers["Content-Type"].startswith("text/plain")


def test_only_allowed_addresses_get_the_metrics(client):
    for address in ("10.0.0.7", "192.168.1.1", "2001:db8::1", ""):
        client.get("/metrics", extra_environ={"REMOTE_ADDR": address}, status=404)
    client.get("/metrics", extra_environ={"REMOTE_ADDR": "::1"}, status=200)


def test_the_allow_list_takes_networks_and_refuses_nonsense(database_url, schema_validator):
    app = main({}, **{**APP_SETTINGS, "sqlalchemy.url": database_url, "jsonapi.metrics": "true",
                      "jsonapi.metrics_allow": "10.0.0.0/8 192.0.2.1"})
    try:
        client = JsonApiTestApp(app, extra_environ={"HTTP_HOST": "example.test"})
        client.validator = schema_validator
        client.get("/metrics", extra_environ={"REMOTE_ADDR": "10.20.30.40"}, status=200)
        client.get("/metrics", extra_environ={"REMOTE_ADDR": "192.0.2.1"}, status=200)
        client.get("/metrics", extra_environ={"REMOTE_ADDR": "127.0.0.1"}, status=404)
    finally:
        app.registry["db.engine"].dispose()
    with pytest.raises(ConfigurationError, match="metrics_allow"):
        main({}, **{**APP_SETTINGS, "sqlalchemy.url": database_url, "jsonapi.metrics": "true",
                    "jsonapi.metrics_allow": "127.0.0.1 not-an-address"})


def test_nothing_is_added_when_nothing_asks(database_url, monkeypatch, caplog, schema_validator):
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", raising=False)
    app = main({}, **{**APP_SETTINGS, "sqlalchemy.url": database_url})
    try:
        assert app.registry.get("jsonapi.observability") is None
        client = JsonApiTestApp(app, extra_environ=LOCAL)
        client.validator = schema_validator
        client.get("/metrics", status=404)
        with caplog.at_level(logging.INFO, logger="jsonapi_pyramid.access"):
            client.get("/api/articles", status=200)
        assert "trace_id" not in caplog.records[-1].getMessage()
    finally:
        app.registry["db.engine"].dispose()


def test_the_sdk_variables_turn_traces_on_alone(database_url, monkeypatch):
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")  # nothing listens: never reached here
    app = main({}, **{**APP_SETTINGS, "sqlalchemy.url": database_url})
    observability = app.registry["jsonapi.observability"]
    try:
        assert observability.metrics is None and observability.tracer is not None
        monkeypatch.setenv("OTEL_SDK_DISABLED", "true")
        off = main({}, **{**APP_SETTINGS, "sqlalchemy.url": database_url})
        assert off.registry.get("jsonapi.observability") is None
        off.registry["db.engine"].dispose()
    finally:
        observability.provider.shutdown()
        app.registry["db.engine"].dispose()


def test_cardinality_stays_bounded_over_ten_thousand_ids(client, blog):
    """10,000 distinct ids on four endpoints add no series: the ids are answered before the
    database (400 for an unknown parameter) but labelled like any request; some reach it (404)."""
    hello = blog["hello"]
    before = scrape(client)
    series_before = {k for k in before if k[0] == f"{DURATION}_count"}
    paths = ("/api/articles/{}?x=1", "/api/articles/{}/author?x=1", "/api/articles/{}/relationships/tags?x=1",
             "/api/comments/{}?x=1")
    for number in range(10_000):
        client.get(paths[number % 4].format(1_000_000 + number), status=400)
    for number in range(50):
        client.get(f"/api/articles/{2_000_000 + number}", status=404)
    client.get(f"/api/articles/{hello.id}", status=200)
    after = scrape(client)
    series = {k for k in after if k[0] == f"{DURATION}_count"}
    assert len(series - series_before) <= 7, series - series_before
    assert not [k for k in series if any(str(n) in dict(k[1])["http_route"] for n in (1_000_000, 2_000_000))]
    assert delta(before, after, f"{DURATION}_count", "GET", "/api/articles/{id}", 400) == 2500
    assert delta(before, after, f"{DURATION}_count", "GET", "/api/articles/{id}", 404) == 50


def test_a_method_outside_http_s_list_is_one_label(client, observed_app):
    def others(samples):
        return sum(v for k, v in samples.items() if k[0] == f"{DURATION}_count" and ("http_request_method", "_OTHER") in k[1])

    before = scrape(client)
    for method in ("BREW", "PROPFIND", "X-ANYTHING"):  # WebTest's lint refuses them: straight to the app
        Request.blank("/api/articles", method=method, environ=dict(LOCAL)).get_response(observed_app)
    assert others(scrape(client)) - others(before) == 3


def test_throttled_logins_are_counted(client, blog):
    before = scrape(client)
    for _ in range(10):
        client.post_json("/api/tokens", {"data": {"type": "tokens", "attributes": {"email": "alice@example.com",
                         "password": "wrong"}}}, headers={"Content-Type": JSONAPI}, status=401)
    for _ in range(2):
        client.post_json("/api/tokens", {"data": {"type": "tokens", "attributes": {"email": "alice@example.com",
                         "password": "alice-password"}}}, headers={"Content-Type": JSONAPI}, status=429)
    after = scrape(client)
    assert delta(before, after, "jsonapi_login_throttled_total") == 2
    assert delta(before, after, f"{DURATION}_count", "POST", "/api/tokens", 429) == 2


def test_the_pool_gauge_is_read_at_scrape_time(client, observed_app):
    def used(samples):
        return samples[("db_client_connection_count", (("db_client_connection_pool_name", "primary"),
                                                       ("db_client_connection_state", "used")))]

    idle = used(scrape(client))
    with observed_app.registry["db.engine"].connect():
        assert used(scrape(client)) == idle + 1
    assert used(scrape(client)) == idle


# -- retries (a transient error on the first attempt) -----------------------------------------

class _SerializationFailure(Exception):
    sqlstate = "40001"


def test_a_retried_request_is_one_request_and_its_retries_are_counted(database_url, schema_validator):
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    attempts = []

    def flaky(context, request):
        attempts.append(request.environ.get("retry.attempt", 0))
        if len(attempts) == 1:
            raise OperationalError("SELECT 1", {}, _SerializationFailure("could not serialize access"))
        return item(request, context.entity)

    settings = {**APP_SETTINGS, "sqlalchemy.url": database_url, "retry.attempts": "3", "jsonapi.metrics": "true",
                "jsonapi.tracer_provider": provider}
    with Configurator(settings=settings) as config:
        config.include("jsonapi_pyramid.db")
        config.include("jsonapi_pyramid")
        config.include("jsonapi_blog.passwords")
        config.include("jsonapi_blog.resources")
        config.include("jsonapi_blog.security")
        from jsonapi_blog.models import Tag

        config.add_jsonapi_operation(Tag, "touch", flaky, on="item", request_method="GET",
                                     permission="__no_permission_required__")
    app = config.make_wsgi_app()
    try:
        engine = app.registry["db.engine"]
        with engine.begin() as connection:
            connection.execute(text("INSERT INTO tags (name) VALUES ('observed')"))
            tag_id = connection.execute(text("SELECT id FROM tags WHERE name = 'observed'")).scalar()
        client = JsonApiTestApp(app, extra_environ=LOCAL)
        client.validator = schema_validator
        before = scrape(client)
        client.get(f"/api/tags/{tag_id}/touch", status=200)
        after = scrape(client)
        assert attempts == [0, 1]
        assert delta(before, after, "jsonapi_retries_total") == 1
        assert delta(before, after, f"{DURATION}_count", "GET", "/api/tags/{id}/touch", 200) == 1
        assert delta(before, after, f"{DURATION}_count", "GET", "/api/tags/{id}/touch", 503) == 0
        servers = [s for s in exporter.get_finished_spans() if s.kind is SpanKind.SERVER and "touch" in s.name]
        assert [s.attributes["http.response.status_code"] for s in servers] == [200]
    finally:
        with app.registry["db.engine"].begin() as connection:
            connection.execute(text("DELETE FROM tags WHERE name = 'observed'"))
        app.registry["db.engine"].dispose()


# -- traces ------------------------------------------------------------------------------------

def test_a_request_is_a_span_named_after_its_route_and_each_statement_a_child(client, blog, exporter, observed_app, backend):
    hello = blog["hello"]
    exporter.clear()
    with counted(observed_app.registry["db.engine"]) as statements:
        client.get(f"/api/articles/{hello.id}?include=author", headers={"User-Agent": "probe/1"}, status=200)
    spans = exporter.get_finished_spans()
    [server] = [s for s in spans if s.kind is SpanKind.SERVER]
    assert server.name == "GET /api/articles/{id}"
    assert server.parent is None
    attributes = dict(server.attributes)
    assert attributes["http.request.method"] == "GET"
    assert attributes["http.route"] == "/api/articles/{id}"
    assert attributes["http.response.status_code"] == 200
    assert attributes["url.path"] == f"/api/articles/{hello.id}"
    assert attributes["url.query"] == "include=author"
    assert attributes["url.scheme"] == "http"
    assert attributes["server.address"] == "example.test"
    assert attributes["client.address"] == "127.0.0.1"
    assert attributes["user_agent.original"] == "probe/1"
    children = [s for s in spans if s.kind is SpanKind.CLIENT]
    assert len(children) == len(statements) > 0
    for child in children:
        assert child.parent.span_id == server.context.span_id
        assert child.context.trace_id == server.context.trace_id
        assert child.attributes["db.system.name"] == backend
        assert child.attributes["db.query.text"].lstrip().upper().startswith(child.name)
        assert server.start_time <= child.start_time <= child.end_time <= server.end_time
    assert {c.attributes["db.query.text"] for c in children} == set(statements)


def test_a_missing_id_and_an_unknown_path(client, exporter):
    exporter.clear()
    client.get("/api/articles/999999", status=404)
    client.get("/no/such/path", status=404)
    names = [(s.name, s.attributes.get("http.route")) for s in exporter.get_finished_spans() if s.kind is SpanKind.SERVER]
    assert names == [("GET /api/articles/{id}", "/api/articles/{id}"), ("GET", None)]


def test_the_callers_traceparent_is_continued_and_logged(client, exporter, caplog):
    trace_id, parent_id = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
    exporter.clear()
    with caplog.at_level(logging.INFO, logger="jsonapi_pyramid.access"):
        response = client.get("/api/articles", headers={"traceparent": f"00-{trace_id}-{parent_id}-01"}, status=200)
    [server] = [s for s in exporter.get_finished_spans() if s.kind is SpanKind.SERVER]
    assert format(server.context.trace_id, "032x") == trace_id
    assert format(server.parent.span_id, "016x") == parent_id
    assert server.parent.is_remote
    [line] = [r.getMessage() for r in caplog.records if r.name == "jsonapi_pyramid.access"]
    assert f"trace_id={trace_id}" in line and f"request_id={response.headers['X-Request-Id']}" in line


def test_without_traceparent_a_new_trace_is_logged(client, exporter, caplog):
    exporter.clear()
    with caplog.at_level(logging.INFO, logger="jsonapi_pyramid.access"):
        client.get("/api/articles", status=200)
    [server] = [s for s in exporter.get_finished_spans() if s.kind is SpanKind.SERVER]
    [line] = [r.getMessage() for r in caplog.records if r.name == "jsonapi_pyramid.access"]
    assert f"trace_id={format(server.context.trace_id, '032x')}" in line


def test_a_server_error_marks_the_span(database_url, schema_validator):
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))

    def broken(context, request):
        raise RuntimeError("boom")

    settings = {**APP_SETTINGS, "sqlalchemy.url": database_url, "jsonapi.tracer_provider": provider}
    with Configurator(settings=settings) as config:
        config.include("jsonapi_pyramid.db")
        config.include("jsonapi_pyramid")
        config.include("jsonapi_blog.passwords")
        config.include("jsonapi_blog.resources")
        config.include("jsonapi_blog.security")
        from jsonapi_blog.models import Tag

        config.add_jsonapi_operation(Tag, "break", broken, on="collection", request_method="GET",
                                     permission="__no_permission_required__")
    app = config.make_wsgi_app()
    try:
        client = JsonApiTestApp(app, extra_environ=LOCAL)
        client.validator = schema_validator
        client.get("/api/tags/break", status=500)
        [server] = [s for s in exporter.get_finished_spans() if s.kind is SpanKind.SERVER]
        assert server.name == "GET /api/tags/break"
        assert server.status.status_code is StatusCode.ERROR
        assert server.attributes["error.type"] == "RuntimeError"
        assert server.attributes["http.response.status_code"] == 500
    finally:
        app.registry["db.engine"].dispose()
