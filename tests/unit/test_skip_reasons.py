"""The skip reason of a PostgreSQL-only test's SQLite variant says what is really missing: it read
"needs PostgreSQL" while the [postgresql] variant ran beside it (issue 33, finding 8h)."""
from __future__ import annotations

from tests.conftest import postgresql_only


def test_with_postgresql_in_the_run_the_reason_says_the_other_variant_runs_it():
    reason = postgresql_only("several server processes on one database", ["sqlite", "postgresql"])
    assert reason == ("SQLite variant: several server processes on one database needs PostgreSQL, which this run's "
                      "[postgresql] variant uses")


def test_without_postgresql_the_reason_says_how_to_get_one():
    reason = postgresql_only("several server processes on one database", ["sqlite"])
    assert reason.startswith("needs PostgreSQL (several server processes on one database), and this run has none")
    assert "TEST_DATABASE_URL" in reason
