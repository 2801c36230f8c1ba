# `make build` and `make test` each do their own set-up on a fresh Debian/Ubuntu machine.
BIN := .venv/bin
STAMP := .venv/.installed

.PHONY: build test soak lint bench golden docs-update clean

$(STAMP): pyproject.toml
	tools/setup.sh venv
	touch $@

build: $(STAMP)
	$(BIN)/echomq-scripts build

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

test: $(STAMP)
	tools/setup.sh redis
	tools/setup.sh node_packages
	tools/setup.sh go_packages
	$(MAKE) lint
	$(BIN)/echomq-scripts build --check
	$(BIN)/pytest

# The race and fault tests at full size (tests marked soak, which `make test` leaves out).
soak: $(STAMP)
	tools/setup.sh redis
	$(BIN)/pytest -m soak

bench: $(STAMP)
	tools/setup.sh redis
	tools/setup.sh valgrind_tools
	$(BIN)/pip install -q -e '.[build,dev,bench]' --config-settings editable_mode=compat
	$(BIN)/python bench/run.py $(BENCH_ARGS)

# Rewrite the expected findings of tests/fixtures after a deliberate change; review the diff.
golden: $(STAMP)
	$(BIN)/python tests/regen_golden.py

# Rewrite the output that README.md's and docs/*.md's examples show, where it differs from what
# they print now (tests/support/docs.py); review the diff.
docs-update: $(STAMP)
	tools/setup.sh redis
	$(BIN)/pytest --update-docs README.md docs

clean:
	rm -rf build .venv .mypy_cache .ruff_cache .pytest_cache
