# Transcript Inspector: `make run` serves it, `make test` checks it.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
STAMP := $(VENV)/.installed
TEST_STAMP := $(VENV)/.installed-test
HOST ?= 127.0.0.1
PORT ?= 8000

# The first Python >= 3.12 we can find: on PATH first, then pyenv's versions
# (pyenv's shims refuse versions that are not active, so use real paths).
define find_python
for c in python3.14 python3.13 python3.12 python3; do \
  p=$$(command -v $$c 2>/dev/null) || continue; \
  $$p -c 'import sys; sys.exit(0 if sys.version_info >= (3, 12) else 1)' 2>/dev/null && { echo $$p; exit 0; }; \
done; \
root=$$(pyenv root 2>/dev/null || echo $$HOME/.pyenv); \
for p in $$(ls -d $$root/versions/3.1[2-9]*/bin/python3 2>/dev/null | sort -rV); do \
  $$p -c 'import sys; sys.exit(0 if sys.version_info >= (3, 12) else 1)' 2>/dev/null && { echo $$p; exit 0; }; \
done; exit 1
endef

.PHONY: run test lint format bench bench-scale fuzz load multihost clean venv install install-test chromium

$(VENV)/bin/python:
	@py=$$($(find_python)) || { echo "Transcript Inspector needs Python 3.12 or newer: install python3.12 (or newer) and run make again." >&2; exit 1; }; \
	echo "Using $$py ($$($$py --version))"; \
	$$py -m venv $(VENV)

$(STAMP): pyproject.toml | $(VENV)/bin/python
	$(PIP) install --quiet --upgrade pip
	$(PIP) install --quiet -e .
	@touch $@

$(TEST_STAMP): pyproject.toml $(STAMP)
	$(PIP) install --quiet -e '.[test]'
	@touch $@

venv install: $(STAMP)
install-test: $(TEST_STAMP)

# Holds the terminal; Ctrl-C or SIGTERM stops the server and its worker. `exec`
# makes serve make's own child: GNU make passes SIGTERM on to that child (not
# SIGINT or SIGHUP, which a terminal sends the whole group anyway), and a shell
# in between would die of it and leave serve running.
run: $(STAMP)
	$(PY) manage.py migrate --noinput
	exec $(PY) manage.py serve --host $(HOST) --port $(PORT)

chromium:
	@if [ -x /usr/bin/chromium ]; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  echo "Installing Debian's chromium for the browser tests"; \
	  (apt-get install -y -qq chromium >/dev/null 2>&1 || (apt-get update -qq && apt-get install -y -qq chromium >/dev/null)) \
	    || { echo "apt-get could not install chromium" >&2; exit 1; }; \
	else echo "The browser tests need Chromium at /usr/bin/chromium: run 'sudo apt-get install chromium' and make test again." >&2; exit 1; fi

lint: $(TEST_STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

format: $(TEST_STAMP)
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

# One pytest worker a core (pytest-xdist): the suite is some 13,000 tests of which
# none dominates, so it scales with the cores; `.venv/bin/pytest tests/x` runs serially.
test: $(TEST_STAMP) chromium lint
	$(VENV)/bin/pytest -n auto --dist worksteal

bench: $(STAMP)
	$(PY) bench/run.py

# 100,000 transcripts and 1,000,000 indexed rows on a throw-away PostgreSQL database
# (127.0.0.1:5432 by default; SCALE_ARGS="--postgres postgres://user@127.0.0.1:5433"):
# p50/p95 of the dashboard and the project search against 200 ms. About 4 minutes to
# build, then 5-10 to measure; the database is dropped at the end.
bench-scale: $(STAMP)
	$(PY) bench/bench_scale.py $(SCALE_ARGS)

# Many more hypothesis examples for the property and fuzz tests (minutes, not seconds).
fuzz: $(TEST_STAMP)
	HYPOTHESIS_PROFILE=fuzz $(VENV)/bin/pytest -q tests/formats/test_fuzz.py \
	  tests/formats/test_shape_contract.py tests/formats/test_export_regressions.py tests/engine/test_properties.py \
	  tests/diagnosis/test_skeleton.py

# gunicorn on a throw-away PostgreSQL database (on 127.0.0.1:5432; LOAD_ARGS="--postgres
# postgres://user@127.0.0.1:5433") with 20 users for 30 s from a second process: prints
# requests/s and latencies, fails on any 5xx or upload not retrievable with its sha256.
$(VENV)/.installed-load: pyproject.toml $(STAMP)
	$(PIP) install --quiet -e '.[load]'
	@touch $@

load: $(VENV)/.installed-load
	$(PY) bench/load.py $(LOAD_ARGS)

# Web, two workers, PostgreSQL and an S3 server (moto) on separate hosts of this machine:
# network namespaces on a bridge in 10.233.0.0/24, each with its own hostname, process
# table and mounts (tests/multihost/run.py). Needs root; 1 to 4 minutes. README:
# "Several machines". MULTIHOST_STORAGE=shared uses a shared folder instead of S3.
multihost: $(TEST_STAMP)
	$(VENV)/bin/pytest -q -s -p no:cacheprovider tests/multihost/check_hosts.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .mypy_cache .hypothesis
