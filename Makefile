# The README's commands. Each target installs what it needs first (.venv from pyproject.toml).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: run test test-sqlite test-postgres test-rabbitmq bench lint typecheck install tools clean

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -qq --disable-pip-version-check -e '.[dev]'
	@touch $(STAMP)

install: $(STAMP) tools

## make tools: the system tools the tests use (promtool, chromium, hugo), from Debian, when missing.
tools:
	@scripts/install-tools.sh

## make run: migrate, create the local admin, start web, worker, beat and Flower.
run: $(STAMP)
	@$(BIN)/python scripts/run.py

## make test: lint and the type check, then the whole suite on SQLite and again on
## PostgreSQL, then the broker-dependent tests on RabbitMQ (a vhost of the run's own).
test: lint tools
	@scripts/test.sh

test-sqlite: $(STAMP) tools
	@scripts/test.sh sqlite

test-postgres: $(STAMP) tools
	@scripts/test.sh postgres

test-rabbitmq: $(STAMP)
	@scripts/test.sh rabbitmq

## make bench: blogpublish side by side with bare Celery on PostgreSQL and SQLite, and the
## static site, printed as tables; the run is also written to bench/results/ as JSON.
## make bench QUICK=1: smaller sizes, under 10 minutes.
bench: $(STAMP)
	@$(BIN)/python bench/run.py $(if $(filter-out 0,$(QUICK)),--quick)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(MYPY)

## make typecheck: mypy with django-stubs' plugin over every production package
## (pyproject.toml [tool.mypy]); 12 s on 2 cores without a cache. The plugin imports
## config.settings, which refuses to start without a SECRET_KEY unless DEBUG: DEBUG=1 gives
## it the local one, and an in-memory database leaves no file behind.
MYPY := env DEBUG=1 DATABASE_URL=sqlite://:memory: $(BIN)/mypy
typecheck: $(STAMP)
	$(MYPY)

clean:
	rm -rf $(VENV) var .pytest_cache .ruff_cache .mypy_cache
