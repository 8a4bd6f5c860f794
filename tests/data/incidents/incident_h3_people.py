"""holdout3 cases, theme `people` (see incident_h3_base.py): scored only, never tuned on.

Deliberate actions and noise: stops/restarts by people or pitcrew (operator_action), stops that run into
TimeoutStopSec (stop_timeout_sigkill), and servers that keep serving while they log client errors (healthy).
The engine's own shutdown / client-error lines are quoted from each case's public report; the people/audit side
(`actions`), systemd's and journald's lines and the engines' start-up/serving templates are ours (incident_kit,
incident_scenes, FORMATS.md). Labels follow docs/DIAGNOSIS.md "Labels" only.
"""

from __future__ import annotations

from incident_h3_base import Case, case3, expect3
from incident_kit import Inv
from incident_scenes import (
    NOT_HEALTHY,
    sglang_boot,
    sglang_decode,
    sglang_drain,
    vllm_boot,
    vllm_clean_shutdown,
    vllm_serve,
)


def _sigkill_left(c: Case, inv: Inv, roles: list[str], *, after: float = 90.0) -> None:
    """`State 'stop-sigterm' timed out. Killing.` + one SIGKILL line per process still in the cgroup (main gone)."""
    c.mgr(f"{c.unit}: State 'stop-sigterm' timed out. Killing.", inv, dt=after, prio=4, func="service_dispatch_timer")
    for role in roles:
        pid, comm, _ = c._proc(inv, role)
        c.mgr(f"{c.unit}: Killing process {pid} ({comm}) with signal SIGKILL.", inv, prio=5, func="log_kill")


# ============================== operator_action ================================================


@case3
def op3_vllm_082_cancel_stuck_start_fatal_signal() -> Case:
    c = Case("op3_vllm_082_cancel_stuck_start_fatal_signal", "vllm", "0.8.2", day=3, hour=5, tp=2,
             model="/models/c4ai-command-a-03-2025")
    inv = c.start()
    vllm_boot(c, inv, "load")
    t = c.stopping(inv, "stop", dt=1180.0)
    c.app(inv, c.vlog("CRITICAL", "multiproc_executor.py:49", "MulitprocExecutor got fatal signal from worker "
                      "processes, shutting down. See stack trace above for root cause issue."), "engine", dt=0.4)
    c.app(inv, c.vlog("CRITICAL", "core_client.py:269", "Got fatal signal from worker processes, shutting down. "
                      "See stack trace above for root cause issue."), dt=0.05)
    c.exit(inv, "killed", "9", cpu="3min 41.207s", dt=0.3)
    c.stopped(inv)
    c.extra = {"actions": [{"at": c.iso(t - 0.4), "who": "mru", "action": "stop",
                            "detail": "vllm 0.8.2 start stuck for 20 min loading c4ai-command-a, cancelling"}],
               "systemctl_show": {"ActiveState": "failed", "SubState": "failed", "MainPID": "0", "Result": "signal",
                                  "NRestarts": "0"}}
    return expect3(c, "operator_action", False, ["Stopping vllm.service"],
                   ["engine_exception", "unknown", "host_oom_kill", "nccl_failure", "model_load_failure"],
                   "https://github.com/vllm-project/vllm/issues/16777",
                   "vLLM 0.8.2 V1, TP=2: the reporter's start got stuck and they cancelled it on purpose; the two "
                   "CRITICAL `got fatal signal from worker processes` lines are verbatim from the report (0.8.2). "
                   "Ours: "
                   "the cancel is a `systemctl stop` by a person (audit `stop`), the workers get systemd's SIGTERM "
                   "first, "
                   "the API server SIGKILLs its own tree (code=killed, status=9 without any stop-sigterm timeout), "
                   "start-up template lines and the 20 min of silence before the stop.")


@case3
def op3_vllm_025_systemctl_stop_spurious_enginedead() -> Case:
    c = Case("op3_vllm_025_systemctl_stop_spurious_enginedead", "vllm", "0.25.0", day=4, hour=5,
             model="/models/Qwen3-Embedding-0.6B")
    inv = c.start()
    v = c.vlog
    c.app(inv, v("INFO", "api_server.py:1839", f"vLLM API server version {c.version}"), dt=4.0)
    c.app(inv, v("INFO", "utils.py:233", f"non-default args: {{'model_tag': '{c.model}', 'runner': 'pooling', "
                 "'max_model_len': 1024, 'gpu_memory_utilization': 0.25, 'enforce_eager': True}"))
    c.app(inv, v("INFO", "core.py:77", f"Initializing a V1 LLM engine (v{c.version}) with config: model='{c.model}', "
                 "dtype=torch.float32, max_seq_len=1024, tensor_parallel_size=1, enforce_eager=True"), "engine", dt=3.0)
    c.app(inv, v("INFO", "gpu_model_runner.py:2602", f"Starting to load model {c.model}..."), "engine", dt=2.0)
    c.app(inv, v("INFO", "default_loader.py:267", "Loading weights took 0.46 seconds"), "engine", dt=0.6)
    c.app(inv, v("INFO", "gpu_model_runner.py:2653", "Model loading took 1.1201 GiB and 0.614302 seconds"), "engine")
    c.app(inv, v("INFO", "core.py:210", "init engine (profile, create kv cache, warmup model) took 3.87 seconds"),
          "engine", dt=3.2)
    c.app(inv, v("INFO", "api_server.py:1912", "Starting vLLM API server 0 on http://0.0.0.0:8000"), dt=0.5)
    c.many(inv, [f"INFO:     Started server process [{inv.main}]", "INFO:     Waiting for application startup.",
                 "INFO:     Application startup complete."])
    for i in range(4):
        c.app(inv, f'INFO:     10.0.7.{11 + i}:4{3100 + 17 * i} - "POST /v1/embeddings HTTP/1.1" 200 OK', dt=3.0)
    t = c.stopping(inv, "stop", dt=540.0)
    c.app(inv, c.vlog("INFO", "launcher.py:100", "[shutdown] API server: shutdown triggered"), dt=0.02)
    c.app(inv, c.vlog("ERROR", "async_llm.py:704", "AsyncLLM output_handler failed."), dt=0.3)
    c.app(inv, c.vlog("ERROR", "async_llm.py:704", "Traceback (most recent call last):"))
    c.app(inv, c.vlog("ERROR", "async_llm.py:704", "vllm.v1.engine.exceptions.EngineDeadError: EngineCore "
                      "encountered an issue. See stack trace (above) for the root cause."))
    vllm_clean_shutdown(c, inv)
    c.clean_exit(inv)
    c.stopped(inv)
    c.extra = {"actions": [{"at": c.iso(t - 0.2), "who": "pitcrew", "action": "stop",
                            "detail": "embedding node drained for host maintenance"}],
               "systemctl_show": {"ActiveState": "inactive", "SubState": "dead", "MainPID": "0", "Result": "success",
                                  "NRestarts": "0"}}
    return expect3(c, "operator_action", False, ["Stopping vllm.service"],
                   ["engine_exception", "unknown", "healthy", "cuda_oom_runtime"],
                   "https://github.com/vllm-project/vllm/issues/48745",
                   "The report: `vllm serve Qwen3-Embedding-0.6B --runner pooling` as a systemd unit, stopped with "
                   "`systemctl stop` while idle, intermittently logs `AsyncLLM output_handler failed.` + "
                   "`EngineDeadError` "
                   "inside an orderly shutdown that completes normally. `shutdown triggered`, the ERROR header and the "
                   "EngineDeadError line are verbatim; the version is not in the excerpt (0.25.0 is ours, the release "
                   "of the report's month); the start-up lines (template, report's flags), the uvicorn shutdown "
                   "lines, the stop by pitcrew "
                   "(audit) and systemd's lines are ours. Exit 0, unit stopped.")


@case3
def op3_sgl_057_restart_after_mem_fraction_change() -> Case:
    c = Case("op3_sgl_057_restart_after_mem_fraction_change", "sglang", "0.5.7", day=5, hour=5,
             model="/models/Qwen2.5-32B-Instruct")
    inv = c.start()
    sglang_boot(c, inv)
    sglang_decode(c, inv, 3)
    t = c.stopping(inv, "restart", dt=30.0)
    sglang_drain(c, inv, 1, remaining=3)
    c.app(inv, c.slog("Gracefully exiting... Remaining number of requests 0. Remaining requests "
                      "remaining_rids=[].", None), dt=5.0)
    c.exit(inv, "killed", "9", cpu="41min 12.882s", dt=0.2)
    c.stopped(inv, "restart")
    inv2 = c.start(dt=0.2, manual=True)
    sglang_boot(c, inv2, avail=78.54)
    sglang_decode(c, inv2, 4)
    c.extra = {"actions": [{"at": c.iso(t - 1.5), "who": "lena", "action": "restart",
                            "detail": "--mem-fraction-static 0.85 -> 0.88 in the unit (daemon-reload), restart"}],
               "unit_file": "[Service]\nExecStart=/opt/sglang/bin/python3 -m sglang.launch_server --model-path "
                            "/models/Qwen2.5-32B-Instruct --mem-fraction-static 0.88 --host 0.0.0.0 --port 30000\n"
                            "Restart=on-failure\nTimeoutStopSec=90\n",
               "systemctl_show": {"ActiveState": "active", "SubState": "running", "MainPID": str(inv2.main),
                                  "NRestarts": "0", "Result": "success"}}
    return expect3(c, "operator_action", False,
                   ["SIGTERM received. signum=None frame=None. Draining requests and shutting down..."],
                   ["host_oom_kill", "segfault", "stop_timeout_sigkill", "engine_exception", "unknown"],
                   "https://github.com/sgl-project/sglang/pull/16484",
                   "The PR describes SGLang's SIGTERM path before its fix: TokenizerManager.sigterm_watchdog drains, "
                   "then "
                   "kill_process_tree(os.getpid(), include_parent=True) SIGKILLs every process including itself, so "
                   "the "
                   "exit is 137 (code=killed, status=9/KILL) and looks like a crash/OOM. Ours: a person changes "
                   "--mem-fraction-static and runs `systemctl restart` (audit `restart`, unit file), the drain lines "
                   "(FORMATS a.4 template), no OOM in any log, and the unit serving again at the end.")


# ============================== stop_timeout_sigkill ===========================================


@case3
def stop3_vllm_0102_enginecore_stuck_in_uvm() -> Case:
    c = Case("stop3_vllm_0102_enginecore_stuck_in_uvm", "vllm", "0.10.2", day=6, hour=5,
             model="/models/Qwen3-8B")
    inv = c.start()
    vllm_boot(c, inv)
    vllm_serve(c, inv, 3)
    t = c.stopping(inv, "stop", dt=12.0)
    c.app(inv, c.vlog("INFO", "launcher.py:80", "Shutting down FastAPI HTTP server."), dt=0.05)
    vllm_clean_shutdown(c, inv)
    _sigkill_left(c, inv, ["engine"])
    c.mgr(f"{c.unit}: Processes still around after SIGKILL. Ignoring.", inv, dt=90.0, prio=4,
          func="service_dispatch_timer")
    c.mgr(f"{c.unit}: Failed with result 'timeout'.", inv, prio=4, mid="result", func="unit_log_failure",
          UNIT_RESULT="timeout")
    c.stopped(inv)
    c.consumed(inv, "1h 2min 7.330s")
    eng = c._proc(inv, "engine")[0]
    c.extra = {"actions": [{"at": c.iso(t - 0.3), "who": "koovie", "action": "stop", "detail": "done with the batch"}],
               "process_info": [{"pid": eng, "ppid": 1, "user": "vllm", "cgroup": f"/system.slice/{c.unit}",
                                 "cmdline": "VLLM::EngineCore", "state": "R", "started": c.iso(inv.start_t + 3)}],
               "systemctl_show": {"ActiveState": "failed", "SubState": "failed", "MainPID": "0", "Result": "timeout",
                                  "NRestarts": "0"}}
    return expect3(c, "stop_timeout_sigkill", False, ["State 'stop-sigterm' timed out. Killing."],
                   ["healthy", "host_oom_kill", "unknown", "gpu_memory_held_by_stale_process"],
                   "https://github.com/unslothai/unsloth/issues/3331",
                   "The report (Sept 2025, single H100, --gpu-memory-utilization 0.6): after a stop the API server "
                   "is gone "
                   "but `VLLM::EngineCore` stays in state R inside nvidia_uvm (uvm_spin_loop / uvm_tracker_wait, "
                   "/proc/<pid>/stack) and not even kill -9 removes it. Here systemd's stop runs into TimeoutStopSec, "
                   "SIGKILLs EngineCore and gives up (`Processes still around after SIGKILL. Ignoring.`, systemd's "
                   "text). "
                   "Version 0.10.2 (the release of the report's month), serving and uvicorn/launcher shutdown lines, "
                   "the person's stop (audit) and "
                   "process_info are ours.")


@case3
def stop3_vllm_063_pp_nccl_init_hang() -> Case:
    c = Case("stop3_vllm_063_pp_nccl_init_hang", "vllm", "0.6.3", v1=False, day=7, hour=5, tp=2,
             model="/models/Mistral-Nemo-Instruct-2407-Q6_K_L.gguf")
    inv = c.start()
    v = c.vlog
    c.app(inv, v("INFO", "api_server.py:528", f"vLLM API server version {c.version}"), dt=4.0)
    c.app(inv, v("INFO", "api_server.py:529", f"args: Namespace(model='{c.model}', max_model_len=200000, "
                 "pipeline_parallel_size=2, tensor_parallel_size=1)"))
    c.app(inv, v("INFO", "llm_engine.py:237", f"Initializing an LLM engine (v{c.version}) with config: "
                 f"model='{c.model}', max_seq_len=200000, pipeline_parallel_size=2"), "engine", dt=6.0)
    c.app(inv, v("INFO", "custom_cache_manager.py:17", "Setting Triton cache manager to: "
                 "vllm.triton_utils.custom_cache_manager:CustomCacheManager"), "engine", dt=0.5)
    c.app(inv, v("INFO", "multiproc_worker_utils.py:215", "Worker ready; awaiting tasks"), "worker", dt=3.0)
    c.app(inv, v("INFO", "utils.py:1008", "Found nccl from library libnccl.so.2"), "engine")
    c.app(inv, v("INFO", "utils.py:1008", "Found nccl from library libnccl.so.2"), "worker")
    c.app(inv, v("INFO", "pynccl.py:63", "vLLM is using nccl==2.20.5"), "engine")
    c.app(inv, v("INFO", "pynccl.py:63", "vLLM is using nccl==2.20.5"), "worker")
    t = c.stopping(inv, "stop", dt=1260.0)
    c.stop_timeout(inv, ["main", "engine", "worker"], after=90.0)
    c.extra = {"actions": [{"at": c.iso(t - 0.5), "who": "jonah", "action": "stop",
                            "detail": "start hung >20 min after `vLLM is using nccl`, stopping"}],
               "unit_file": f"[Service]\nExecStart=/opt/vllm/bin/vllm serve {c.model} --max-model-len=200000 "
                            "--pipeline-parallel-size=2\nRestart=on-failure\nTimeoutStopSec=90\n"}
    return expect3(c, "stop_timeout_sigkill", False,
                   ["State 'stop-sigterm' timed out. Killing.", "vLLM is using nccl==2.20.5"],
                   ["healthy", "host_oom_kill", "segfault"],
                   "https://github.com/vllm-project/vllm/issues/5484",
                   "Comment of Nov 2024 in the report: `vllm serve ... --pipeline-parallel-size=2` hangs for 20+ min "
                   "after "
                   "`vLLM is using nccl==2.20.5` and the first Ctrl-C does nothing. The custom_cache_manager / Worker "
                   "ready / Found nccl / pynccl lines are verbatim (times ours, 0.6.3 V0 era); the version/args lines, "
                   "the person's stop (audit) and systemd's SIGTERM -> TimeoutStopSec -> SIGKILL are ours. No NCCL "
                   "error was ever logged: the hang is only visible as the stop timing out.")


@case3
def stop3_sgl_0512_teardown_hung_scheduler() -> Case:
    c = Case("stop3_sgl_0512_teardown_hung_scheduler", "sglang", "0.5.12", day=8, hour=5,
             model="/models/Qwen3-30B-A3B")
    inv = c.start()
    sglang_boot(c, inv)
    sglang_decode(c, inv, 3)
    t = c.stopping(inv, "stop", dt=25.0)
    sglang_drain(c, inv, 1, remaining=3)
    c.app(inv, c.slog("Gracefully exiting... Remaining number of requests 0. Remaining requests "
                      "remaining_rids=[].", None), dt=5.0)
    c.stop_timeout(inv, ["main", "sched", "detok"], after=85.0)
    c.extra = {"actions": [{"at": c.iso(t - 0.2), "who": "pitcrew", "action": "stop",
                            "detail": "free GPU 3 for the eval job"}],
               "unit_file": "[Service]\nExecStart=/opt/sglang/bin/python3 -m sglang.launch_server --model-path "
                            "/models/Qwen3-30B-A3B --host 0.0.0.0 --port 30000\nRestart=on-failure\n"
                            "TimeoutStopSec=90\n"}
    return expect3(c, "stop_timeout_sigkill", False, ["State 'stop-sigterm' timed out. Killing."],
                   ["healthy", "host_oom_kill", "operator_action", "unknown"],
                   "https://github.com/sgl-project/sglang/pull/31645",
                   "The PR (July 2026): SGLang's teardown leaves a hung scheduler that outlives the stop "
                   "(kill_process_tree "
                   "cannot reach schedulers reparented away from the launcher) and keeps the port/GPU. Here pitcrew "
                   "stops "
                   "the unit, the drain completes (FORMATS a.4 template) but the process tree does not exit, and "
                   "systemd "
                   "SIGKILLs it after TimeoutStopSec. Version 0.5.12 (the report's era), audit and systemd lines are "
                   "ours.")


# ============================== healthy ========================================================


@case3
def ok3_vllm_085_context_length_8192_400s() -> Case:
    c = Case("ok3_vllm_085_context_length_8192_400s", "vllm", "0.8.5", day=9, hour=5, model="/models/QwQ-32B")
    inv = c.start()
    vllm_boot(c, inv)

    def rejected(port: int) -> list[str]:
        return [
            c.vlog("ERROR", "serving_chat.py:198", "Error in preprocessing prompt inputs"),
            c.vlog("ERROR", "serving_chat.py:198", "Traceback (most recent call last):"),
            c.vlog("ERROR", "serving_chat.py:198", "ValueError: This model's maximum context length is 8192 tokens. "
                   "However, you requested 8203 tokens (7691 in the messages, 512 in the completion). Please reduce "
                   "the "
                   "length of the messages or completion."),
            f'INFO:     10.0.3.9:{port} - "POST /v1/chat/completions HTTP/1.1" 400 Bad Request',
        ]
    vllm_serve(c, inv, 5, errors=[[], rejected(53114), [], rejected(53388)])
    return expect3(c, "healthy", False, [], NOT_HEALTHY, "https://github.com/ruipeterpan/specreason/issues/4",
                   "`ERROR 05-08 21:27:27 [serving_chat.py:198] ValueError: This model's maximum context length is "
                   "8192 "
                   "tokens. However, you requested 8203 tokens ...` verbatim from the report (May 2025, 0.8.x log "
                   "format; 0.8.5 V1 is ours). The `Error in preprocessing prompt inputs` header/traceback start are "
                   "vLLM's logger.exception template (body elided); the 400 access lines and throughput lines are the "
                   "templates. Client requests too long for --max-model-len; the engine keeps serving.")


@case3
def ok3_vllm_083_v0_sonnet_prompt_too_long() -> Case:
    c = Case("ok3_vllm_083_v0_sonnet_prompt_too_long", "vllm", "0.8.3", v1=False, day=10, hour=5,
             model="/models/Llama-3.1-8B-Instruct")
    inv = c.start()
    vllm_boot(c, inv)
    w = "serving_completion.py:116"
    p = "/mnt/disk/persist"

    def rejected(port: int) -> list[str]:
        return [c.vlog("ERROR", w, x) for x in [
            "Error in preprocessing prompt inputs",
            "Traceback (most recent call last):",
            f'  File "{p}/vllm/vllm/entrypoints/openai/serving_completion.py", line 108, in create_completion',
            "    request_prompts, engine_prompts = await self._preprocess_completion(",
            "                                      ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
            f'  File "{p}/vllm/vllm/entrypoints/openai/serving_engine.py", line 350, in _preprocess_completion',
            "    request_prompts = await self._tokenize_prompt_input_or_inputs_async(",
            "                      ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
            f'  File "{p}/miniconda3/envs/vllm/lib/python3.11/concurrent/futures/thread.py", line 58, in run',
            "    result = self.fn(*self.args, **self.kwargs)",
            "             ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
            "ValueError: This model's maximum context length is 2048 tokens. However, you requested 2071 tokens "
            "(1521 in the messages, 550 in the completion). Please reduce the length of the messages or completion.",
        ]] + [f'INFO:     127.0.0.1:{port} - "POST /v1/completions HTTP/1.1" 400 Bad Request']
    vllm_serve(c, inv, 2, errors=[rejected(41822)])
    c.suppressed(inv, 212, dt=0.8)
    vllm_serve(c, inv, 3, errors=[rejected(42016)])
    return expect3(c, "healthy", False, [], NOT_HEALTHY, "https://github.com/vllm-project/vllm/issues/16375",
                   "benchmark_serving with --sonnet-prefix-len=0 sends prompts longer than max_model_len; the server's "
                   "`Error in preprocessing prompt inputs` traceback (serving_completion.py:116, paths and frames) is "
                   "verbatim from the report (April 2025, 0.8.3 dev); the report's excerpt cuts the traceback, so the "
                   "final ValueError follows vLLM's _validate_input template (numbers ours). VLLM_USE_V1=0, the 400 "
                   "access lines, journald's `Suppressed` during the benchmark burst and the throughput lines are "
                   "ours.")


@case3
def ok3_sgl_047_token_indices_warning_tp2() -> Case:
    c = Case("ok3_sgl_047_token_indices_warning_tp2", "sglang", "0.4.7", day=11, hour=5, tp=2,
             model="/models/Qwen3-32B")
    inv = c.start()
    sglang_boot(c, inv)
    c.many(inv, [
        c.slog('INFO:     172.21.0.7:34016 - "POST /v1/chat/completions HTTP/1.1" 200 OK', None),
    ], dt=20.0)
    c.app(inv, c.slog("Prefill batch. #new-seq: 1, #new-token: 2266, #cached-token: 1, token usage: 0.00, "
                      "#running-req: 0, #queue-req: 0"), "sched", dt=0.1)
    c.many(inv, [
        c.slog('INFO:     172.16.21.155:59456 - "GET /health HTTP/1.1" 200 OK', None),
        c.slog('INFO:     172.21.0.7:59174 - "POST /v1/chat/completions HTTP/1.1" 200 OK', None),
        c.slog('INFO:     172.21.0.7:59178 - "POST /v1/chat/completions HTTP/1.1" 200 OK', None),
        "Token indices sequence length is longer than the specified maximum sequence length for this model "
        "(18294 > 16384). Running this sequence through the model will result in indexing errors",
        c.slog('INFO:     172.21.0.7:59180 - "POST /v1/chat/completions HTTP/1.1" 200 OK', None),
    ], dt=0.5)
    sglang_decode(c, inv, 2, running=3)
    c.app(inv, c.slog("Prefill batch. #new-seq: 1, #new-token: 8192, #cached-token: 0, token usage: 0.04, "
                      "#running-req: 3, #queue-req: 0"), "sched", dt=0.4)
    sglang_decode(c, inv, 3, running=4)
    return expect3(c, "healthy", False, [], NOT_HEALTHY, "https://github.com/sgl-project/sglang/issues/7515",
                   "Access, /health and Prefill lines verbatim from the report (June 2025, TP0 prefix), with the "
                   "transformers tokenizer warning `Token indices sequence length is longer than the specified maximum "
                   "sequence length for this model (18294 > 16384)` (a warning about the tokenizer's model_max_length, "
                   "not the server's context length). Version 0.4.7 (the report's month), the later long Prefill and "
                   "the Decode lines are ours: the server keeps serving.")


@case3
def ok3_sgl_046_input_longer_than_context_400() -> Case:
    c = Case("ok3_sgl_046_input_longer_than_context_400", "sglang", "0.4.6", day=12, hour=5, model="/models/Qwen3-32B")
    inv = c.start()
    sglang_boot(c, inv)
    sglang_decode(c, inv, 2)
    for i in range(3):
        c.app(inv, c.slog(f'INFO:     10.0.9.{40 + i}:{38110 + 7 * i} - "POST /v1/chat/completions HTTP/1.1" 400 Bad '
                          "Request", None), dt=1.5)
    c.suppressed(inv, 1840, dt=2.0)
    sglang_decode(c, inv, 2, tput=1320.0)
    c.app(inv, c.slog('INFO:     10.0.9.41:38190 - "POST /v1/chat/completions HTTP/1.1" 400 Bad Request', None), dt=0.7)
    sglang_decode(c, inv, 3, tput=1405.0)
    return expect3(c, "healthy", False, [], NOT_HEALTHY, "https://github.com/QwenLM/Qwen3/issues/1321",
                   "Qwen3 served with SGLang (April 2025): long prompts are rejected with "
                   "`{\"object\":\"error\",\"message\":\"The input (61709 tokens) is longer than the model's context "
                   "length "
                   "(40960 tokens).\",\"type\":\"BadRequestError\",\"param\":null,\"code\":400}` (verbatim, the "
                   "client's "
                   "view; the server logs only the 400 access line). Fixed in the report by raising the context "
                   "length. "
                   "Version 0.4.6, the 400 access lines, journald's `Suppressed 1840 messages` during a client retry "
                   "burst and the Decode lines are ours; Decode keeps flowing to the end.")
