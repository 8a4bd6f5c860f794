"""llama.cpp's own lines, as the real `llama-server` wrote them here (tests/data/engines/llamacpp/): readiness,
capacity, version, speculation, and what diagnosis makes of its real failures."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from services.diagnosis import diagnose
from services.diagnosis.signatures import signals_of
from services.engines import engine_named, engine_of_line, engine_version
from services.engines.llamacpp import parse_spec_stats
from services.journal.entries import entry_from_obj

DATA = Path(__file__).resolve().parents[1] / "data" / "engines" / "llamacpp"
LLAMA = engine_named("llamacpp")
UNIT = "llama-server.service"


def lines(name: str) -> list[str]:
    return [ln for ln in (DATA / f"{name}.log").read_text().splitlines() if ln.strip() and not ln.startswith("rc=")]


def test_ready_line_capacity_and_speculation_from_a_real_start_and_request() -> None:
    start = lines("start_and_request")
    ready = [ln for ln in start if LLAMA.is_ready_line(ln)]
    assert ready == ["0.00.637.112 I srv  llama_server: listening on http://127.0.0.1:18231"]
    reader = LLAMA.capacity_reader()
    assert [ln for ln in start if reader.feed(ln)] == [
        "0.00.633.919 I srv    load_model: initializing, n_slots = 2, n_ctx_slot = 2048, kv_unified = 'false'"]
    c = reader.capacity
    assert c is not None and (c.max_running_requests, c.context_len, c.max_total_num_tokens) == (2, 2048, 4096)
    stats = [s for s in map(parse_spec_stats, start) if s is not None]
    assert [(s.rate, s.accepted, s.generated, s.mean_len) for s in stats] == [(0.7069, 41, 58, 2.95)]
    assert all(engine_of_line(ln) is LLAMA for ln in start if ln[:1].isdigit())


def test_the_verbose_start_gives_the_build_and_the_kv_cache() -> None:
    verbose = lines("verbose_start_capacity")
    assert engine_version(verbose[0]) == ("llamacpp", "b1 (0c1e57098)")
    assert engine_version("version: 0.5.0-dev (build 1, commit 0c1e57098)") == ("llamacpp", "b1 (0c1e57098)")
    reader = LLAMA.capacity_reader()
    done = [reader.feed(ln) for ln in verbose]
    assert done.count(True) == 1 and reader.capacity is not None
    assert (reader.capacity.chunked_prefill_size, reader.capacity.kv_cache_gib) == (2048, 90 / 1024)


def _journal(name: str, *, result: str = "exit-code", signal: bool = False) -> list[Any]:
    """The captured lines as one failed invocation of the unit, with systemd 252's lines around them."""
    entries = []
    t = 1_796_400_000_000_000

    def add(msg: str, pid: int, **extra: str) -> None:
        obj: dict[str, Any] = {"__CURSOR": f"c{len(entries)}", "__REALTIME_TIMESTAMP": str(t + 1000 * len(entries)),
                               "MESSAGE": msg, "_PID": str(pid), **extra}
        if pid == 1:
            obj.update({"UNIT": UNIT, "INVOCATION_ID": "inv1", "SYSLOG_IDENTIFIER": "systemd", "_TRANSPORT": "journal"})
        else:
            obj.update({"_SYSTEMD_UNIT": UNIT, "_SYSTEMD_INVOCATION_ID": "inv1", "_TRANSPORT": "stdout",
                        "SYSLOG_IDENTIFIER": "llama-server"})
        entries.append(entry_from_obj(obj))

    add(f"Started {UNIT} - llama.cpp server (SmolLM2-135M-Instruct Q4_1).", 1, JOB_TYPE="start", JOB_RESULT="done")
    for ln in lines(name):
        if not ln.startswith("killed:"):
            add(ln, 4242)
    if result == "oom-kill":
        add(f"{UNIT}: A process of this unit has been killed by the OOM killer.", 1)
    code, status = ("killed", "9/KILL") if signal else ("exited", "1/FAILURE")
    add(f"{UNIT}: Main process exited, code={code}, status={status}", 1, EXIT_CODE=code,
        EXIT_STATUS=status.split("/")[0])
    add(f"{UNIT}: Failed with result '{result}'.", 1)
    return entries


@pytest.mark.parametrize(("name", "cause", "evidence"), [
    ("missing_model", "model_load_failure", "failed to open GGUF file '/tmp/llcap/nope.gguf'"),
    ("truncated_model", "model_load_failure", "data is not within the file bounds"),
    ("port_in_use", "port_in_use", "couldn't bind HTTP server socket, hostname: 127.0.0.1, port: 18377"),
    ("removed_flag", "bad_argument", 'error while handling argument "--draft-max": the argument has been removed'),
    ("mistyped_flag", "bad_argument", "error: invalid argument: --spec-draft-nmax"),
])
def test_real_failures_are_diagnosed_from_the_engines_own_lines(name: str, cause: str, evidence: str) -> None:
    d = diagnose(_journal(name))
    assert d.cause == cause, d.to_json()
    assert any(evidence in e for e in d.evidence), d.evidence


def test_a_context_beyond_memory_max_is_the_oom_killer_with_the_engines_last_lines() -> None:
    d = diagnose(_journal("context_over_memory_max", result="oom-kill", signal=True))
    assert d.cause == "host_oom_kill", d.to_json()
    assert any("n_ctx_seq (65536) > n_ctx_train (8192)" in e for e in d.evidence), d.evidence


def test_signals_of_llamacpp_lines() -> None:
    assert "model_load" in signals_of("0.00.008.022 E gguf_init_from_file: failed to open GGUF file '/m.gguf' "
                                      "(No such file or directory)")
    assert signals_of("0.00.637.112 I srv  llama_server: listening on http://127.0.0.1:18231") == ()
