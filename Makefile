# Zurau: two commands on a fresh machine (Python 3.11+, Java 17):
#   make run   - create .venv, install, start one broker on 127.0.0.1:9092 with data in ./data
#   make test  - install test dependencies (and kcat), lint, check layer contracts, run all tests
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: run test lint unit install kcat clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q -U pip
	$(BIN)/pip install -q -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	$(BIN)/zurau broker start

# Debian's kcat is one of the real clients the compat tests drive.
kcat:
	@command -v kcat >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then (apt-get update -qq && apt-get install -y -qq kcat) >/dev/null; \
	  else sudo -n apt-get install -y -qq kcat >/dev/null 2>&1 || echo "kcat not installed: kcat tests will skip"; fi; }

lint: $(STAMP)
	$(BIN)/ruff check src tests bench
	$(BIN)/lint-imports

test: $(STAMP) kcat lint
	$(BIN)/pytest -q -p no:cacheprovider tests

clean:
	rm -rf $(VENV) build *.egg-info

# Zurau against the Rust broker Tansu, side by side (minutes; never part of `make test`).
# BENCH_ARGS=--quick for a smoke run; results go to BENCHMARKS.md.
.PHONY: bench
bench: $(STAMP)
	$(BIN)/pip install -q -e '.[test,bench]'
	$(BIN)/python -m bench.run $(BENCH_ARGS)
