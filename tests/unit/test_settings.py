"""``jsonapi.*`` settings as ``parse_settings`` reads them: minimums, 0 where it turns a feature off,
and a warning for a name that is no setting."""
from __future__ import annotations

import sys
import warnings

import pytest
from pyramid.config import Configurator
from pyramid.exceptions import ConfigurationError

from jsonapi_pyramid import DEFAULTS, parse_settings


def test_zero_turns_the_purge_off_and_a_negative_interval_is_refused():
    assert parse_settings({"jsonapi.idempotency_purge_interval_seconds": "0"})["idempotency_purge_interval_seconds"] == 0
    with pytest.raises(ConfigurationError, match="jsonapi.idempotency_purge_interval_seconds must be at least 0"):
        parse_settings({"jsonapi.idempotency_purge_interval_seconds": "-1"})


def test_the_largest_kept_answer_is_at_least_one_byte():
    with pytest.raises(ConfigurationError, match="jsonapi.idempotency_max_stored_bytes must be at least 1"):
        parse_settings({"jsonapi.idempotency_max_stored_bytes": "0"})


def test_a_misspelt_setting_warns_at_start_up_with_the_one_meant():
    """``jsonapi.default_pagesize = 5`` was silently ignored (issue 33, finding 8b)."""
    config = Configurator(settings={"jsonapi.default_pagesize": "5"})
    with pytest.warns(UserWarning, match=r"jsonapi\.default_pagesize is no setting of jsonapi_pyramid, so it is ignored "
                                         r"\(did you mean 'jsonapi\.default_page_size'\?\)"):
        config.include("jsonapi_pyramid")
    config.commit()  # the registry is made by a configuration action
    assert config.registry.jsonapi.settings["default_page_size"] == 20
    with pytest.warns(UserWarning, match=r"jsonapi\.zzz is no setting of jsonapi_pyramid, so it is ignored; "
                                         r"docs/settings\.rst lists them"):
        parse_settings({"jsonapi.zzz": "1"})


def test_every_known_setting_starts_without_a_warning():
    """The settings of DEFAULTS and the two of deadlines.py; other namespaces are not ours."""
    known = {f"jsonapi.{key}": value for key, value in DEFAULTS.items() if isinstance(value, (bool, int, str))}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        parse_settings({**known, "jsonapi.default_include_size": "10", "jsonapi.cursor_secret": "s", "jsonapi.cors_origins": "https://example.com",
                        "jsonapi.statement_timeout_ms": "5000", "jsonapi.pool_timeout_seconds": "3",
                        "jsonapi_blog.anything": "x", "sqlalchemy.url": "sqlite://"})


def test_a_small_max_page_size_names_the_settings_that_conflict_in_the_users_terms():
    """``jsonapi.max_page_size = 10`` alone once failed on ``jsonapi.default_include_size``, a
    setting the user never wrote (issue 33, finding 8c)."""
    with pytest.raises(ConfigurationError) as raised:
        parse_settings({"jsonapi.max_page_size": "10"})
    message = str(raised.value)
    assert "default_include_size" not in message
    assert message.startswith("jsonapi.max_page_size = 10 is below jsonapi.default_page_size = 20 (its default)")
    assert "set jsonapi.default_page_size = 10 or less too, or raise jsonapi.max_page_size" in message
    with pytest.raises(ConfigurationError, match=r"^jsonapi.max_page_size = 10 is below jsonapi.default_page_size = 15: "):
        parse_settings({"jsonapi.max_page_size": "10", "jsonapi.default_page_size": "15"})
    assert parse_settings({"jsonapi.max_page_size": "10", "jsonapi.default_page_size": "10"})["default_include_size"] == 10


def test_an_include_size_over_its_maximum_names_both_values():
    with pytest.raises(ConfigurationError, match=r"^jsonapi.default_include_size = 50 is above jsonapi.max_include_size = 30 "
                                                 r"\(its maximum\); lower it or raise jsonapi.max_include_size"):
        parse_settings({"jsonapi.default_include_size": "50", "jsonapi.max_include_size": "30"})
    with pytest.raises(ConfigurationError, match=r"^jsonapi.default_include_size = 50 is above jsonapi.max_page_size = 40 "):
        parse_settings({"jsonapi.default_include_size": "50", "jsonapi.max_page_size": "40",
                        "jsonapi.default_page_size": "10"})
    # unset, it follows the page size within the include maximum: never an error of its own
    assert parse_settings({"jsonapi.max_include_size": "5"})["default_include_size"] == 5


def test_a_database_driver_that_is_not_installed_says_which_extra_installs_it(monkeypatch):
    """A PostgreSQL ``DATABASE_URL`` in a project installed without the driver failed with a bare
    ``No module named 'psycopg'`` (issue 33, finding 8d)."""
    from jsonapi_pyramid.db import get_engine

    monkeypatch.setitem(sys.modules, "psycopg", None)  # as if it were not installed
    with pytest.raises(ConfigurationError) as raised:
        get_engine({"sqlalchemy.url": "postgresql+psycopg://user@db.example/app"})
    assert str(raised.value) == (
        "sqlalchemy.url names the database driver postgresql+psycopg, whose module psycopg is not installed: "
        "pip install 'jsonapi_pyramid[postgresql]' (in a project made by jsonapi-pyramid-new: "
        "pip install -e '.[postgresql]')")
