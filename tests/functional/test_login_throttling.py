"""Login throttling (CONTRACT section 9): failed ``POST /api/tokens`` counted per e-mail and per
client address in the database; past the limits 429 with ``Retry-After``, even with the right
password; the window slides; a success forgets only its own address's failures for that e-mail;
unknown and known e-mails are answered alike."""
from __future__ import annotations

import datetime as dt

import pytest
from sqlalchemy import func, select

from jsonapi_blog.models import LoginFailure, utcnow
from jsonapi_blog.throttling import LoginThrottle

JSONAPI = "application/vnd.api+json"
WINDOW = dt.timedelta(seconds=300)


def attempt(api, email, password, address="10.0.0.1", status=None):
    document = {"data": {"type": "tokens", "attributes": {"email": email, "password": password}}}
    return api.post_json("/api/tokens", document, headers={"Content-Type": JSONAPI},
                         extra_environ={"REMOTE_ADDR": address}, status=status)


def fail(api, times, email="alice@example.com", address="10.0.0.1"):
    for _ in range(times):
        attempt(api, email, "wrong-password", address, status=401)


def assert_throttled(response):
    assert response.status_int == 429
    assert response.json["errors"][0]["status"] == "429"
    seconds = int(response.headers["Retry-After"])
    assert 1 <= seconds <= WINDOW.total_seconds()
    return seconds


def age_failures(db, by: dt.timedelta):
    """Move every counted failure ``by`` into the past (as if that time had gone by)."""
    for failure in db.scalars(select(LoginFailure)):
        failure.attempted_at -= by
    db.commit()


def test_the_eleventh_attempt_for_an_email_is_429_even_with_the_right_password(api, blog):
    fail(api, 10)
    assert_throttled(attempt(api, "alice@example.com", "alice-password", status=429))
    # from another address too: the e-mail is counted wherever the attempts come from
    assert_throttled(attempt(api, "alice@example.com", "alice-password", address="10.0.0.2", status=429))
    # other e-mails from the same address are not held up by alice's count (limit per address: 100)
    attempt(api, "admin@example.com", "admin-password", status=201)


def test_the_window_slides(api, blog, db):
    fail(api, 5)
    age_failures(db, WINDOW - dt.timedelta(seconds=60))  # the first five are four minutes old
    fail(api, 5)
    seconds = assert_throttled(attempt(api, "alice@example.com", "alice-password", status=429))
    assert 50 <= seconds <= 61  # until the oldest failure leaves the window
    age_failures(db, dt.timedelta(seconds=61))  # the first five left the window, five remain
    fail(api, 5)
    assert_throttled(attempt(api, "alice@example.com", "alice-password", status=429))
    age_failures(db, WINDOW)
    attempt(api, "alice@example.com", "alice-password", status=201)


def test_refused_attempts_are_not_counted_and_old_failures_are_cleaned(api, blog, db):
    fail(api, 10)
    for _ in range(3):
        attempt(api, "alice@example.com", "wrong-password", status=429)
    assert db.scalar(select(func.count()).select_from(LoginFailure)) == 10
    age_failures(db, WINDOW)
    fail(api, 1, email="admin@example.com")  # a failure deletes what left the window
    assert db.scalar(select(func.count()).select_from(LoginFailure)) == 1


def test_unknown_and_known_emails_are_answered_alike(api, blog):
    for email in ("alice@example.com", "nobody@example.com"):
        answers = [attempt(api, email, "wrong-password", status=401) for _ in range(10)]
        assert {a.json["errors"][0]["detail"] for a in answers} == {"Wrong email or password."}
        throttled = attempt(api, email, "whatever-password", status=429)
        assert throttled.json["errors"][0]["detail"].startswith("Too many failed logins")


def test_email_case_does_not_make_another_count(api, blog):
    fail(api, 5, email="alice@example.com")
    fail(api, 5, email="Alice@Example.com ")
    attempt(api, "alice@example.com", "alice-password", status=429)


def test_the_address_limit(api, blog, wsgi_app):
    throttle = wsgi_app.registry["blog.login_throttle"]
    assert throttle == LoginThrottle(10, 100, WINDOW)  # the defaults
    for index in range(100):
        fail(api, 1, email=f"user{index}@example.com", address="10.0.0.9")
    assert_throttled(attempt(api, "admin@example.com", "admin-password", address="10.0.0.9", status=429))
    attempt(api, "admin@example.com", "admin-password", address="10.0.0.10", status=201)


def test_a_success_forgets_only_its_own_address_failures(api, blog, db):
    fail(api, 6, address="10.0.0.1")  # the attacker
    fail(api, 3, address="10.0.0.2")  # alice, mistyping
    attempt(api, "alice@example.com", "alice-password", address="10.0.0.2", status=201)
    assert db.scalar(select(func.count()).select_from(LoginFailure)) == 6
    fail(api, 4, address="10.0.0.1")
    assert_throttled(attempt(api, "alice@example.com", "alice-password", address="10.0.0.2", status=429))


@pytest.mark.parametrize("settings", [{"blog.login_attempts": "0"}, {"blog.login_window_seconds": "soon"},
                                      {"blog.login_address_attempts": "-1"}])
def test_bad_settings_fail_at_start_up(settings):
    from pyramid.exceptions import ConfigurationError

    with pytest.raises(ConfigurationError):
        LoginThrottle.from_settings(settings)


def test_settings_are_read():
    throttle = LoginThrottle.from_settings({"blog.login_attempts": "3", "blog.login_address_attempts": "7",
                                            "blog.login_window_seconds": "60"})
    assert throttle == LoginThrottle(3, 7, dt.timedelta(seconds=60))
    assert utcnow() - throttle.window < utcnow()


def test_the_openapi_document_lists_the_429_with_retry_after(api, blog):
    """The 429 the throttle answers (above) is documented on POST /api/tokens, with the header it
    carries and the JSON:API error document; the statuses derived for the operation stay."""
    operation = api.get("/api/openapi.json").json["paths"]["/api/tokens"]["post"]
    throttled = operation["responses"]["429"]
    assert "Retry-After" in throttled["headers"]
    assert throttled["content"][JSONAPI]["schema"] == {"$ref": "#/components/schemas/ErrorDocument"}
    assert {"201", "401", "422"} <= set(operation["responses"])
    fail(api, 10)
    response = attempt(api, "alice@example.com", "alice-password", status=429)
    assert set(throttled["headers"]) <= set(response.headers)


def test_an_attempt_too_busy_to_check_is_503_and_not_counted(api, blog, db, monkeypatch):
    from jsonapi_blog import passwords

    turns = passwords._Turns(at_once=1, max_wait=0)
    turns._duration = 1.0
    monkeypatch.setattr(passwords, "_turns", turns)
    with turns.turn():  # another request is hashing, and no one may wait
        response = attempt(api, "alice@example.com", "wrong-password", status=503)
    assert response.headers["Retry-After"] == "1"
    assert db.scalar(select(func.count()).select_from(LoginFailure)) == 0
    fail(api, 10)  # the limit is whole
    attempt(api, "alice@example.com", "alice-password", status=429)


def test_retry_after_never_exceeds_the_window():
    """A failure another process counted just after this request read the clock is a moment
    younger than ``now``: Retry-After is still at most the window (once 3601 for 3600)."""
    from jsonapi_blog.throttling import _seconds_left

    now = utcnow()
    window = dt.timedelta(seconds=3600)
    assert _seconds_left(now + dt.timedelta(milliseconds=300), window, now) == 3600
    assert _seconds_left(now - dt.timedelta(seconds=3599, milliseconds=500), window, now) == 1
    assert _seconds_left(now - dt.timedelta(seconds=4000), window, now) == 1
