# Zurau: two commands on a fresh machine (Python 3.11+, Java 17):
#   make run   - create .venv, install, start one broker on 127.0.0.1:9092 with data in ./data
#   make test  - install test dependencies (and kcat), lint, check layer contracts, run all tests
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: run test lint unit install kcat java chromium postgres clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q -U pip
	$(BIN)/pip install -q -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	$(BIN)/zurau broker start

# Debian's kcat is one of the real clients the compat tests drive; Java 17 runs PySpark for the
# Spark tests. Both are installed with apt when missing; without them `make test` stops here
# rather than letting their tests fail one by one.
kcat:
	@command -v kcat >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then (apt-get update -qq && apt-get install -y -qq kcat) >/dev/null; \
	  else sudo -n apt-get install -y -qq kcat >/dev/null 2>&1; fi; }
	@command -v kcat >/dev/null 2>&1 || { echo "kcat is needed by the compat tests: apt-get install kcat" >&2; exit 1; }

java:
	@command -v java >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then (apt-get update -qq && apt-get install -y -qq openjdk-17-jre-headless) >/dev/null; \
	  else sudo -n apt-get install -y -qq openjdk-17-jre-headless >/dev/null 2>&1; fi; }
	@command -v java >/dev/null 2>&1 || { echo "Java 17 is needed by the Spark tests: apt-get install openjdk-17-jre-headless" >&2; exit 1; }

# Debian's Chromium and its chromedriver run the console's browser tests (Selenium is pointed at
# /usr/bin/chromedriver and /usr/bin/chromium: it never downloads a driver or a browser).
chromium:
	@{ test -x /usr/bin/chromium && test -x /usr/bin/chromedriver; } || { \
	  if [ "$$(id -u)" = 0 ]; then (apt-get update -qq && apt-get install -y -qq chromium chromium-driver) >/dev/null; \
	  else sudo -n apt-get install -y -qq chromium chromium-driver >/dev/null 2>&1; fi; }
	@{ test -x /usr/bin/chromium && test -x /usr/bin/chromedriver; } || { echo "Chromium is needed by the console's browser tests: apt-get install chromium chromium-driver" >&2; exit 1; }

# PostgreSQL's server binaries (initdb, postgres): the change data capture tests start a throwaway
# server of their own from them (zurau.testing.postgres); a running system server is never touched.
postgres:
	@{ ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v initdb >/dev/null 2>&1; } || { \
	  if [ "$$(id -u)" = 0 ]; then (apt-get update -qq && apt-get install -y -qq postgresql) >/dev/null; \
	  else sudo -n apt-get install -y -qq postgresql >/dev/null 2>&1; fi; }
	@{ ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v initdb >/dev/null 2>&1; } || { echo "PostgreSQL's server binaries are needed by the change data capture tests: apt-get install postgresql" >&2; exit 1; }

lint: $(STAMP)
	$(BIN)/ruff check src tests bench
	$(BIN)/lint-imports
	$(BIN)/mypy

# Two pytest workers (tests/conftest.py keeps the fault and Spark tests, which start node
# processes or a JVM, on one worker, one at a time), then the `solo` tests alone.
test: $(STAMP) kcat java chromium postgres lint
	$(BIN)/pytest -q -p no:cacheprovider -n 2 -m "not solo" --durations=30 tests
	$(BIN)/pytest -q -p no:cacheprovider -m solo --durations=5 tests

clean:
	rm -rf $(VENV) build *.egg-info

# Zurau against the Rust broker Tansu, side by side (an hour or more; never part of `make test`):
# bench.run's tables, then every figure of performance rounds two and three (bench/round_two.py,
# bench/round_three.py).
# BENCH_ARGS=--quick for a smoke run; results go to BENCHMARKS.md.
.PHONY: bench
bench: $(STAMP)
	$(BIN)/pip install -q -e '.[test,bench]'
	$(BIN)/python -m bench.run $(BENCH_ARGS)
	$(BIN)/python -m bench.round_two --after-bench-run $(BENCH_ARGS)
	$(BIN)/python -m bench.round_three $(BENCH_ARGS)

# The flagship pipeline, end to end in ~1-2 minutes: a generator produces device telemetry to an
# embedded broker, Spark Structured Streaming (the zurau source and sink) computes per-device
# one-minute windows and alerts into Kafka and Parquet, and a summary table is printed.
# Needs Java 17 (installed with apt when missing and running as root).
.PHONY: demo
demo:
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@command -v java >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then (apt-get update -qq && apt-get install -y -qq openjdk-17-jre-headless) >/dev/null; \
	  else echo "Java 17 is needed for Spark: install openjdk-17-jre-headless" >&2; exit 1; fi; }
	$(BIN)/pip install -q -U pip
	$(BIN)/pip install -q -e '.[spark]'
	$(BIN)/zurau pipeline telemetry --events 30000 --devices 50 --rate 3000 --timeout 600
