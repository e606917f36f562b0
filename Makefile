# The two commands: `make run` (serve the embedded demo) and `make test` (the whole suite).
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
PORT ?= 8000
STAMP := $(VENV)/.installed-stamp
EMBEDDED_DB := sqlite:///var/sprig.db

.PHONY: install run test test-inside lint migrations-check bench-quick bench-soak bench-trainers messages clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

# Serve on 127.0.0.1:$(PORT): SQLite under var/, no Redis, demo community on first start.
run: install
	mkdir -p var
	test -s var/secret_key || $(BIN)/python -c "import secrets; print(secrets.token_hex(32))" > var/secret_key
	SPRIG_DATABASE_URL=$(EMBEDDED_DB) $(BIN)/sprig db upgrade
	SPRIG_DATABASE_URL=$(EMBEDDED_DB) $(BIN)/sprig demo --if-empty
	@echo "Sprig on http://127.0.0.1:$(PORT)/ (sign in as any demo person; API docs: /api/v1/docs)"
	SPRIG_DATABASE_URL=$(EMBEDDED_DB) SPRIG_SECRET_KEY=$$(cat var/secret_key) SPRIG_DEMO_SIGNIN=1 SPRIG_LOG_FORMAT=console \
		exec $(BIN)/gunicorn -c python:market.entrypoints.gunicorn_conf --bind 127.0.0.1:$(PORT) 'market.app:create_app()'

# The whole suite on a fresh machine: starts PostgreSQL and Redis on loopback (installing them
# and Debian's chromium for the browser tests with apt-get when missing), runs lint, migration
# checks and pytest on SQLite and PostgreSQL. Playwright comes from the dev extras and drives
# /usr/bin/chromium (it never downloads a browser).
test: install
	SPRIG_TEST_BROWSER=1 scripts/test-services.sh $(MAKE) --no-print-directory test-inside

# Two parts. First everything else in TEST_WORKERS processes (pytest-xdist; each worker has
# databases of its own on the shared servers, tests/xdist_worker.py), a module's tests kept on
# one worker so its module fixtures are built once; then, alone, the tests that restart a
# shared server (marked `exclusive`). The slowest tests are listed at the end of each part, so
# a CI log shows where its time goes.
TEST_WORKERS ?= 3
test-inside: lint migrations-check
	$(BIN)/pytest -q -p no:cacheprovider -n $(TEST_WORKERS) --dist loadfile -m "not exclusive" --durations=30
	$(BIN)/pytest -q -p no:cacheprovider -m exclusive --durations=10

lint:
	$(BIN)/ruff check .
	$(BIN)/ruff format --check market evolution feedback tests bench

# `alembic check`: the models and the migrations agree, on SQLite and (when set) PostgreSQL.
migrations-check:
	rm -f var/alembic-check.db; mkdir -p var
	SPRIG_DATABASE_URL=sqlite:///var/alembic-check.db $(BIN)/alembic upgrade head
	SPRIG_DATABASE_URL=sqlite:///var/alembic-check.db $(BIN)/alembic check
	@if [ -n "$$SPRIG_TEST_POSTGRES_URL" ]; then \
		SPRIG_DATABASE_URL=$$SPRIG_TEST_POSTGRES_URL $(BIN)/alembic upgrade head && \
		SPRIG_DATABASE_URL=$$SPRIG_TEST_POSTGRES_URL $(BIN)/alembic check; fi

bench-quick: install
	scripts/test-services.sh sh -c '$(BIN)/python bench/catalog.py --quick'

# The whole system for 30 minutes under mixed traffic and scheduled faults (bench/soak.py; it
# starts its own PostgreSQL and Redis). BENCH_ARGS=--quick for about three minutes. Not part
# of `make test`. The script nices its own data loading (the machine may be shared).
bench-soak: install
	$(BIN)/python bench/soak.py $(BENCH_ARGS)

# TRL's RewardTrainer, DPOTrainer and KTOTrainer, unchanged, on a fresh demo export made by
# .venv's sprig (bench/trainers.py; BENCH_ARGS=--quick for one step each). torch, transformers
# and trl (the `train` extra of pyproject.toml, several GB) go in their own venv, TRAIN_VENV,
# never in .venv. Not part of `make test`.
TRAIN_VENV ?= .venv-train
bench-trainers: install
	test -x $(TRAIN_VENV)/bin/python || $(PYTHON) -m venv $(TRAIN_VENV)
	$(TRAIN_VENV)/bin/pip install -q $$($(BIN)/python -c "import tomllib; \
		print(' '.join(tomllib.load(open('pyproject.toml', 'rb'))['project']['optional-dependencies']['train']))")
	$(TRAIN_VENV)/bin/python bench/trainers.py --sprig $(BIN)/sprig $(BENCH_ARGS)

# After changing a page's text: the templates' strings into the three catalogs of
# market/web/translations (the app compiles them when it starts); then translate the new ones.
messages: install
	mkdir -p var
	$(BIN)/pybabel extract -F babel.cfg -k lazy_gettext --no-location -o var/messages.pot .
	$(BIN)/pybabel update -i var/messages.pot -d market/web/translations --no-fuzzy-matching --ignore-obsolete

clean:
	rm -rf var .pytest_cache .ruff_cache
