"""Load for the cluster proofs (cluster/test_cluster.py): writers and readers through HAProxy
while the primary changes (a crash or a planned switchover), and the judgement of their answers:
which statuses, how long the 503 window, and whether every acknowledged write is there once.

The writers behave as the deployment docs tell a client to: each create carries an
``Idempotency-Key`` and is retried with it until acknowledged (sooner than ``Retry-After`` says,
so that the window is measured finely); after each acknowledged write the writer reads it back
with the ``X-Database-Position`` it got. A third kind of writer sends a PATCH with a stale
``If-Match``, whose answer must stay 412 (or 503 while no primary answers)."""
from __future__ import annotations

import collections
import itertools
import re
import threading
import time
import uuid

import ctl
from prodtools import call
from sqlalchemy import text

from jsonapi_pyramid.replicas import POSITION_HEADER

API = ctl.URL + "/api"
WRITERS, READERS = 4, 2
#: production.ini's pool_timeout (10 s) + connect_timeout (3 s): no answer may take longer.
SLOWEST_ANSWER = 13.0
#: Seconds a writer keeps retrying one write (with its key) or reading it back.
RETRY_FOR = 60.0
#: The proof's clients retry after at most this (the service says Retry-After: 5).
RETRY_PAUSE = 0.5
#: Statuses each kind of request may get while the primary changes.
ALLOWED = {"create": {201, 503}, "update": {200, 503}, "read": {200, 503}, "own-read": {200, 503},
           "stale-patch": {412, 503}}
WRITES = ("create", "update")


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
        self.unread: list[tuple] = []  # acknowledged writes their writer could not read back next
        self.retried_creates = self.replayed_creates = self.without_position = 0
        self.wall_start = time.time()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._threads = [threading.Thread(target=self._write, args=(w,)) for w in range(WRITERS)]
        self._threads += [threading.Thread(target=self._read) for _ in range(READERS)]
        self._threads.append(threading.Thread(target=self._stale_patch))

    def _call(self, kind, method, url, body=None, headers=None):
        started = time.monotonic()
        try:
            status, answer_headers, _body = call(method, url, body, headers={**self.headers, **(headers or {})},
                                                 timeout=60)
        except OSError:
            status, answer_headers, _body = 0, {}, None
        with self._lock:
            self.answers.append((started, time.monotonic(), kind, status, answer_headers))
        return status, answer_headers, _body

    def _until_acknowledged(self, kind, method, url, body, ok, headers=None):
        """Send until an answer in ``ok`` (retrying 503s and cut connections, as a client should);
        the last answer and the number of attempts."""
        deadline, attempts = time.monotonic() + RETRY_FOR, 0
        while True:
            attempts += 1
            status, answer_headers, answer = self._call(kind, method, url, body, headers)
            if status in ok or status not in (0, 503) or time.monotonic() > deadline:
                return status, answer_headers, answer, attempts
            time.sleep(min(float(answer_headers.get("retry-after", RETRY_PAUSE)), RETRY_PAUSE))

    def _read_back(self, url, position, expected_title):
        """The writer's next request: its write, read with the position its answer carried."""
        headers = {POSITION_HEADER: position} if position else {}
        status, _h, answer, _n = self._until_acknowledged("own-read", "GET", url, None, {200}, headers)
        seen = answer["data"]["attributes"]["title"] if status == 200 else None
        if seen != expected_title:
            with self._lock:
                self.unread.append((url, position, status, seen, expected_title))

    def _write(self, writer: int):
        n = 0
        while not self._stop.is_set():
            n += 1
            title = f"load-{self.tag}-{writer}-{n}-{time.time_ns()}"
            key = {"Idempotency-Key": f'"{uuid.uuid4()}"'}
            status, headers, answer, attempts = self._until_acknowledged(
                "create", "POST", API + "/articles", article(title), {201}, key)
            if status == 201:
                with self._lock:
                    self.created.append(title)
                    self.retried_creates += attempts > 1
                    self.replayed_creates += headers.get("idempotent-replayed") == "true"
                    self.without_position += POSITION_HEADER.lower() not in headers
                self._read_back(f"{API}/articles/{answer['data']['id']}", headers.get(POSITION_HEADER.lower()), title)
            url = f"{API}/articles/{self.counters[writer]}"
            body = {"data": {"type": "articles", "id": self.counters[writer], "attributes": {"title": f"v{n}"}}}
            status, headers, _answer = self._call("update", "PATCH", url, body)
            if status == 200:
                with self._lock:
                    self.updated[writer] = n
                    self.without_position += POSITION_HEADER.lower() not in headers
                self._read_back(url, headers.get(POSITION_HEADER.lower()), f"v{n}")

    def _read(self):
        while not self._stop.is_set():
            self._call("read", "GET", API + "/articles?page[size]=5&sort=-createdAt")

    def _stale_patch(self):
        """A PATCH whose If-Match fails: 412 is final (never retried into a 503 by a rollback that
        fails on the dying primary); 503 only while the precondition cannot be read."""
        url = f"{API}/articles/{self.counters[0]}"
        body = {"data": {"type": "articles", "id": self.counters[0], "attributes": {"title": "never"}}}
        while not self._stop.is_set():
            self._call("stale-patch", "PATCH", url, body, {"If-Match": '"stale"'})

    def writes_ok_since(self, since: float, count: int) -> bool:
        with self._lock:
            return sum(1 for a in self.answers if a[0] >= since and a[2] in WRITES and 200 <= a[3] < 300) >= count

    def __enter__(self):
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        for thread in self._threads:
            thread.join(120)


def log_lines(text: str, since: float) -> int:
    """Lines of the application processes' logs containing ``text``, written after ``since``."""
    return sum(1 for name in ("app1", "app2")
               for line in (ctl.DIR / f"{name}.log").read_text(errors="replace").splitlines()
               if text in line and _stamp(line) >= since)


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
    by_kind = {kind: dict(collections.Counter(a[3] for a in answers if a[2] == kind)) for kind in ALLOWED}
    # HAProxy's own 503 (no process in service) has no X-Request-Id; the service's always has one.
    refused_by_haproxy = collections.Counter(a[2] for a in answers if a[3] == 503 and "x-request-id" not in a[4])
    failures = [a for a in answers if a[3] in (0, 503)]
    after = [a for a in answers if a[1] >= changed_at]
    first_write_ok = min(a[1] for a in after if a[2] in WRITES and 200 <= a[3] < 300 and a[0] >= changed_at)
    window = (min(a[1] for a in failures), max(a[1] for a in failures)) if failures else (changed_at, changed_at)
    acknowledged = sorted(a[1] for a in answers if a[2] in WRITES and 200 <= a[3] < 300)
    figures = {
        "patroni_promotion_s": round(promoted_at - changed_at, 2),
        "first_acknowledged_write_after_s": round(first_write_ok - changed_at, 2),
        "window_of_503_s": round(window[1] - window[0], 2),
        "longest_gap_between_acknowledged_writes_s": round(max(b - a for a, b in itertools.pairwise(acknowledged)), 2),
        "requests": len(answers), "statuses": dict(statuses), "statuses_by_kind": by_kind,
        "refused_by_haproxy": dict(refused_by_haproxy),
        "writes_refused_503": by_kind["create"].get(503, 0) + by_kind["update"].get(503, 0),
        "reads_503": by_kind["read"].get(503, 0),
        "slowest_answer_s": round(max(a[1] - a[0] for a in answers), 2),
        "requests_retried": retried_requests(load.wall_start),
        "final_answers_kept_after_a_failed_rollback": log_lines("the rollback after a", load.wall_start),
        "creates_retried_with_their_key": load.retried_creates,
        "creates_replayed_from_their_key": load.replayed_creates,
        "reads_answered_200_before_writes_resumed": sum(
            1 for a in after if a[2] == "read" and a[3] == 200 and a[1] < first_write_ok),
    }
    # 503 with Retry-After during the switch, nothing else; never slower than the pool timeout;
    # every process stays in service (HAProxy never answers for them); a 412 stays a 412.
    assert all(set(by_kind[kind]) <= ALLOWED[kind] for kind in ALLOWED), by_kind
    assert not refused_by_haproxy, refused_by_haproxy
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
               "writers_whose_last_acknowledged_update_is_missing": len(lost_updates),
               "acknowledged_writes_without_position": load.without_position,
               "creates_replayed_from_their_key": load.replayed_creates,
               "acknowledged_writes_not_read_back_next": len(load.unread)}
    assert missing == [] and doubled == [] and lost_updates == [], figures
    assert load.unread == [] and load.without_position == 0, (figures, load.unread[:5])
    assert len(load.created) > 20, figures
    return figures
