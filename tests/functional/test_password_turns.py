"""Password hashing does not take every core and thread (``jsonapi_blog.passwords``): one hash at
a time per process; a request waits for its turn only as long as ``blog.password_hash_max_wait``
allows (the requests ahead times the recent duration of a hash), else 503 with ``Retry-After``."""
from __future__ import annotations

import threading
import time

import pytest
from pyramid.config import Configurator
from pyramid.exceptions import ConfigurationError

from jsonapi_blog import passwords
from jsonapi_pyramid.errors import ServiceUnavailable


class SlowHasher:
    """Stands in for argon2: each hash waits for ``release``; records how many ran at once."""

    def __init__(self):
        self.release = threading.Event()
        self.running = self.most = 0
        self._lock = threading.Lock()

    def hash(self, password):
        with self._lock:
            self.running += 1
            self.most = max(self.most, self.running)
        self.release.wait(10)
        time.sleep(0.01)
        with self._lock:
            self.running -= 1
        return "hashed"


def test_one_hash_at_a_time_and_a_bounded_queue(monkeypatch):
    passwords.configure(1, 64, at_once=1, max_wait=0.5)
    passwords._turns._duration = 0.2  # a hash has taken 0.2 s lately: two may wait (0.4 s), not three
    hasher = SlowHasher()
    monkeypatch.setattr(passwords, "_hasher", hasher)
    outcomes: list = []

    def sign_up():
        try:
            outcomes.append(passwords.hash_password("password-123"))
        except ServiceUnavailable as error:
            outcomes.append(error)

    threads = [threading.Thread(target=sign_up) for _ in range(5)]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + 5
    while len(outcomes) < 2 and time.monotonic() < deadline:  # the two that would wait too long, at once
        time.sleep(0.01)
    refused = [outcome for outcome in outcomes if isinstance(outcome, ServiceUnavailable)]
    assert len(refused) == 2 and hasher.running == 1
    hasher.release.set()
    for thread in threads:
        thread.join(10)
    assert outcomes.count("hashed") == 3 and hasher.most == 1
    assert refused[0].status == 503 and refused[0].headers == {"Retry-After": "1"}


@pytest.mark.parametrize("settings", [{"blog.password_hashes_at_once": "0"}, {"blog.password_hash_max_wait": "-1"},
                                      {"blog.password_hash_max_wait": "soon"}])
def test_bad_settings_fail_at_start_up(settings):
    with pytest.raises(ConfigurationError):
        Configurator(settings=settings).include("jsonapi_blog.passwords")


def test_cheap_hashes_never_refuse():
    """With hashes of a millisecond (the tests' parameters) hundreds may wait: no 503."""
    passwords.configure(1, 64, at_once=1, max_wait=0.5)
    outcomes: list = []
    threads = [threading.Thread(target=lambda: outcomes.append(passwords.hash_password("password-123")))
               for _ in range(50)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert len(outcomes) == 50
