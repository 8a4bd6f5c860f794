# Two commands for a fresh machine: `make demo` runs the whole product locally, `make test` runs every test.
PY ?= python3
VENV := .venv
STAMP := $(VENV)/.installed
# The suite waits on simulated hosts and servers more than it computes: 4 workers halve its wall time on 2 cores.
TEST_WORKERS ?= 4

.PHONY: demo test lint install

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	$(VENV)/bin/pip install -q -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/pitcrew demo

test: $(STAMP)
	@command -v sshd >/dev/null 2>&1 || [ -x /usr/sbin/sshd ] || echo "note: no OpenSSH sshd here; the OpenSSH half of the host contract suite will be skipped (CI installs openssh-server)"
	PITCREW_TEST_PG_URL="$${PITCREW_TEST_PG_URL:-$$(bash scripts/ensure-postgres.sh)}" $(VENV)/bin/pytest -q -n $(TEST_WORKERS) --dist loadgroup $(PYTEST_ARGS)

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports
	$(VENV)/bin/mypy bot handlers services
