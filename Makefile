# Two entry points: `make demo` (the main job on the embedded defaults) and `make test`.
# Both create .venv when missing and install the project with exact pins; torch (CPU build)
# goes in first, with pip (it takes the local CPU wheel), so that no other dependency can pull
# a CUDA build of it. The rest goes in with uv (~20 s instead of pip's ~70 s) from PyPI (uv
# reads none of pip's settings), or with pip where uv or PyPI cannot be had (a pip mirror).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
PIP := $(BIN)/python -m pip --disable-pip-version-check -q
UV := $(BIN)/uv pip install --python $(BIN)/python -q --compile-bytecode
UV_VERSION := 0.13.9
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1

.PHONY: demo test docker-test lint constraints clean

$(STAMP): pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(PIP) install -c constraints.txt torch==2.13.0
	{ $(PIP) install uv==$(UV_VERSION) && $(UV) -c constraints.txt -e '.[dev]'; } \
	  || $(PIP) install -c constraints.txt -e '.[dev]'
	touch $(STAMP)

# The tabular audit of the generalised (10 epochs) and over-fitted (100 epochs) MLP on Adult.
demo: $(STAMP)
	$(BIN)/panoramia-audit -m target=mlp_generalised,mlp_overfit

test: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/lint-imports
	$(BIN)/mypy
	$(BIN)/python -m pytest

# The Docker images built and run for real (tests/docker/, not in `make test`): starts an
# engine where none runs, builds the base from Debian packages when no registry of images is
# reachable, the CPU image and PostgreSQL + Redis, then tests the containers and the stack.
docker-test: $(STAMP)
	docker/airgap/engine.sh
	docker/airgap/build.sh
	$(BIN)/python -m pytest -o addopts="" -ra --strict-markers -m docker -s tests/docker

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# Re-pin after changing dependencies in pyproject.toml (run in a fresh .venv).
constraints: $(STAMP)
	{ sed -n '1,3p' constraints.txt; $(BIN)/python -m pip freeze --exclude-editable --exclude uv \
	  | sed 's/^torch==2.13.0+cpu$$/torch==2.13.0/'; } > constraints.txt.new
	mv constraints.txt.new constraints.txt

clean:
	rm -rf $(VENV) outputs multirun .panoramia .pytest_cache .ruff_cache .mypy_cache
