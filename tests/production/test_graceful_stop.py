"""SIGTERM drains a `pserve production.ini` process (jsonapi_blog/server.py; docs/cluster.rst,
"SIGTERM drains"): requests in flight are answered, `/health` says "draining" meanwhile, and the
process then exits by itself. The cluster proof (cluster/test_cluster.py) shows the same behind
HAProxy; this one runs in `make test`, on PostgreSQL.

The requests are held in flight without timing: the test locks the rows they update
(SELECT ... FOR UPDATE), waits until PostgreSQL shows every one of them waiting for that lock,
sends SIGTERM, and only then lets them go.
"""
from __future__ import annotations

import signal
import threading
import time

from prodtools import Server, call, make_account, production_test_ini
from sqlalchemy import create_engine, select, text

from jsonapi_blog.models import Article

IN_FLIGHT = 4


def wait_until(what: str, predicate, timeout: float = 60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = predicate()
        if result:
            return result
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def drain_ini(tmp_path):
    """production.ini for tests, with a longer grace (5 s) before the listener closes, so that the
    test's own /health call surely finds it still open on a busy machine."""
    ini = production_test_ini(tmp_path)
    text_ = ini.read_text().replace("[server:main]\n", "[server:main]\ndrain_grace = 5\n", 1)
    ini.write_text(text_)
    return ini


def waiting_on_locks(engine) -> int:
    with engine.connect() as connection:
        return connection.execute(text("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                                       "AND datname = current_database()")).scalar_one()


def health(server: Server):
    try:
        return call("GET", server.base + "/health", timeout=5)
    except OSError:
        return None


def test_sigterm_answers_the_requests_in_flight_then_exits(pg_url, db, tmp_path):
    admin, headers = make_account(db, "drain-admin@example.com", admin=True)
    articles = [Article(title=f"before-{i}", body="b", status="published", user=admin) for i in range(IN_FLIGHT)]
    db.add_all(articles)
    db.commit()
    ids = [article.id for article in articles]
    server = Server(drain_ini(tmp_path), pg_url, tmp_path / "server.log")
    engine = create_engine(pg_url)
    answers: dict[int, tuple] = {}

    def patch(article_id: int) -> None:
        body = {"data": {"type": "articles", "id": str(article_id), "attributes": {"title": f"after-{article_id}"}}}
        answers[article_id] = call("PATCH", f"{server.base}/api/articles/{article_id}", body, headers=headers, timeout=60)

    try:
        server.wait_ready()
        threads = [threading.Thread(target=patch, args=(article_id,)) for article_id in ids]
        with engine.connect() as locker:
            transaction = locker.begin()
            locker.execute(select(Article.id).where(Article.id.in_(ids)).with_for_update()).all()
            for thread in threads:
                thread.start()
            wait_until(f"{IN_FLIGHT} requests waiting for the locked rows",
                       lambda: waiting_on_locks(engine) == IN_FLIGHT)
            server.process.send_signal(signal.SIGTERM)
            _status, _h, body = wait_until("/health to say draining", lambda: (h := health(server)) and h[0] == 503 and h)
            assert body == {"status": "draining"}
            # the load balancer's liveness check too (cluster/layout.py checks /health/live)
            assert call("GET", server.base + "/health/live", timeout=5)[:3:2] == (503, {"status": "draining"})
            assert server.process.poll() is None  # still running: requests are in flight
            served = call("GET", f"{server.base}/api/articles/{ids[0]}", timeout=30)  # arriving while draining
            assert served[0] == 200
            transaction.commit()  # let the requests in flight go on
        for thread in threads:
            thread.join(60)
        exit_code = server.process.wait(60)
    finally:
        server.stop()
        engine.dispose()

    assert {article_id: answer[0] for article_id, answer in answers.items()} == dict.fromkeys(ids, 200)
    assert all(answers[i][2]["data"]["attributes"]["title"] == f"after-{i}" for i in ids)
    log = server.log_path.read_text(errors="replace")
    assert exit_code == 0, log
    assert "SIGTERM: draining" in log and "drained: exiting" in log
    db.expire_all()
    assert sorted(db.scalars(select(Article.title).where(Article.id.in_(ids)))) == sorted(f"after-{i}" for i in ids)
