"""The reasoning of the reworked diagnoser (issue 12) on small journals written for one point each: failures
without a failed exit, phases of a CUDA OOM, wrappers vs root exceptions, ownership of GPU memory, hardware
with the unit recovered, noise, loops, evidence shape, and the signature table's own hygiene."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from services.diagnosis import CAUSES, SideEvidence, diagnose
from services.diagnosis.decide import RULES
from services.diagnosis.signatures import SIGNATURES, signals_of, strip_engine_prefix
from services.journal import JournalEntry
from services.journal.entries import entry_from_obj

UNIT = "vllm.service"
T0 = 1_750_000_000_000_000
CORPUS = Path(__file__).resolve().parents[1] / "data" / "incidents"


class Journal:
    """Builds `journalctl -o json`-shaped entries for one unit, invocation by invocation."""

    def __init__(self) -> None:
        self.entries: list[JournalEntry] = []
        self.inv = 0

    def _add(self, t: float, pid: int, msg: str, **extra: str) -> None:
        us = T0 + int(t * 1e6)
        obj: dict[str, Any] = {"__CURSOR": f"c{len(self.entries)}", "__REALTIME_TIMESTAMP": str(us),
                               "MESSAGE": msg, "_PID": str(pid), **extra}
        if pid == 1:
            obj.update({"UNIT": UNIT, "INVOCATION_ID": f"inv{self.inv}", "SYSLOG_IDENTIFIER": "systemd",
                        "_TRANSPORT": "journal"})
        else:
            obj.update({"_SYSTEMD_UNIT": UNIT, "_SYSTEMD_INVOCATION_ID": f"inv{self.inv}", "_TRANSPORT": "stdout"})
        entry = entry_from_obj(obj)
        assert entry is not None
        self.entries.append(entry)

    def start(self, t: float) -> Journal:
        self.inv += 1
        self._add(t, 1, f"Started {UNIT} - vLLM OpenAI server.", JOB_TYPE="start", JOB_RESULT="done")
        return self

    def line(self, t: float, msg: str, pid: int = 4242) -> Journal:
        self._add(t, pid, msg)
        return self

    def system(self, t: float, msg: str, **extra: str) -> Journal:
        self._add(t, 1, f"{UNIT}: {msg}", **extra)
        return self

    def serving(self, t: float, pid: int = 4242) -> Journal:
        self.line(t, "(APIServer pid=4242) INFO:     Application startup complete.", pid)
        for i in range(3):
            self.line(t + 10 + 10 * i, "(APIServer pid=4242) INFO 06-30 15:00:53 [loggers.py:127] Engine 000: Avg "
                      "prompt throughput: 800.0 tokens/s, Avg generation throughput: 400.0 tokens/s, Running: 12 "
                      "reqs, Waiting: 0 reqs, GPU KV cache usage: 10.0%", pid)
        return self

    def failed_exit(self, t: float, restart: int | None = None) -> Journal:
        self.system(t, "Main process exited, code=exited, status=1/FAILURE", EXIT_CODE="exited", EXIT_STATUS="1")
        self.system(t, "Failed with result 'exit-code'.")
        if restart is not None:
            self.system(t + 5, f"Scheduled restart job, restart counter is at {restart}.")
        return self


def _v1_fatal(j: Journal, t: float, error: str) -> Journal:
    j.line(t, "(EngineCore_DP0 pid=4343) ERROR 06-30 15:01:24 [core.py:866] EngineCore encountered a fatal error.",
           4343)
    j.line(t, "(EngineCore_DP0 pid=4343) ERROR 06-30 15:01:24 [core.py:866] Traceback (most recent call last):", 4343)
    j.line(t, '(EngineCore_DP0 pid=4343) ERROR 06-30 15:01:24 [core.py:866]   File "/x/vllm/v1/engine/core.py", '
           "line 1129, in run_engine_core", 4343)
    j.line(t, f"(EngineCore_DP0 pid=4343) ERROR 06-30 15:01:24 [core.py:866] {error}", 4343)
    j.line(t, "(APIServer pid=4242) ERROR 06-30 15:01:24 [async_llm.py:485] vllm.v1.engine.exceptions."
           "EngineDeadError: EngineCore encountered an issue. See stack trace (above) for the root cause.")
    j.system(t + 4, "Deactivated successfully.")
    return j


def test_vllm_v1_exit_0_after_a_fatal_error_is_an_incident_with_its_root_exception() -> None:
    j = _v1_fatal(Journal().start(0).serving(40), 80,
                  "torch.AcceleratorError: CUDA error: an illegal memory access was encountered")
    d = diagnose(j.entries)
    assert d.cause == "engine_exception" and "AcceleratorError" in d.summary
    assert any("illegal memory access" in e for e in d.evidence)
    assert not any("  File " in e for e in d.evidence)  # no wall of traceback


def test_the_phase_of_a_cuda_oom_decides_its_label() -> None:
    oom = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 50.00 MiB."
    runtime = _v1_fatal(Journal().start(0).serving(40), 80, oom)
    assert diagnose(runtime.entries).cause == "cuda_oom_runtime"
    capture = (Journal().start(0)
               .line(20, "(EngineCore_DP0 pid=4343) INFO 06-30 15:00:24 [default_loader.py:267] Loading weights took "
                     "15.21 seconds", 4343)
               .line(30, "(EngineCore_DP0 pid=4343) \rCapturing CUDA graph shapes:   9%| 6/67", 4343))
    capture.line(31, f"(EngineCore_DP0 pid=4343) ERROR 06-30 15:00:31 [core.py:1] {oom}", 4343).failed_exit(32)
    assert diagnose(capture.entries).cause == "cuda_graph_capture_oom"
    sizing = (Journal().start(0)
              .line(20, "INFO 06-30 15:00:24 [default_loader.py:267] Loading weights took 15.21 seconds")
              .line(25, oom).failed_exit(26))
    assert diagnose(sizing.entries).cause == "kv_cache_oom"


def test_the_v0_wrapper_does_not_hide_the_error_before_it() -> None:
    j = (Journal().start(0)
         .line(20, "ERROR 06-10 09:00:34 [worker_base.py:620] Error executing method 'initialize_cache'.")
         .line(20, "ERROR 06-10 09:00:34 [worker_base.py:620] KeyError: 'model.layers.0.mlp.experts.w2_weight'")
         .line(21, "RuntimeError: Engine process failed to start. See stack trace for the root cause.")
         .failed_exit(22))
    d = diagnose(j.entries)
    assert d.cause == "engine_exception" and "KeyError" in d.summary
    assert any("KeyError" in e for e in d.evidence)


def _start_oom(pid_in_message: int) -> Journal:
    return (Journal().start(0)
            .line(20, "INFO 06-30 15:00:24 [default_loader.py:267] Loading weights took 15.21 seconds")
            .line(25, f"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. Process "
                      f"{pid_in_message} has 70.00 GiB memory in use.")
            .failed_exit(26))


def test_ownership_of_gpu_memory() -> None:
    foreign = {"nvidia_smi_apps": [{"pid": 900, "process_name": "python3", "used_memory": 70000}],
               "process_info": [{"pid": 900, "ppid": 880, "user": "bob",
                                 "cgroup": "/user.slice/user-1002.slice/session-4.scope", "cmdline": "python3 nb.py"}],
               "systemctl_show": {"MainPID": "0"}}
    d = diagnose(_start_oom(900).entries, SideEvidence.from_json(foreign))
    assert d.cause == "gpu_memory_held_by_stale_process" and d.stale_pids == (900,) and "bob" in d.summary
    # the same pid as a child of MainPID inside the unit's cgroup is the unit's own: never stale
    own = {"nvidia_smi_apps": [{"pid": 900, "process_name": "VLLM::EngineCore", "used_memory": 70000}],
           "process_info": [{"pid": 4242, "ppid": 1, "cgroup": f"/system.slice/{UNIT}"},
                            {"pid": 900, "ppid": 4242, "cgroup": f"/system.slice/{UNIT}"}],
           "systemctl_show": {"MainPID": "4242"}}
    d = diagnose(_start_oom(900).entries, SideEvidence.from_json(own))
    assert d.cause == "kv_cache_oom" and d.stale_pids == ()
    # without process-tree/cgroup evidence: no holder named, and the summary says why
    d = diagnose(_start_oom(900).entries)
    assert d.cause == "kv_cache_oom" and d.stale_pids == () and "could not be established" in d.summary
    assert "Stop" not in d.recommendation and "900" not in d.recommendation


def test_a_zombie_listed_by_nvidia_smi_is_not_a_holder_and_a_holder_is_named_once() -> None:
    """Seen in the suite: nvidia-smi listed the previous engine's `VLLM::EngineCore` once per GPU a moment before it
    exited; `ps` a moment later showed it `<defunct>`. Its memory is gone with its CUDA context: not a stale holder."""
    zombie = {"nvidia_smi_apps": [{"pid": 900, "process_name": "VLLM::EngineCore", "used_memory": 512}] * 3,
              "process_info": [{"pid": 900, "ppid": 1, "user": "root", "cgroup": "/",
                                "cmdline": "[VLLM::EngineCor] <defunct>"}],
              "systemctl_show": {"MainPID": "0"}}
    d = diagnose(_start_oom(4343).entries, SideEvidence.from_json(zombie))
    assert d.cause == "kv_cache_oom" and d.stale_pids == (), d.summary
    alive = {**zombie, "process_info": [{**zombie["process_info"][0], "cmdline": "python3 -m vllm serve /m"}]}
    d = diagnose(_start_oom(4343).entries, SideEvidence.from_json(alive))
    assert d.cause == "gpu_memory_held_by_stale_process" and d.stale_pids == (900,)
    assert d.summary.count("pid 900") == 1, d.summary


def test_a_runtime_oom_is_not_explained_by_a_holder_from_before_the_start() -> None:
    j = _v1_fatal(Journal().start(0).serving(40), 80, "torch.OutOfMemoryError: CUDA out of memory.")
    side = {"nvidia_smi_apps": [{"pid": 900, "process_name": "python3", "used_memory": 7000}],
            "process_info": [{"pid": 900, "ppid": 1, "user": "bob", "cgroup": "/user.slice/x.scope"}]}
    d = diagnose(j.entries, SideEvidence.from_json(side))
    assert d.cause == "cuda_oom_runtime" and d.stale_pids == ()


def _xid(t: float, code: int, text: str) -> dict[str, str]:
    return {"__CURSOR": f"k{t}", "__REALTIME_TIMESTAMP": str(T0 + int(t * 1e6)), "_TRANSPORT": "kernel",
            "MESSAGE": f"NVRM: Xid (PCI:0000:9b:00): {code}, pid=4343, name=VLLM::EngineCor, {text}"}


def test_xid_wins_also_when_the_unit_recovered_but_not_from_before_the_window() -> None:
    j = Journal().start(0).serving(40)
    d = diagnose(j.entries, SideEvidence.from_json({"kernel_journal": [_xid(60, 94, "Contained ECC error")]}))
    assert d.cause == "gpu_hardware_xid" and "Xid 94" in d.summary
    assert any("Contained ECC error" in e for e in d.evidence)
    old = diagnose(j.entries, SideEvidence.from_json({"kernel_journal": [_xid(-7200, 94, "Contained ECC error")]}))
    assert old.cause == "healthy"


def test_client_errors_and_suppressed_lines_while_serving_are_not_an_incident() -> None:
    j = Journal().start(0).serving(40)
    j.line(50, '(APIServer pid=4242) INFO:     10.0.3.7:52814 - "POST /v1/chat/completions HTTP/1.1" 400 Bad Request')
    j.line(51, "(APIServer pid=4242) ERROR 06-30 15:00:51 [serving_chat.py:1] ValueError: This model's maximum "
           "context length is 32768 tokens. However, you requested 40000 tokens.")
    j._add(52, 300, f"Suppressed 1234 messages from {UNIT}", _TRANSPORT="driver", SYSLOG_IDENTIFIER="systemd-journald")
    j.serving(60)
    d = diagnose(j.entries)
    assert d.cause == "healthy" and not d.restart_loop


def test_a_loop_is_only_systemds_automatic_restarts() -> None:
    j = Journal()
    for i in range(3):
        j.start(30 * i).line(30 * i + 10, "ValueError: No available memory for the cache blocks.")
        j.failed_exit(30 * i + 11, restart=i + 1)
    d = diagnose(j.entries)
    assert d.cause == "kv_cache_oom" and d.restart_loop
    assert any("restart counter is at 3" in e for e in d.evidence)
    once = Journal().start(0).line(10, "ValueError: No available memory for the cache blocks.").failed_exit(11, 1)
    once.start(20).line(30, "ValueError: No available memory for the cache blocks.").failed_exit(31)
    assert not diagnose(once.entries).restart_loop  # one automatic restart is not a loop


def test_evidence_is_at_most_8_timestamped_lines_in_time_order() -> None:
    j = Journal()
    for i in range(6):
        j.start(30 * i).line(30 * i + 10, "Traceback (most recent call last):")
        j.line(30 * i + 10, '  File "/x/vllm/engine/llm_engine.py", line 367, in _init_cache')
        j.line(30 * i + 10, "ValueError: No available memory for the cache blocks.").failed_exit(30 * i + 11, i + 1)
    d = diagnose(j.entries)
    assert 1 <= len(d.evidence) <= 8
    stamps = [e.split(" ", 1)[0] for e in d.evidence if not e.startswith("unit file:")]
    assert stamps == sorted(stamps) and all(len(s) == 12 and s[2] == ":" for s in stamps)
    assert set(json.loads(json.dumps(d.to_json()))) >= {"cause", "confidence", "restart_loop", "restarts", "summary",
                                                         "evidence", "ran_before", "recommendation", "phase"}


def test_signature_rows_cite_a_case_and_the_decision_table_covers_every_label() -> None:
    for row in SIGNATURES:
        if row.case.startswith("llamacpp/"):  # lines the real llama.cpp server wrote here
            log = CORPUS.parents[0] / "engines" / f"{row.case}.log"
            assert row.seen == "llamacpp b1 (0c1e57098)" and log.exists(), row
            assert any(row.pattern.search(strip_engine_prefix(ln) if row.on_text else ln)
                       for ln in log.read_text().splitlines()), row
            continue
        assert row.case.startswith("FORMATS") or (CORPUS / row.case / "expected.json").exists(), row
        if not row.case.startswith("FORMATS"):  # `seen` is the cited case's engine and version
            e = json.loads((CORPUS / row.case / "expected.json").read_text())
            assert row.seen == f"{e['engine']} {e['engine_version']}", row
    assert [r.label for r in RULES] == list(dict.fromkeys(r.label for r in RULES))
    assert {r.label for r in RULES} == set(CAUSES)
    assert all(r.tie_break for r in RULES)


def test_engine_prefixes_are_stripped_before_matching_exception_lines() -> None:
    line = "\x1b[1;36m(EngineCore_DP0 pid=1)\x1b[0;0m ERROR 06-30 15:01:24 [core.py:866] torch.OutOfMemoryError: x"
    assert strip_engine_prefix(line) == "torch.OutOfMemoryError: x"
    assert strip_engine_prefix("ERROR 06-30 15:01:24 core.py:866] KeyError: 'a'") == "KeyError: 'a'"
    assert strip_engine_prefix("[2026-03-09 14:03:49 TP0] ValueError: b") == "ValueError: b"
    assert "exception_line" in signals_of(line) and "cuda_oom" in signals_of(line)
    assert signals_of("[2026-03-09 14:03:49 TP0] Decode batch, #running-req: 1, #token: 9") == ()


def test_a_loop_needs_the_same_failure_each_time() -> None:
    j = Journal()
    errors = ["ValueError: No available memory for the cache blocks.",
              "OSError: [Errno 98] Address already in use",
              "ValueError: No available memory for the cache blocks."]
    for i, err in enumerate(errors):
        j.start(30 * i).line(30 * i + 10, err).failed_exit(30 * i + 11, restart=i + 1)
    assert not diagnose(j.entries).restart_loop  # three different failures in a row are not a loop


def test_a_port_holder_is_named_only_when_it_is_not_the_units_own() -> None:
    j = Journal().start(0).line(10, "OSError: [Errno 98] Address already in use").failed_exit(11)
    d = diagnose(j.entries)
    assert d.cause == "port_in_use" and d.stale_pids == () and "ss -ltnp" in d.recommendation
    side = {"ss_listen": [{"local": "0.0.0.0:8000", "pid": 777, "process": "python3", "user": "eve"}],
            "process_info": [{"pid": 777, "ppid": 1, "user": "eve", "cgroup": "/user.slice/s.scope"}]}
    d = diagnose(j.entries, SideEvidence.from_json(side))
    assert d.stale_pids == (777,) and "eve" in d.summary


def test_a_reset_needing_xid_is_named_with_its_text() -> None:
    j = Journal().start(0).serving(40)
    xid = _xid(60, 154, "GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)")
    d = diagnose(j.entries, SideEvidence.from_json({"kernel_journal": [xid]}))
    assert d.cause == "gpu_hardware_xid" and d.confidence >= 0.9 and "GPU Reset Required" in d.summary


def test_a_v0_engine_that_died_without_a_cause_is_unknown_not_healthy() -> None:
    j = (Journal().start(0).serving(40)
         .line(80, "ERROR 06-28 21:01:14 client.py:300] RuntimeError('Engine process (pid 314860) died.')")
         .line(80, "ERROR 06-28 21:01:15 client.py:300] NoneType: None")
         .line(81, "CRITICAL 06-28 21:01:15 launcher.py:101] MQLLMEngine is already dead, terminating server process")
         .system(83, "Deactivated successfully."))
    d = diagnose(j.entries)
    assert d.cause == "unknown"
    assert any("MQLLMEngine is already dead" in e or "Engine process (pid 314860) died" in e for e in d.evidence)
    with_cause = (Journal().start(0).serving(40)
                  .line(79, "ERROR 06-28 21:01:13 engine.py:137] KeyError: 'model.layers.0.mlp'")
                  .line(80, "ERROR 06-28 21:01:14 client.py:250] RuntimeError: Engine loop has died")
                  .line(81, "CRITICAL 06-28 21:01:15 launcher.py:101] MQLLMEngine is already dead, terminating "
                        "server process")
                  .system(83, "Deactivated successfully."))
    d = diagnose(with_cause.entries)
    assert d.cause == "engine_exception" and "KeyError" in d.summary  # the wrapper never hides the root


def test_option_validation_before_any_model_work_is_a_bad_argument() -> None:
    def start_failure(*lines: str) -> str:
        j = Journal().start(0).line(2, "INFO 06-01 05:00:03 api_server.py:727] args: Namespace(model='m')")
        for i, text in enumerate(lines):
            j.line(3 + i / 10, text)
        return diagnose(j.failed_exit(4).entries).cause

    assert start_failure("Traceback (most recent call last):",
                         "ValueError: max_num_batched_tokens (4096) is smaller than max_model_len (32768).") \
        == "bad_argument"
    assert start_failure("pydantic_core._pydantic_core.ValidationError: 1 validation error for SchedulerConfig",
                         "  Value error, max_num_batched_tokens (2048) is smaller than max_model_len (40960). "
                         "[type=value_error, input_value=ArgsKwargs(()), input_type=ArgsKwargs]") == "bad_argument"
    # pydantic's own field names in the tail are not an option; a message without one is not argument validation
    assert start_failure("pydantic_core._pydantic_core.ValidationError: 1 validation error for ModelConfig",
                         "  Value error, Expecting value: line 1 column 1 (char 0) [type=value_error, "
                         "input_value=ArgsKwargs(()), input_type=ArgsKwargs]") == "engine_exception"
    # after the engine started loading the model, the same exception is the engine's, not the command line's
    j = (Journal().start(0).line(2, "INFO 06-01 05:00:05 llm_engine.py:70] Initializing an LLM engine with config: m")
         .line(3, "ValueError: max_num_batched_tokens (4096) is smaller than max_model_len (32768).").failed_exit(4))
    assert diagnose(j.entries).cause == "engine_exception"
    # the hub failing inside the same config check is the model, not the option
    assert start_failure("ValueError: Invalid repository ID or local directory specified: '/models'.") \
        == "model_load_failure"


def test_a_watchdog_relaying_a_cuda_error_is_not_a_collective_failure() -> None:
    relay = (Journal().start(0).serving(40)
             .line(80, "terminate called after throwing an instance of 'c10::DistBackendError'", 4343)
             .line(80, "  what():  [PG ID 2 PG GUID 3 Rank 1] Process group watchdog thread terminated with exception: "
                   "CUDA error: an illegal memory access was encountered", 4343))
    assert diagnose(relay.entries).cause == "engine_exception"
    nccl = (Journal().start(0).serving(40)
            .line(80, "torch.distributed.DistBackendError: NCCL error in: ../NCCLUtils.hpp:275, unhandled system "
                  "error", 4343).failed_exit(81))
    assert diagnose(nccl.entries).cause == "nccl_failure"


def test_memory_advice_names_the_units_own_engine_flags() -> None:
    oom = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 50.00 MiB."
    vllm = _v1_fatal(Journal().start(0).serving(40), 80, oom)
    advice = diagnose(vllm.entries).recommendation
    assert "--gpu-memory-utilization" in advice and "--max-num-seqs" in advice
    assert "--mem-fraction-static" not in advice and "--max-running-requests" not in advice
    sgl = (Journal().start(0)
           .line(20, "[2025-06-29 15:00:42 TP0] Load weight end. type=Qwen2ForCausalLM, avail mem=17.04 GB")
           .line(21, "[2025-06-29 15:00:43 TP0] RuntimeError: Not enough memory. Please try to increase "
                 "--mem-fraction-static.").failed_exit(22))
    d = diagnose(sgl.entries, side=SideEvidence(unit_file="ExecStart=python -m sglang.launch_server --model m\n"))
    assert d.cause == "kv_cache_oom"
    assert "--mem-fraction-static" in d.recommendation and "--gpu-memory-utilization" not in d.recommendation


def test_side_evidence_that_could_not_be_read_is_said_in_the_summary() -> None:
    """The gatherer's `errors` (its probes' exec failed or timed out): the causes only they decide (a stale GPU
    holder, the OOM killer, a taken port) cannot be named, and every diagnosis built on it says why — an incident's
    alert and a failed job's answer alike — instead of a bare cause."""
    entries = _start_oom(900).entries
    failed = SideEvidence.from_json({"errors": ["`bash` on host 'gpu-1' did not finish within 6s; the remote "
                                                "process was ended."]})
    assert failed.errors == ("`bash` on host 'gpu-1' did not finish within 6s; the remote process was ended.",)
    d = diagnose(entries, failed)
    assert d.cause == "kv_cache_oom"  # the engine's own lines still name theirs
    assert d.summary.endswith(" The host's side evidence (systemctl, nvidia-smi, ps, the kernel's journal) could not "
                              "be read in full: `bash` on host 'gpu-1' did not finish within 6s; the remote process "
                              "was ended."), d.summary
    # read in full: no such sentence
    read = SideEvidence.from_json({"systemctl_show": {"MainPID": "0"}})
    assert read.errors == () and "side evidence" not in diagnose(entries, read).summary
