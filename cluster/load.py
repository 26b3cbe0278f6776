"""Load for the cluster proofs (cluster/test_cluster.py): writers and readers through HAProxy
while the primary changes (a crash or a planned switchover), and the judgement of their answers:
which statuses, how long the 503 window, and whether every acknowledged write is there once."""
from __future__ import annotations

import collections
import itertools
import re
import threading
import time

import ctl
from prodtools import call
from sqlalchemy import text

API = ctl.URL + "/api"
WRITERS, READERS = 4, 2
#: production.ini's pool_timeout (10 s) + connect_timeout (3 s): no answer may take longer.
SLOWEST_ANSWER = 13.0


def article(title: str) -> dict:
    return {"data": {"type": "articles", "attributes": {"title": title, "status": "published"}}}


def own_articles(headers) -> dict[int, str]:
    """One article per writer, which that writer updates under load."""
    counters = {}
    for writer in range(WRITERS):
        status, _h, body = call("POST", API + "/articles", article("v0"), headers=headers)
        assert status == 201
        counters[writer] = body["data"]["id"]
    return counters


class Load:
    """Writers (creates titled ``load-<tag>-...``, and updates of one article each) and readers,
    until stopped."""

    def __init__(self, headers, counters: dict[int, str], tag: str):
        self.headers, self.counters = headers, counters
        self.tag = f"{tag}{time.time_ns()}"  # this run's articles only
        self.answers: list[tuple[float, float, str, int, dict]] = []  # started, finished, kind, status, headers
        self.created: list[str] = []  # titles acknowledged with 201
        self.updated: dict[int, int] = {}  # writer -> last version acknowledged with 200
        self.wall_start = time.time()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._threads = [threading.Thread(target=self._write, args=(w,)) for w in range(WRITERS)]
        self._threads += [threading.Thread(target=self._read) for _ in range(READERS)]

    def _call(self, kind, method, url, body=None):
        started = time.monotonic()
        try:
            status, headers, _body = call(method, url, body, headers=self.headers, timeout=60)
        except OSError:
            status, headers = 0, {}
        with self._lock:
            self.answers.append((started, time.monotonic(), kind, status, headers))
        return status

    def _write(self, writer: int):
        n = 0
        while not self._stop.is_set():
            n += 1
            title = f"load-{self.tag}-{writer}-{n}-{time.time_ns()}"
            if self._call("create", "POST", API + "/articles", article(title)) == 201:
                with self._lock:
                    self.created.append(title)
            body = {"data": {"type": "articles", "id": self.counters[writer], "attributes": {"title": f"v{n}"}}}
            if self._call("update", "PATCH", f"{API}/articles/{self.counters[writer]}", body) == 200:
                with self._lock:
                    self.updated[writer] = n

    def _read(self):
        while not self._stop.is_set():
            self._call("read", "GET", API + "/articles?page[size]=5&sort=-createdAt")

    def writes_ok_since(self, since: float, count: int) -> bool:
        with self._lock:
            return sum(1 for a in self.answers if a[0] >= since and a[2] != "read" and 200 <= a[3] < 300) >= count

    def __enter__(self):
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        for thread in self._threads:
            thread.join(120)


def retried_requests(since: float) -> int:
    """Access lines with attempts > 1 written by the application processes after ``since``."""
    count = 0
    for name in ("app1", "app2"):
        for line in (ctl.DIR / f"{name}.log").read_text(errors="replace").splitlines():
            match = re.search(r"attempts=(\d+)", line)
            if match and int(match.group(1)) > 1 and _stamp(line) >= since:
                count += 1
    return count


def _stamp(line: str) -> float:
    try:
        return time.mktime(time.strptime(line[:19], "%Y-%m-%d %H:%M:%S"))
    except ValueError:
        return 0.0


def judge_answers(load: Load, changed_at: float, promoted_at: float) -> dict:
    """Figures of the answers around a change of primary at ``changed_at`` (monotonic), and the
    checks: only 2xx and 503 with Retry-After, none slower than the pool timeout."""
    answers = sorted(load.answers)
    statuses = collections.Counter(status for *_x, status, _h in answers)
    failures = [a for a in answers if not 200 <= a[3] < 300]
    after = [a for a in answers if a[1] >= changed_at]
    first_write_ok = min(a[1] for a in after if a[2] != "read" and 200 <= a[3] < 300 and a[0] >= changed_at)
    window = (min(a[1] for a in failures), max(a[1] for a in failures)) if failures else (changed_at, changed_at)
    acknowledged = sorted(a[1] for a in answers if a[2] != "read" and 200 <= a[3] < 300)
    figures = {
        "patroni_promotion_s": round(promoted_at - changed_at, 2),
        "first_acknowledged_write_after_s": round(first_write_ok - changed_at, 2),
        "window_of_503_s": round(window[1] - window[0], 2),
        "longest_gap_between_acknowledged_writes_s": round(max(b - a for a, b in itertools.pairwise(acknowledged)), 2),
        "requests": len(answers), "statuses": dict(statuses),
        "slowest_answer_s": round(max(a[1] - a[0] for a in answers), 2),
        "requests_retried": retried_requests(load.wall_start),
        "reads_answered_200_before_writes_resumed": sum(
            1 for a in after if a[2] == "read" and a[3] == 200 and a[1] < first_write_ok),
    }
    # 503 with Retry-After during the switch, nothing else; never slower than the pool timeout.
    assert set(statuses) <= {200, 201, 503}, statuses
    assert all(h.get("retry-after") for *_x, status, h in answers if status == 503)
    assert max(a[1] - a[0] for a in answers) < SLOWEST_ANSWER
    return figures


def judge_writes(load: Load, engine) -> dict:
    """Every acknowledged create is there exactly once; every writer's last acknowledged update is
    there (or a later one whose answer was lost in the switch)."""
    with engine.connect() as connection:
        found = dict(connection.execute(text("SELECT title, count(*) FROM articles WHERE title LIKE :pattern "
                                             "GROUP BY title"), {"pattern": f"load-{load.tag}-%"}).all())
        versions = dict(connection.execute(text("SELECT id, title FROM articles WHERE id = ANY(:ids)"),
                                           {"ids": [int(i) for i in load.counters.values()]}).all())
    missing = [t for t in load.created if t not in found]
    doubled = [t for t, n in found.items() if n > 1]
    lost_updates = [w for w, n in load.updated.items() if int(versions[int(load.counters[w])][1:]) < n]
    figures = {"creates_acknowledged": len(load.created), "creates_found": len(load.created) - len(missing),
               "creates_doubled": len(doubled), "creates_found_unacknowledged": len(set(found) - set(load.created)),
               "updates_acknowledged": sum(1 for a in load.answers if a[2] == "update" and a[3] == 200),
               "writers_whose_last_acknowledged_update_is_missing": len(lost_updates)}
    assert missing == [] and doubled == [] and lost_updates == [], figures
    assert len(load.created) > 20, figures
    return figures
