# Two commands for a fresh machine: `make serve` and `make test`. Nothing else is needed.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
INI ?= development.ini
PORT ?= 6543
STAMP := $(VENV)/.installed

.PHONY: serve test test-sqlite test-quick test-newest install initdb clean bench bench-explain fuzz dist docs lint cluster cluster-down cluster-test test-serializable browser soak

# The library (setup.py, with its extras) and, apart from it, the repository's applications and
# tools (examples/setup.py: the reference blog, its entry points and dependencies, test tools).
$(STAMP): setup.py examples/setup.py
	@echo "Making $(VENV): the library, the reference service and the test tools (1-2 minutes the first time)"
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip 'setuptools<81' wheel
	$(BIN)/pip install --progress-bar off -e '.[testing,postgresql,docs-ui,observability]' -e './examples[dev]'
	touch $(STAMP)

install: $(STAMP)

# Migrate to head and load the demo data when the database is new, then serve on :6543
# (make serve PORT=8080 for another port).
serve: $(STAMP)
	mkdir -p var
	$(BIN)/jsonapi-pyramid-initdb $(INI) --demo
	$(BIN)/pserve $(INI) http_port=$(PORT)

initdb: $(STAMP)
	mkdir -p var
	$(BIN)/jsonapi-pyramid-initdb $(INI) --demo

# Debian's chromium + chromium-driver for the browser test (tests/browser), installed when missing;
# where they cannot be (not root, no apt-get) the script says so and that test skips.
browser:
	./scripts/ensure-chromium

# SQLite always; PostgreSQL too when TEST_DATABASE_URL is set or a server answers on 127.0.0.1:5432.
test: $(STAMP) browser
	$(BIN)/pytest $(PYTEST_ARGS)

# The PostgreSQL suite with every transaction SERIALIZABLE (as CockroachDB runs; docs/cluster.rst,
# "Towards a distributed SQL engine"): serialization failures are retried, 3 attempts.
test-serializable: $(STAMP)
	JSONAPI_TEST_BACKENDS=postgresql JSONAPI_TEST_ISOLATION=serializable $(BIN)/pytest $(PYTEST_ARGS)

test-sqlite: $(STAMP) browser
	JSONAPI_TEST_BACKENDS=sqlite $(BIN)/pytest $(PYTEST_ARGS)

# The unit and functional tests on the newest releases setup.py's bounds allow (SQLAlchemy,
# zope.sqlalchemy, waitress: the packages whose private names or internals the code uses, listed in
# tests/unit/test_private_names.py), in a virtual environment of its own; by hand, before raising a bound.
NEWEST := .venv-newest
test-newest:
	$(PYTHON) -m venv $(NEWEST)
	$(NEWEST)/bin/pip install --quiet --upgrade pip 'setuptools<81' wheel
	$(NEWEST)/bin/pip install --progress-bar off --upgrade --upgrade-strategy eager -e '.[testing,postgresql]' -e './examples[dev]'
	$(NEWEST)/bin/pip list
	$(NEWEST)/bin/pytest tests/unit tests/functional -x -q $(PYTEST_ARGS)

# The quick loop: SQLite only, no browser (nothing installed with apt-get), no packaging tests.
test-quick: $(STAMP)
	JSONAPI_TEST_BACKENDS=sqlite $(BIN)/pytest -m "not packaging" --ignore=tests/browser $(PYTEST_ARGS)

# The long schemathesis run against the live OpenAPI document (in-process WSGI, no network):
# JSONAPI_FUZZ_EXAMPLES cases per operation (default 50), at most JSONAPI_FUZZ_SECONDS (600) per backend.
fuzz: $(STAMP)
	JSONAPI_FUZZ=1 $(BIN)/pytest -q -s tests/functional/test_openapi.py -k schemathesis $(PYTEST_ARGS)

clean:
	rm -rf $(VENV) $(NEWEST) var/*.sqlite *.egg-info build dist

# Benchmarks, by hand only (never part of `make test`; ~17 min, one run): seeds bench/out/, serves
# the reference service, the lean ceiling (bench/ceiling.py) and the floor (bench/floor.py) on
# 127.0.0.1, checks the ceiling's documents, drives them with wrk (installed from the system's
# packages if missing), runs every scenario on PostgreSQL under production.ini beside the ceiling
# (BENCH_POSTGRESQL=0 skips it, =only runs it alone), counts calls in-process, runs N processes on PostgreSQL, writes
# bench/RESULTS.md. BENCH_SCENARIOS, BENCH_DURATION, BENCH_PEER, ...: bench/README.md, bench/run.py.
# BENCH_PEER_DRF=1 adds Django REST framework JSON:API (bench/.drf-venv from PyPI; bench/DRF_PEER.md).
bench: $(STAMP)
	$(BIN)/python bench/run.py

# EXPLAIN (ANALYZE, BUFFERS) of every statement of S2, S3 and S7p, ours beside the lean ceiling, on a
# fresh PostgreSQL database (BENCH_PG_URL's server; made, seeded and dropped): writes bench/EXPLAIN.md.
# make bench runs it too, in its PostgreSQL phase (BENCH_POSTGRESQL; bench/README.md).
bench-explain: $(STAMP)
	$(BIN)/python bench/explain.py

# A PostgreSQL 15 cluster on this machine (docs/cluster.rst): etcd, three Patroni nodes,
# HAProxy and two `pserve production.ini` processes, all on 127.0.0.1, data in $(CLUSTER_DIR)
# (installs patroni, etcd-server, haproxy and postgresql-15 with apt-get when missing).
CLUSTER_DIR ?= /tmp/jsonapi-cluster
export CLUSTER_DIR
cluster: $(STAMP)
	$(PYTHON) cluster/ctl.py up

cluster-down:
	$(PYTHON) cluster/ctl.py down

# The proofs (failover, no acknowledged write lost, a planned switchover, read-your-writes, the
# load balancer) on a cluster of their own: up, prove, down (also when a proof fails).
cluster-test: $(STAMP)
	$(PYTHON) cluster/ctl.py down
	$(PYTHON) cluster/ctl.py up
	$(BIN)/pytest -p no:cacheprovider -q -s cluster/test_cluster.py $(PYTEST_ARGS); status=$$?; \
	  $(PYTHON) cluster/ctl.py down; exit $$status

# The library's sdist and wheel in dist/ (the reference service is not part of them), checked.
dist: $(STAMP)
	rm -rf build dist jsonapi_pyramid.egg-info
	$(BIN)/python -m build --no-isolation --outdir dist .
	$(BIN)/twine check --strict dist/*

# The documentation site in docs/_build/html (offline, nitpicky: every reference resolves; warnings
# are errors), then every example of the chapters run by the doctest builder. `make test` builds both too (tests/distribution/test_docs.py).
docs: $(STAMP)
	$(BIN)/sphinx-build -n -W --keep-going -q -b html docs docs/_build/html
	$(BIN)/sphinx-build -n -W --keep-going -q -b doctest docs docs/_build/doctest

# The lint and type gates (configured in pyproject.toml); `make test` runs them too
# (tests/distribution/test_lint.py).
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/mypy

# Soak, by hand only (never part of `make test`): two `pserve production.ini` processes on a fresh
# PostgreSQL database (127.0.0.1:5432, dropped afterwards), 8 client connections of mixed reads and
# writes for SOAK_SECONDS (600); RSS, pg_stat_activity connections and error counts appended to
# bench/RESULTS.md. SOAK_CLIENTS, SOAK_SCALE, SOAK_DATABASE_URL: see bench/soak.py.
soak: $(STAMP)
	$(BIN)/python bench/soak.py
