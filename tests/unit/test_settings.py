"""``jsonapi.*`` settings as ``parse_settings`` reads them: minimums, and 0 where it turns a feature off."""
from __future__ import annotations

import pytest
from pyramid.exceptions import ConfigurationError

from jsonapi_pyramid import parse_settings


def test_zero_turns_the_purge_off_and_a_negative_interval_is_refused():
    assert parse_settings({"jsonapi.idempotency_purge_interval_seconds": "0"})["idempotency_purge_interval_seconds"] == 0
    with pytest.raises(ConfigurationError, match="jsonapi.idempotency_purge_interval_seconds must be at least 0"):
        parse_settings({"jsonapi.idempotency_purge_interval_seconds": "-1"})


def test_the_largest_kept_answer_is_at_least_one_byte():
    with pytest.raises(ConfigurationError, match="jsonapi.idempotency_max_stored_bytes must be at least 1"):
        parse_settings({"jsonapi.idempotency_max_stored_bytes": "0"})
