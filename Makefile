# The operator's entry point. `make setup` is idempotent; everything else builds on it.
SHELL := /bin/bash
ENV := eval "$$(toolchain/env.sh)"

.PHONY: setup env check test lint docs cli-reference demo bench sandbox-up sandbox-down sandbox-reset sandbox-status drift review

setup:
	@toolchain/setup.sh

# Prints the exports; use as: eval "$(make -s env)"
env:
	@toolchain/env.sh

check:
	@toolchain/check.sh

# mypy's cache is kept with the toolchain's, so a new clone checks only what changed.
LINT := ruff check . && ruff format --check . && MYPY_CACHE_DIR="$$GPU_TENANTS_CACHE/mypy" mypy .
lint: setup
	@$(ENV) && $(LINT)

# The tests run on TEST_WORKERS pytest workers, a file at a time each, and each worker brings up a
# sandbox of its own (tests/conftest.py) beside the operator's. tests/budget.py times the whole
# target against the suite's budget.
TEST_WORKERS ?= 2
test: setup
	@$(ENV) && export GPU_TENANTS_TEST_STARTED=$$(date +%s) && $(LINT) \
		&& pytest --numprocesses $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder

# The documentation site (MkDocs) into site/; make test builds it with --strict too.
docs: setup
	@$(ENV) && mkdocs build --strict

# The command reference (docs/cli/ and its navigation in mkdocs.yml), made from the parser;
# make test fails while it is stale.
cli-reference: setup
	@$(ENV) && python -m tenant_stack.commands.reference

sandbox-up: setup
	@$(ENV) && python -m sandbox up

sandbox-down:
	@$(ENV) && python -m sandbox down

# Stops the sandbox and deletes its state (GPU_TENANTS_SANDBOX=test: each of the tests').
sandbox-reset: setup
	@$(ENV) && python -m sandbox reset

sandbox-status:
	@$(ENV) && python -m sandbox status

demo: setup
	@$(ENV) && python -m sandbox up && sandbox/demo.sh

# Fleet work (docs/fleet.md). The backend and the backends' credentials come from the
# environment: CI's, or the sandbox's after eval "$(make -s env)" (whose project the commands
# then use, $GPU_TENANTS_PROJECT, where its stacks' config files live).
TOOLS := eval "$$(toolchain/env.sh --tools)"
BASE ?= origin/main
REVIEW_OUT ?= .

drift: setup
	@$(TOOLS) && python -m tenant_stack drift $(DRIFT_ARGS)

review: setup
	@$(TOOLS) && python -m tenant_stack review --base "$(BASE)" \
		--markdown "$(REVIEW_OUT)/review.md" --json-file "$(REVIEW_OUT)/review.json"

# Figures for docs/benchmarks.md: toolchain build times, onboarding against the engine's floor, the
# fleet's drift check on BENCH_TENANTS generated tenants (default 12) against the per-stack way,
# a directory copy and its restore against tar and S3 alone, tenants of 3, 50 and 200 users,
# and one tenant's whole life from onboarding to the purge.
bench: setup
	@$(ENV) && benchmarks/toolchain_build.sh && python benchmarks/onboarding.py \
		&& python benchmarks/fleet_drift.py && python benchmarks/offboarding_data.py \
		&& python benchmarks/tenant_size.py && python benchmarks/lifecycle.py
