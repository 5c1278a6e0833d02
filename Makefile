# The two commands a user needs: `make demo` and `make test`. Both set everything up.
# `make test-unit` is the fast tier for a change's inner loop (under 5 minutes on 2 cores).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
CKSUM := $(shell cat pyproject.toml | cksum | cut -d' ' -f1)
STAMP := $(VENV)/.installed-$(CKSUM)
TRAIN_STAMP := $(VENV)/.installed-train-$(CKSUM)
PYTEST_ARGS ?=
# pytest-xdist workers for `make test`; tests/conftest.py groups what must share one.
PYTEST_WORKERS ?= 2

.PHONY: test test-unit demo lint format bench venv train-venv images clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	@# openenv-core is openenv's old name; both own the `openenv` import package, so the old
	@# one must go before the new one lands (a no-op in a fresh venv)
	$(BIN)/python -m pip uninstall -q -y openenv-core 2>/dev/null || true
	tools/pip-install.sh $(BIN)/python -q -e '.[dev,k8s]'
	rm -f $(VENV)/.installed-* && touch $@

# The training stack (torch, transformers, trl, peft, trackio: 5.6 GiB installed) only for
# `make test` and `make train-venv`; `make demo` stays light. tools/pip-install.sh holds pip's
# downloads in RAM, so the disk needs the installed files only (not 8.5 GiB at the peak).
$(TRAIN_STAMP): $(STAMP)
	tools/pip-install.sh $(BIN)/python -q -e '.[dev,k8s,train]'
	touch $@

venv: $(STAMP)

train-venv: $(TRAIN_STAMP)

lint: venv
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench
	$(BIN)/lint-imports

format: venv
	$(BIN)/ruff format src tests bench
	$(BIN)/ruff check --fix src tests bench

# The Kubernetes tests need a real kube-apiserver; tools/envtest.sh builds and caches it (Go).
# Without Go they skip here, and fail in CI (A01GYM_REQUIRE_K8S=1). The container tier needs a
# Docker engine (apt-get install docker.io debootstrap docker-registry); without one it skips
# here, and fails in CI (A01GYM_REQUIRE_DOCKER=1). The 30 slowest tests are listed at the end,
# so a CI log shows where its time went.
test: lint $(TRAIN_STAMP)
	@bin="$$(tools/envtest.sh)" || { echo "envtest unavailable: Kubernetes tests will skip"; bin=""; }; \
	A01GYM_ENVTEST_BIN="$$bin" $(BIN)/pytest -n $(PYTEST_WORKERS) --durations=30 $(PYTEST_ARGS)

# The fast tier: lint, then the unit tests (tests/unit and tests/training/unit), which need no
# Kubernetes, Docker engine or browser. `make test` runs them too, with everything else.
test-unit: lint $(TRAIN_STAMP)
	$(BIN)/pytest tests/unit tests/training/unit $(PYTEST_ARGS)

demo: venv
	$(BIN)/a01gym demo

# The base (debootstrap), sandbox and platform images, built on this machine's Docker engine
# (no registry needed); `make test` builds them too, for its container tier.
images:
	tools/images.sh

bench: train-venv
	$(BIN)/python bench/sandbox.py --quick --json-out bench/results/sandbox.json
	$(BIN)/python bench/containers.py --quick --json-out bench/results/containers.json
	$(BIN)/python bench/factory.py --quick --json-out bench/results/factory.json
	$(BIN)/python bench/runtime.py --quick --json-out bench/results/runtime.json
	$(BIN)/python bench/reset_cpu.py --json-out bench/results/reset_cpu.json
	$(BIN)/python bench/scale.py --quick --json-out bench/results/scale.json
	$(BIN)/python bench/rollouts.py --quick --json-out bench/results/rollouts.json
	$(BIN)/python bench/generation.py --quick --json-out bench/results/generation.json
	$(BIN)/python bench/zeroshot.py --quick --json-out bench/results/zeroshot.json
	$(BIN)/python bench/learning.py --quick --json-out bench/results/learning.json
	$(BIN)/python bench/curriculum.py --quick --json-out bench/results/curriculum.json
	A01GYM_ENVTEST_BIN="$$(tools/envtest.sh)" $(BIN)/python bench/k8s.py --quick --json-out bench/results/k8s.json

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache runs
