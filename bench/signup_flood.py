"""Reads during a sign-up flood, by hand: ``python bench/signup_flood.py BASE_URL [ADDRESSES]``.

Against a running ``pserve production.ini`` (real argon2 parameters; it trusts X-Forwarded-For
from 127.0.0.1): one reader times ``GET /api/tags`` for 4 s alone, then for 8 s while 12 threads
post ``POST /api/users`` as fast as answered, each from one of ADDRESSES client addresses
(X-Forwarded-For; default 1: one client, 12: as many as threads, 0: a new one per request).
Prints the reads' median, 95th percentile and worst (ms) alone and during the flood, and the
sign-ups' statuses.
"""
from __future__ import annotations

import collections
import http.client
import itertools
import json
import statistics
import sys
import threading
import time
import urllib.parse

THREADS, ALONE, FLOOD = 12, 4.0, 8.0


def request(base, method, path, body=None, headers=None):
    parts = urllib.parse.urlsplit(base)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)
    try:
        connection.request(method, path, body=body, headers=headers or {})
        response = connection.getresponse()
        response.read()
        return response.status
    finally:
        connection.close()


def read_for(base, seconds):
    latencies = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        started = time.perf_counter()
        request(base, "GET", "/api/tags", headers={"Accept": "application/vnd.api+json"})
        latencies.append((time.perf_counter() - started) * 1000)
        time.sleep(0.02)
    return latencies


def summary(latencies):
    ordered = sorted(latencies)
    return (f"n={len(ordered)} median={statistics.median(ordered):.1f} "
            f"p95={ordered[int(0.95 * (len(ordered) - 1))]:.1f} max={ordered[-1]:.1f}")


def main():
    base = sys.argv[1]
    addresses = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    print("alone:  ", summary(read_for(base, ALONE)))
    statuses = collections.Counter()
    serial = itertools.count()
    stop = threading.Event()
    run = time.time_ns()

    def flood(thread):
        while not stop.is_set():
            number = next(serial)
            address = {0: number, 1: 0}.get(addresses, thread % max(addresses, 1))
            body = json.dumps({"data": {"type": "users", "attributes": {
                "name": "flood", "email": f"flood-{run}-{number}@example.com",
                "password": "password-123", "passwordConfirmation": "password-123"}}})
            headers = {"Content-Type": "application/vnd.api+json",
                       "X-Forwarded-For": f"10.{address // 65536 % 256}.{address // 256 % 256}.{address % 256}"}
            statuses[request(base, "POST", "/api/users", body, headers)] += 1

    threads = [threading.Thread(target=flood, args=(index,)) for index in range(THREADS)]
    for thread in threads:
        thread.start()
    print("flood:  ", summary(read_for(base, FLOOD)))
    stop.set()
    for thread in threads:
        thread.join()
    print("sign-ups:", dict(sorted(statuses.items())))


if __name__ == "__main__":
    main()
