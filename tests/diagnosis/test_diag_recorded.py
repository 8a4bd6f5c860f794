"""Diagnosis of every recorded journal (tests/data/journals), the field-notes incidents, and the CLI."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from bot.cli import main
from services.diagnosis import CAUSES, Diagnosis, SideEvidence, diagnose
from services.journal.entries import iter_entries

DATA = Path(__file__).parents[1] / "data" / "journals"

EXPECTED = {
    "kv_cache_oom_steps10_loop": "kv_cache_oom",
    "stop_timeout_sigkill_own_stop": "stop_timeout_sigkill",
    "cuda_oom_runtime": "cuda_oom_runtime",
    "cuda_graph_capture_oom": "cuda_graph_capture_oom",
    "gpu_memory_held_by_stale_process": "gpu_memory_held_by_stale_process",
    "port_in_use": "port_in_use",
    "bad_argument": "bad_argument",
    "model_load_failure": "model_load_failure",
    "nccl_failure": "nccl_failure",
    "gpu_hardware_xid": "gpu_hardware_xid",
    "segfault": "segfault",
    "engine_exception": "engine_exception",
    "host_oom_kill": "host_oom_kill",
    "operator_action": "operator_action",
    "healthy": "healthy",
    "unknown_journald_suppressed": "unknown",
}


def run(name: str, *, with_extra: bool = True) -> Diagnosis:
    entries = list(iter_entries((DATA / f"{name}.jsonl").read_bytes().splitlines()))
    extra = DATA / f"{name}.extra.json"
    side = SideEvidence.from_json(json.loads(extra.read_text())) if with_extra and extra.exists() else None
    return diagnose(entries, side)


def test_every_cause_has_a_recorded_journal() -> None:
    assert set(EXPECTED.values()) == set(CAUSES)
    assert {p.stem for p in DATA.glob("*.jsonl")} == set(EXPECTED)
    readme = (DATA / "README.md").read_text()
    for name in EXPECTED:
        assert f"{name}.jsonl" in readme


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_recorded_journal_cause(name: str) -> None:
    d = run(name)
    assert d.cause == EXPECTED[name], d.summary
    assert 0.0 < d.confidence <= 1.0
    assert len(d.evidence) <= 8
    assert d.summary and d.recommendation
    raw = (DATA / f"{name}.jsonl").read_text()
    extra = DATA / f"{name}.extra.json"
    side_text = extra.read_text() if extra.exists() else ""
    times = []
    for line in d.evidence:  # `HH:MM:SS.mmm MESSAGE` quoted exactly (long lines cut), or the unit file's flags
        if line.startswith("unit file: "):
            assert all(flag in side_text for flag in line.removeprefix("unit file: ").split(" --"))
            continue
        stamp, message = line.split(" ", 1)
        assert re.fullmatch(r"\d\d:\d\d:\d\d\.\d{3}", stamp), line
        times.append(stamp)
        quoted = json.dumps(message.removesuffix("…"))[1:-1]
        assert quoted in raw or quoted in side_text
    assert times == sorted(times)  # in time order
    if d.cause not in {"healthy"}:
        assert d.evidence


def test_incident_1_kill_by_own_stop_is_not_a_crash() -> None:
    d = run("stop_timeout_sigkill_own_stop")
    assert d.cause == "stop_timeout_sigkill"
    assert d.restart_loop is False
    assert "Not a crash" in d.summary and "pitcrew's own stop" in d.summary
    assert "it ran at 270-293 tok/s, accept len 5.50" in d.summary
    assert d.ran_before is not None and d.ran_before.accept_len == 5.5
    assert 270 <= (d.ran_before.gen_throughput_tok_s or 0) <= 293
    assert any("State 'stop-sigterm' timed out" in e for e in d.evidence)


def test_incident_2_steps_10_loop_is_kv_cache_oom_naming_the_change() -> None:
    d = run("kv_cache_oom_steps10_loop")
    assert d.cause == "kv_cache_oom" and d.confidence >= 0.9
    assert d.restart_loop is True and d.restarts == 4
    assert d.config_change is not None and "5 -> 10" in d.config_change and "dana" in d.config_change
    assert "--speculative-num-steps 10" in d.summary
    assert any("Not enough memory. Please try to increase --mem-fraction-static" in e for e in d.evidence)
    assert "Roll back" in d.recommendation


def test_steps_10_loop_without_side_evidence_is_still_kv_cache_oom() -> None:
    d = run("kv_cache_oom_steps10_loop", with_extra=False)
    assert d.cause == "kv_cache_oom" and d.restart_loop


def test_stale_holder_wins_over_kv_and_names_the_pid() -> None:
    d = run("gpu_memory_held_by_stale_process")
    assert d.cause == "gpu_memory_held_by_stale_process" and d.stale_pids == (77102,)
    assert "alice" in d.summary
    # without process-tree/cgroup evidence the torch message alone does not establish ownership: nobody is
    # named for ending, and the summary says so
    weak = run("gpu_memory_held_by_stale_process", with_extra=False)
    assert weak.cause != "gpu_memory_held_by_stale_process" and weak.stale_pids == ()
    assert "could not be established" in weak.summary


def test_stop_without_recorded_action_is_less_certain() -> None:
    assert run("stop_timeout_sigkill_own_stop", with_extra=False).confidence < 0.95
    assert run("operator_action", with_extra=False).cause == "operator_action"


def test_xid_needs_the_kernel_log_or_the_gpu_error() -> None:
    assert run("gpu_hardware_xid", with_extra=False).cause == "gpu_hardware_xid"  # nvidia-smi error lines


def test_to_json_shape() -> None:
    js = run("stop_timeout_sigkill_own_stop").to_json()
    assert list(js)[:8] == [  # the issue-6 shape; later fields are only ever added
        "cause",
        "confidence",
        "restart_loop",
        "restarts",
        "summary",
        "evidence",
        "ran_before",
        "recommendation",
    ]
    assert set(js["ran_before"]) == {"accept_len", "gen_throughput_tok_s"}
    assert run("kv_cache_oom_steps10_loop").to_json()["ran_before"] is None
    json.dumps(js)


def test_secrets_in_evidence_are_redacted(tmp_path: Path) -> None:
    lines = (
        (DATA / "engine_exception.jsonl")
        .read_text()
        .replace("RuntimeError: alloc_req_slots", "RuntimeError: token=hf_abcdefghijklmnopqrstuvwxyz alloc_req_slots")
    )
    entries = list(iter_entries(lines.encode().splitlines()))
    d = diagnose(entries)
    assert d.cause == "engine_exception"
    assert not any("hf_abc" in e for e in d.evidence) and any("[REDACTED]" in e for e in d.evidence)


def test_side_evidence_ignores_unknown_keys_and_bad_items() -> None:
    side = SideEvidence.from_json(
        {
            "actions": [{"at": "nope"}, {"at": "2026-03-09T14:00:00Z", "action": "stop"}],
            "nvidia_smi_apps": [{"pid": "x"}, {"pid": "12", "used_memory": "300"}],
            "whatever": 1,
            "kernel_journal": [{"MESSAGE": "NVRM: Xid (PCI:0000:01:00): 13, x"}],
        }
    )
    assert (
        len(side.actions) == 1 and side.nvidia_smi_apps[0].pid == 12 and side.nvidia_smi_apps[0].used_memory_mib == 300
    )
    assert side.kernel_journal[0].transport == "kernel"


def test_empty_input_is_unknown() -> None:
    assert diagnose([]).cause == "unknown"


# --- CLI ------------------------------------------------------------------------------------------


def test_cli_human_and_json() -> None:
    runner = CliRunner()
    f, x = DATA / "kv_cache_oom_steps10_loop.jsonl", DATA / "kv_cache_oom_steps10_loop.extra.json"
    out = runner.invoke(main, ["diagnose", str(f), "--extra", str(x)])
    assert out.exit_code == 0, out.output
    assert "kv_cache_oom" in out.output and "restart loop: yes" in out.output
    out = runner.invoke(main, ["diagnose", str(DATA / "healthy.jsonl"), "--json"])
    assert out.exit_code == 0
    assert json.loads(out.output)["cause"] == "healthy"


def test_cli_bad_files_exit_2(tmp_path: Path) -> None:
    runner = CliRunner()
    out = runner.invoke(main, ["diagnose", str(tmp_path / "missing.jsonl")])
    assert out.exit_code == 2 and "cannot read" in out.output and "Traceback" not in out.output
    junk = tmp_path / "junk.jsonl"
    junk.write_text("not json\n-- cursor: s=1\n")
    out = runner.invoke(main, ["diagnose", str(junk)])
    assert out.exit_code == 2 and "no journal entries" in out.output
    bad_extra = tmp_path / "extra.json"
    bad_extra.write_text("{nope")
    out = runner.invoke(main, ["diagnose", str(DATA / "healthy.jsonl"), "--extra", str(bad_extra)])
    assert out.exit_code == 2 and "not valid JSON" in out.output
    bad_extra.write_text("[1, 2]")
    out = runner.invoke(main, ["diagnose", str(DATA / "healthy.jsonl"), "--extra", str(bad_extra)])
    assert out.exit_code == 2 and "one JSON object" in out.output


def _objects(name: str) -> list[dict[str, object]]:
    import orjson

    out = []
    for raw in (DATA / f"{name}.jsonl").read_bytes().splitlines():
        try:
            out.append(orjson.loads(raw))
        except orjson.JSONDecodeError:
            continue
    return out


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_same_cause_without_invocation_ids_and_in_systemd_257_shape(name: str) -> None:
    from services.journal.entries import entry_from_obj

    extra = DATA / f"{name}.extra.json"
    side = SideEvidence.from_json(json.loads(extra.read_text())) if extra.exists() else None
    no_ids = []
    v257 = []
    for obj in _objects(name):
        stripped = {k: v for k, v in obj.items() if k not in {"_SYSTEMD_INVOCATION_ID", "INVOCATION_ID"}}
        no_ids.append(entry_from_obj(stripped))
        # systemd 254+: no `Stopped` job message between `Scheduled restart job` and the next `Started`
        if not (str(obj.get("MESSAGE", "")).startswith("Stopped ") and obj.get("JOB_TYPE") == "restart"):
            v257.append(entry_from_obj(obj))
    assert diagnose(e for e in no_ids if e is not None).cause == run(name, with_extra=False).cause
    assert diagnose([e for e in v257 if e is not None], side).cause == EXPECTED[name]


def test_orphan_of_an_earlier_instance_holding_gpu_memory() -> None:
    entries = list(iter_entries((DATA / "kv_cache_oom_steps10_loop.jsonl").read_bytes().splitlines()))
    old_scheduler = 1840101 + 212  # the steps=5 instance's scheduler, still holding memory
    side = SideEvidence.from_json({"nvidia_smi_apps": [{"pid": old_scheduler, "process_name": "sglang::scheduler",
                                                        "used_memory": 91000}]})
    d = diagnose(entries, side)
    assert d.cause == "gpu_memory_held_by_stale_process" and d.stale_pids == (old_scheduler,)


def _entries(name: str) -> list[object]:
    return list(iter_entries((DATA / f"{name}.jsonl").read_bytes().splitlines()))


def test_deliberate_restart_then_serving_is_operator_action() -> None:
    # docs/DIAGNOSIS.md: operator_action applies even when the unit ends healthy after the restart
    side = SideEvidence.from_json(json.loads((DATA / "operator_action.extra.json").read_text()))
    d = diagnose([*_entries("operator_action"), *_entries("healthy")], side)  # type: ignore[list-item]
    assert d.cause == "operator_action" and "deliberately" in d.summary and d.ran_before is not None
    assert not d.restart_loop


def test_kernel_oom_of_another_process_is_not_the_units() -> None:
    oom = "Out of memory: Killed process 999 (python3) total-vm:1kB, anon-rss:1kB, file-rss:0kB, shmem-rss:0kB"
    side = SideEvidence.from_json({"kernel_journal": [{"MESSAGE": oom, "__REALTIME_TIMESTAMP": "0"}]})
    assert diagnose(_entries("unknown_journald_suppressed"), side).cause == "unknown"  # type: ignore[arg-type]
    assert run("host_oom_kill", with_extra=False).cause == "host_oom_kill"  # systemd's own OOM message suffices
