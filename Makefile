# The two commands a user needs: `make demo` and `make test`. Both set everything up.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)
PYTEST_ARGS ?=

.PHONY: test demo lint format bench venv clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev]'
	rm -f $(VENV)/.installed-* && touch $@

venv: $(STAMP)

lint: venv
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench

format: venv
	$(BIN)/ruff format src tests bench
	$(BIN)/ruff check --fix src tests bench

test: lint
	$(BIN)/pytest $(PYTEST_ARGS)

demo: venv
	$(BIN)/a01gym demo

bench: venv
	$(BIN)/python bench/sandbox.py --quick

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache runs
