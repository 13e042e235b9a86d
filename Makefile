# The operator's entry point. `make setup` is idempotent; everything else builds on it.
SHELL := /bin/bash
ENV := eval "$$(toolchain/env.sh)"

.PHONY: setup env check test lint demo bench sandbox-up sandbox-down sandbox-status

setup:
	@toolchain/setup.sh

# Prints the exports; use as: eval "$(make -s env)"
env:
	@toolchain/env.sh

check:
	@toolchain/check.sh

lint: setup
	@$(ENV) && ruff check . && ruff format --check . && mypy .

# The tests bring up a sandbox of their own (tests/conftest.py), beside the operator's.
test: setup
	@$(ENV) && ruff check . && ruff format --check . && mypy . && pytest

sandbox-up: setup
	@$(ENV) && python -m sandbox up

sandbox-down:
	@$(ENV) && python -m sandbox down

sandbox-status:
	@$(ENV) && python -m sandbox status

demo: setup
	@$(ENV) && python -m sandbox up && sandbox/demo.sh

# Figures for the README: toolchain build times, then onboarding against the engine's floor.
bench: setup
	@$(ENV) && benchmarks/toolchain_build.sh && python benchmarks/onboarding.py
