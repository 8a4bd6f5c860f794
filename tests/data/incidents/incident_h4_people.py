"""holdout4 cases, theme `people` (see incident_h4_base.py): scored only, never tuned on.

Deliberate actions and noise: stops/restarts/kills by people or pitcrew (operator_action), stops that run into
TimeoutStopSec (stop_timeout_sigkill), and servers that keep serving while they log client errors (healthy).
The engine's own lines are quoted from each case's public report where it shows them; the people/audit side
(`actions`), systemd's and journald's lines and the engines' start-up/serving templates are ours (incident_kit,
incident_scenes, FORMATS.md). Labels follow docs/DIAGNOSIS.md "Labels" only.
"""

from __future__ import annotations

from datetime import UTC, datetime

from incident_h4_base import Case, case4, expect4
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

H = 13  # hour of every case of this module (distinct from the other modules' hours)


def _sigkill_left(c: Case, inv: Inv, roles: list[str], *, after: float = 90.0) -> None:
    """`State 'stop-sigterm' timed out. Killing.` + one SIGKILL line per process still in the cgroup (main gone)."""
    c.mgr(f"{c.unit}: State 'stop-sigterm' timed out. Killing.", inv, dt=after, prio=4, func="service_dispatch_timer")
    for role in roles:
        pid, comm, _ = c._proc(inv, role)
        c.mgr(f"{c.unit}: Killing process {pid} ({comm}) with signal SIGKILL.", inv, prio=5, func="log_kill")


# ============================== operator_action ================================================


@case4
def op4_sgl_0511_sigterm_drain_crash_dump_restart() -> Case:
    c = Case("op4_sgl_0511_sigterm_drain_crash_dump_restart", "sglang", "0.5.11", day=3, hour=H,
             model="/models/Qwen3-32B")
    inv = c.start()
    sglang_boot(c, inv)
    sglang_decode(c, inv, 4, running=3)
    t = c.stopping(inv, "restart", dt=20.0)
    sglang_drain(c, inv, 2, remaining=2)
    c.app(inv, c.slog("Gracefully exiting... Remaining number of requests 0. Remaining requests "
                      "remaining_rids=[].", None), dt=5.0)
    fname = datetime.fromtimestamp(c.t, UTC).strftime("crash_dump_%Y-%m-%d_%H-%M-%S.pkl")
    c.app(inv, c.slog(f"Dumped 318 finished and 0 unfinished requests before crash to "
                      f"/var/lib/sglang/crash_dump/{fname}", None), dt=0.4)
    c.exit(inv, "killed", "9", cpu="1h 12min 40.118s", dt=0.3)
    c.stopped(inv, "restart")
    inv2 = c.start(dt=0.2, manual=True)
    sglang_boot(c, inv2)
    sglang_decode(c, inv2, 4)
    c.extra = {"actions": [{"at": c.iso(t - 0.6), "who": "pitcrew", "action": "restart",
                            "detail": "weekly restart of sglang.service (planned, ticket OPS-2291)"}],
               "unit_file": "[Service]\nExecStart=/opt/sglang/bin/python3 -m sglang.launch_server --model-path "
                            "/models/Qwen3-32B --crash-dump-folder /var/lib/sglang/crash_dump --host 0.0.0.0 "
                            "--port 30000\nRestart=on-failure\nTimeoutStopSec=90\n",
               "systemctl_show": {"ActiveState": "active", "SubState": "running", "MainPID": str(inv2.main),
                                  "NRestarts": "0", "Result": "success"}}
    return expect4(c, "operator_action", False,
                   ["SIGTERM received. signum=None frame=None. Draining requests and shutting down..."],
                   ["engine_exception", "unknown", "segfault", "host_oom_kill", "stop_timeout_sigkill"],
                   "https://github.com/sgl-project/sglang/pull/27405",
                   "The PR (June 2026): on a graceful SIGTERM, TokenizerManager.sigterm_watchdog drains the in-flight "
                   "requests and then unconditionally calls dump_requests_before_crash(), so every clean shutdown "
                   "writes a crash_dump_*.pkl (when --crash-dump-folder is set) and logs the ERROR `Dumped N finished "
                   "and M unfinished requests before crash to <file>` (the text of that logger.error in "
                   "tokenizer_manager.py; counts and path ours). The drain lines follow the FORMATS a.4 template; the "
                   "exit as code=killed, status=9 is SGLang's kill_process_tree of its own tree (FORMATS a.6). Ours: "
                   "version 0.5.11 (the PR's month), the planned restart by pitcrew (audit `restart`), unit file, "
                   "start-up/Decode templates and the unit serving again at the end. The `before crash` wording is not "
                   "a crash.")


@case4
def op4_vllm_0111_deploy_rc7_restart_healthy() -> Case:
    c = Case("op4_vllm_0111_deploy_rc7_restart_healthy", "vllm", "0.11.0", day=4, hour=H,
             model="openai/gpt-oss-120b")
    inv = c.start()
    vllm_boot(c, inv)
    vllm_serve(c, inv, 4)
    t = c.stopping(inv, "restart", dt=35.0)
    c.app(inv, c.vlog("INFO", "launcher.py:101", "Shutting down FastAPI HTTP server."), dt=0.05)
    vllm_clean_shutdown(c, inv)
    c.mgr(f"{c.unit}: Deactivated successfully.", inv, dt=1.2, mid="success", func="unit_log_success")
    c.stopped(inv, "restart")
    c.consumed(inv, "48min 7.391s")
    c.version = "0.11.1rc7"
    inv2 = c.start(dt=0.2, manual=True)
    vllm_boot(c, inv2)
    vllm_serve(c, inv2, 3)
    unit = ("[Unit]\nDescription=vLLM OpenAI API Server\nAfter=network.target\n\n[Service]\nType=simple\nUser=root\n"
            "WorkingDirectory=/root/vllm\n"
            "Environment=\"PATH=/usr/local/cuda/bin:/root/vllm/env/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:"
            "/usr/bin:/sbin:/bin\"\nEnvironment=\"VIRTUAL_ENV=/root/vllm/env\"\n"
            "Environment=\"LD_LIBRARY_PATH=/usr/local/cuda/lib64\"\nEnvironment=\"TORCH_CUDA_ARCH_LIST=12.0a\"\n"
            "Environment=\"VLLM_GPT_OSS_HARMONY_SYSTEM_INSTRUCTIONS=1\"\n"
            "ExecStart=/root/vllm/env/bin/vllm serve openai/gpt-oss-120b --host 0.0.0.0 --port 8000 "
            "--enable-auto-tool-choice --tool-call-parser openai --enable-prefix-caching --enable-chunked-prefill "
            "--gpu-memory-utilization 0.95 --kv-cache-dtype fp8 --reasoning-parser openai_gptoss\n"
            "Restart=always\nRestartSec=10\n\n[Install]\nWantedBy=multi-user.target\n")
    c.extra = {"actions": [{"at": c.iso(t - 2.0), "who": "ramalama", "action": "deploy",
                            "detail": "pip install vllm==0.11.1rc7 into /root/vllm/env, systemctl restart vllm"}],
               "unit_file": unit,
               "systemctl_show": {"ActiveState": "active", "SubState": "running", "MainPID": str(inv2.main),
                                  "NRestarts": "0", "Result": "success"}}
    return expect4(c, "operator_action", False, ["Stopping vllm.service"],
                   ["engine_exception", "unknown", "host_oom_kill", "stop_timeout_sigkill", "bad_argument"],
                   "https://github.com/vllm-project/vllm/issues/27542",
                   "The unit file is verbatim from the report (Oct 2025, RTX PRO 6000 / sm120a in an LXC container, "
                   "`vllm serve openai/gpt-oss-120b ...`, Restart=always): the reporter upgrades between 0.11.1 release "
                   "candidates and rc7 `works without any issues`. Ours: the running 0.11.0 invocation serving without "
                   "errors, the person's deploy of 0.11.1rc7 + `systemctl restart` (audit `deploy`), the orderly "
                   "uvicorn shutdown (exit 0), all start-up/throughput template lines and the unit serving again on "
                   "rc7 at the end. No failure before the restart.")


@case4
def op4_sgl_043_kill_port_owner_no_restart() -> Case:
    c = Case("op4_sgl_043_kill_port_owner_no_restart", "sglang", "0.4.3.post2", day=5, hour=H,
             model="/models/llava-onevision-qwen2-7b-ov")
    inv = c.start()
    sglang_boot(c, inv)
    sglang_decode(c, inv, 3, running=2)
    kill_t = c.at(240.0)
    c.app(inv, c.slog("SIGTERM received. signum=None frame=None. Draining requests and shutting down...", None),
          dt=0.02)
    c.app(inv, c.slog("Gracefully exiting... Remaining number of requests 0", None), dt=5.0)
    c.exit(inv, "killed", "9", cpu="9min 2.774s", dt=0.3)
    c.extra = {"actions": [{"at": c.iso(kill_t - 0.3), "who": "tian", "action": "kill",
                            "detail": f"kill {inv.main} (the process listening on :30001) to free the GPU"}],
               "unit_file": "[Service]\nExecStart=/opt/sglang/bin/python3 -m sglang.launch_server --model-path "
                            "/models/llava-onevision-qwen2-7b-ov --port=30001 --chat-template=chatml-llava\n"
                            "Restart=no\n",
               "systemctl_show": {"ActiveState": "failed", "SubState": "failed", "MainPID": "0", "Result": "signal",
                                  "NRestarts": "0"}}
    return expect4(c, "operator_action", False, ["SIGTERM received. signum=None frame=None."],
                   ["host_oom_kill", "segfault", "engine_exception", "unknown"],
                   "https://github.com/sgl-project/sglang/issues/4080",
                   "The report (March 2025, `python3 -m sglang.launch_server --model-path ... --port=30001 "
                   "--chat-template=chatml-llava`, flags verbatim): the GPU stays in use after terminating the launcher "
                   "and only killing the process that listens on the port stops the server. Ours: the person's `kill` "
                   "of MainPID (audit `kill`), SGLang's SIGTERM drain lines (FORMATS a.4 template, 0.4.3 spelling "
                   "assumed), the code=killed, status=9 exit of kill_process_tree (FORMATS a.6), Restart=no, model "
                   "path, version 0.4.3.post2 (the report's week) and the start-up/Decode templates. The unit stays "
                   "down on purpose.")


# ============================== stop_timeout_sigkill ===========================================


@case4
def stop4_vllm_084_v0_tp2_workers_hold_gpu() -> Case:
    c = Case("stop4_vllm_084_v0_tp2_workers_hold_gpu", "vllm", "0.8.4", v1=False, day=6, hour=H, tp=2,
             model="/LLM_data/LLM_models/THUDM/GLM-4-32B-0414/")
    inv = c.start()
    vllm_boot(c, inv)
    vllm_serve(c, inv, 3)
    t = c.stopping(inv, "stop", dt=50.0)
    vllm_clean_shutdown(c, inv)
    _sigkill_left(c, inv, ["engine", "worker1"], after=90.0)
    c.mgr(f"{c.unit}: Failed with result 'timeout'.", inv, prio=4, mid="result", func="unit_log_failure",
          UNIT_RESULT="timeout")
    c.stopped(inv)
    c.consumed(inv, "3h 41min 12.905s")
    c.extra = {"actions": [{"at": c.iso(t - 0.4), "who": "cuiyah", "action": "stop",
                            "detail": "stop GLM-4-32B-0414 on GPUs 4,5"}],
               "unit_file": "[Service]\nEnvironment=CUDA_VISIBLE_DEVICES=4,5\nEnvironment=VLLM_USE_V1=0\n"
                            "ExecStart=/opt/vllm/bin/python3 -m vllm.entrypoints.openai.api_server --model "
                            "/LLM_data/LLM_models/THUDM/GLM-4-32B-0414/ --served-model-name GLM-4-32B-0414 "
                            "--tensor-parallel-size 2 --trust-remote-code --port 9000 --max_num_seqs 1 --dtype bfloat16 "
                            "--model-impl transformers --swap-space 8 --max-model-len 1024\nRestart=on-failure\n"
                            "TimeoutStopSec=90\n",
               "systemctl_show": {"ActiveState": "failed", "SubState": "failed", "MainPID": "0", "Result": "timeout",
                                  "NRestarts": "0"}}
    return expect4(c, "stop_timeout_sigkill", False, ["State 'stop-sigterm' timed out. Killing."],
                   ["healthy", "gpu_memory_held_by_stale_process", "host_oom_kill", "operator_action"],
                   "https://github.com/zai-org/GLM-4/issues/763",
                   "The report (April 2025): GLM-4-32B-0414 served with `python -m vllm.entrypoints.openai.api_server "
                   "... --tensor-parallel-size 2 --model-impl transformers --swap-space 8` (flags verbatim, now in the "
                   "unit file); after killing the server process the GPUs stay occupied and only pkill frees them. "
                   "Here the person's `systemctl stop` ends the API server (uvicorn's orderly shutdown, template) but "
                   "the engine and the TP worker stay in the cgroup and hold the GPUs until TimeoutStopSec SIGKILLs "
                   "them. Ours: version 0.8.4 with VLLM_USE_V1=0 (the report's month; V0 engine/worker process "
                   "names), the audit `stop`, systemd's lines and the start-up/throughput templates.")


@case4
def stop4_sgl_043_drain_never_finishes() -> Case:
    c = Case("stop4_sgl_043_drain_never_finishes", "sglang", "0.4.3.post4", day=7, hour=H, tp=2,
             model="/models/DeepSeek-R1-Distill-Llama-70B")
    inv = c.start()
    sglang_boot(c, inv)
    sglang_decode(c, inv, 4, running=3)
    t = c.stopping(inv, "stop", dt=8.0)
    sglang_drain(c, inv, 17, remaining=3)
    c.stop_timeout(inv, ["main"], after=4.5)
    c.extra = {"actions": [{"at": c.iso(t - 0.3), "who": "renfei", "action": "stop",
                            "detail": "stop sglang before switching the node to training"}],
               "unit_file": "[Service]\nExecStart=/opt/sglang/bin/python3 -m sglang.launch_server --model-path "
                            "/models/DeepSeek-R1-Distill-Llama-70B --tp 2 --host 0.0.0.0 --port 30000\n"
                            "Restart=on-failure\nTimeoutStopSec=90\n",
               "systemctl_show": {"ActiveState": "failed", "SubState": "failed", "MainPID": "0", "Result": "timeout",
                                  "NRestarts": "0"}}
    return expect4(c, "stop_timeout_sigkill", False,
                   ["State 'stop-sigterm' timed out. Killing.", "Gracefully exiting... Remaining number of requests 3"],
                   ["healthy", "host_oom_kill", "operator_action", "unknown"],
                   "https://github.com/sgl-project/sglang/issues/4173",
                   "The report (March 2025): stopping an SGLang server with Ctrl+C does not end all its processes; one "
                   "has to kill the list of processes by hand. Here a person's `systemctl stop`: systemd's SIGTERM "
                   "reaches every process of the cgroup, the scheduler/detokenizer have no handler and die, so the "
                   "main process's drain never sees its 3 in-flight requests finish (FORMATS a.6) and loops until "
                   "TimeoutStopSec SIGKILLs it. Drain lines follow the FORMATS a.4 template (0.4.3 spelling assumed); "
                   "version 0.4.3.post4 (the report's week), TP=2, audit `stop`, unit file and systemd's lines are "
                   "ours.")


@case4
def stop4_vllm_021_omni_sigterm_inflight_hang() -> Case:
    c = Case("stop4_vllm_021_omni_sigterm_inflight_hang", "vllm", "0.21.0", day=8, hour=H,
             model="/models/Qwen/Qwen3-Omni-30B-A3B-Instruct")
    inv = c.start()
    vllm_boot(c, inv, "capture")
    v = c.vlog
    c.app(inv, v("INFO", "gpu_model_runner.py:3480", "Graph capturing finished in 14 secs, took 1.12 GiB"), "engine",
          dt=14.0)
    c.app(inv, v("INFO", "core.py:210", "init engine (profile, create kv cache, warmup model) took 88.41 seconds"),
          "engine")
    c.app(inv, v("INFO", "api_server.py:1912", "Starting vLLM API server 0 on http://127.0.0.1:53211"), dt=0.5)
    c.many(inv, [
        v("INFO", "launcher.py:57", "Route: /v1/audio/speech/stream, Endpoint: streaming_speech"),
        v("INFO", "launcher.py:57", "Route: /v1/video/chat/stream, Endpoint: streaming_video_chat"),
        v("INFO", "launcher.py:57", "Route: /v1/realtime, Endpoint: realtime_websocket"),
        f"INFO:     Started server process [{inv.main}]",
        "INFO:     Waiting for application startup.",
        "INFO:     Application startup complete.",
    ], dt=0.01)
    vllm_serve(c, inv, 3)
    t = c.stopping(inv, "stop", dt=3.0)
    c.app(inv, "INFO:     Shutting down", dt=0.1)
    c.app(inv, "INFO:     Waiting for application shutdown.")
    c.app(inv, "INFO:     Application shutdown complete.", dt=0.2)
    c.stop_timeout(inv, ["main", "engine"], after=90.0)
    c.extra = {"actions": [{"at": c.iso(t - 0.2), "who": "pitcrew", "action": "stop",
                            "detail": "scale-in of the omni pool (node 7)"}],
               "unit_file": "[Service]\nExecStart=/workspace/.venv/bin/python3 -m vllm_omni.entrypoints.cli.main serve "
                            "/models/Qwen/Qwen3-Omni-30B-A3B-Instruct --host 127.0.0.1 --port 53211 --omni\n"
                            "Restart=on-failure\nTimeoutStopSec=90\n",
               "systemctl_show": {"ActiveState": "failed", "SubState": "failed", "MainPID": "0", "Result": "timeout",
                                  "NRestarts": "0"}}
    return expect4(c, "stop_timeout_sigkill", False, ["State 'stop-sigterm' timed out. Killing."],
                   ["healthy", "host_oom_kill", "operator_action", "unknown"],
                   "https://github.com/vllm-project/vllm-omni/issues/3683",
                   "The report (May 2026, vLLM 0.21.0 + vllm-omni, Qwen3-Omni): SIGTERM sent while a request is being "
                   "handled; expected no process left within 90 s, but after `gracefully exiting` the serve process "
                   "is still there 10 minutes later. The three launcher `Route:` lines are verbatim (the report's "
                   "terminal wrapped two of them; unwrapped here), times/pids ours. Ours: pitcrew's stop (audit), "
                   "uvicorn's shutdown template, systemd's TimeoutStopSec=90 SIGKILL of the API server and engine "
                   "(the journal ends there, before the report's later error), start-up/throughput templates.")


# ============================== healthy ========================================================


@case4
def ok4_sgl_057_disconnect_type1_task_exception() -> Case:
    c = Case("ok4_sgl_057_disconnect_type1_task_exception", "sglang", "0.5.7", day=9, hour=H,
             model="/models/Qwen3-30B-A3B-Instruct-2507")
    inv = c.start()
    sglang_boot(c, inv)
    sglang_decode(c, inv, 3, running=180)

    def disconnected(task: int, rid: str) -> list[str]:
        return [
            c.slog("Task exception was never retrieved", None),
            f"future: <Task finished name='Task-{task}' coro=<<async_generator_asend without __name__>()> "
            f"exception=ValueError(\"Request is disconnected from the client side (type 1). Abort request "
            f"obj.rid='{rid}'\")>",
            "Traceback (most recent call last):",
            '  File "/usr/lib/python3.12/asyncio/tasks.py", line 520, in wait_for',
            "    return await fut",
            "           ^^^^^^^^^",
            '  File "/usr/lib/python3.12/asyncio/locks.py", line 212, in wait',
            "    await fut",
            "asyncio.exceptions.CancelledError",
            "",
            "During handling of the above exception, another exception occurred:",
            "",
            "Traceback (most recent call last):",
            f"ValueError: Request is disconnected from the client side (type 1). Abort request obj.rid='{rid}'",
        ]
    c.many(inv, disconnected(993871, "f2ea4cfe82f6489a91e72145abd6db25"), dt=0.01)
    c.app(inv, c.slog('INFO:     10.0.4.88:52214 - "POST /v1/chat/completions HTTP/1.1" 500 Internal Server Error',
                      None), dt=0.05)
    sglang_decode(c, inv, 2, running=178)
    c.many(inv, disconnected(994212, "0b7d31e6a4c94f0e8d2a5c11f3e9b770"), dt=0.01)
    c.suppressed(inv, 96, dt=0.4)
    sglang_decode(c, inv, 4, running=181)
    return expect4(c, "healthy", False, [], NOT_HEALTHY, "https://github.com/sgl-project/sglang/issues/17031",
                   "The `Task exception was never retrieved` / `future: <Task finished name='Task-993871' ...> "
                   "exception=ValueError(\"Request is disconnected from the client side (type 1). Abort request "
                   "obj.rid='f2ea4cfe...'\")>` block and its first traceback frames are verbatim from the report "
                   "(Jan 2026, high-concurrency streaming; the client sees a 500, the server keeps running). The "
                   "report's excerpt stops at `asyncio.exceptions.CancelledError`; the chained `During handling...` "
                   "and the final ValueError line follow Python's template with the text of the future line (frames "
                   "elided). Ours: version 0.5.7 (the report's month), the second occurrence (rid ours), the 500 "
                   "access line, journald's `Suppressed 96 messages`, start-up and Decode templates flowing to the end.")


@case4
def ok4_sgl_049_abort_request_422() -> Case:
    c = Case("ok4_sgl_049_abort_request_422", "sglang", "0.4.9", day=10, hour=H, model="/models/Qwen3-4B")
    inv = c.start()
    sglang_boot(c, inv)
    sglang_decode(c, inv, 2, running=1)
    for i, port in enumerate((45418, 45430, 45436, 45442, 45450, 45458)):
        if i % 2 == 0:
            c.app(inv, c.slog(f"Decode batch. #running-req: 1, #token: {8295 + 40 * i}, token usage: 0.01, cuda graph: "
                              f"True, gen throughput (token/s): {454.62 - 0.3 * i:.2f}, #queue-req: 0"), "sched",
                  dt=0.4)
        c.app(inv, c.slog(f'INFO:     172.16.216.111:{port} - "POST /abort_request HTTP/1.1" 422 Unprocessable '
                          "Entity", None), dt=0.5)
    sglang_decode(c, inv, 4, running=1)
    return expect4(c, "healthy", False, [], NOT_HEALTHY, "https://github.com/THUDM/slime/pull/63",
                   "The PR (July 2025): slime's rollout buffer calls SGLang's `/abort_request` without `rid` in the "
                   "body and gets 422 Unprocessable Entity in a retry loop while the server keeps decoding. The "
                   "`Decode batch. #running-req: 1, #token: 8295, token usage: 0.01, cuda graph: True, gen throughput "
                   "(token/s): 454.62, #queue-req: 0` line and the `172.16.216.111:45418/45430/45436 - \"POST "
                   "/abort_request HTTP/1.1\" 422 Unprocessable Entity` access lines are verbatim (Ray actor prefixes "
                   "dropped: here SGLang runs as the unit). Ours: version 0.4.9 (the PR's month), further ports and "
                   "token counts, start-up and later Decode templates; a client bug, not an incident.")


@case4
def ok4_vllm_085_tool_extract_undetermined() -> Case:
    c = Case("ok4_vllm_085_tool_extract_undetermined", "vllm", "0.8.5", day=11, hour=H,
             model="/models/Qwen2.5-7B-Instruct")
    inv = c.start()
    vllm_boot(c, inv)
    err = c.vlog("ERROR", "serving_chat.py:898", "Error in chat_completion_full_generator - cannot determine if tools "
                 "should be extracted. Returning a standard chat completion.")
    c.app(inv, c.vlog("INFO", "chat_utils.py:379", "Detected the chat template content format to be 'string'. You can "
                      "set `--chat-template-content-format` to override this."), dt=3.0)
    c.many(inv, [err, 'INFO:     114.242.33.191:32107 - "POST /v1/chat/completions HTTP/1.1" 200 OK', err,
                 'INFO:     114.242.33.191:27283 - "POST /v1/chat/completions HTTP/1.1" 200 OK', err, err])
    vllm_serve(c, inv, 2, errors=[[err, 'INFO:     114.242.33.191:27301 - "POST /v1/chat/completions HTTP/1.1" 200 OK']])
    c.suppressed(inv, 412, dt=0.6)
    vllm_serve(c, inv, 3, errors=[[err, err]])
    return expect4(c, "healthy", False, [], NOT_HEALTHY, "https://github.com/vllm-project/vllm/issues/17514",
                   "The report (May 2025): `vllm serve /models/Qwen2.5-7B-Instruct ... --enable-auto-tool-choice "
                   "--tool-call-parser hermes`; every tool-calling request logs `ERROR ... [serving_chat.py:898] Error "
                   "in chat_completion_full_generator - cannot determine if tools should be extracted. Returning a "
                   "standard chat completion.` and still answers 200. That ERROR line, the chat_utils.py:379 INFO line "
                   "and the 200 access lines (114.242.33.191:32107/27283) are verbatim, times ours. Ours: version "
                   "0.8.5 V1 (the report's month), journald's `Suppressed 412 messages` during the burst, start-up and "
                   "throughput templates flowing to the end.")


@case4
def ok4_vllm_011_hermes_tool_parse_errors() -> Case:
    c = Case("ok4_vllm_011_hermes_tool_parse_errors", "vllm", "0.11.0", day=12, hour=H,
             model="Qwen/Qwen3-Coder-30B-A3B-Instruct")
    inv = c.start()
    vllm_boot(c, inv)
    w = "hermes_tool_parser.py:157"
    p = "/opt/conda/envs/vllm_py310/lib/python3.10/site-packages/vllm/entrypoints/openai/tool_parsers"

    def parse_error(port: int) -> list[str]:
        return [f'INFO:     127.0.0.1:{port} - "POST /v1/chat/completions HTTP/1.1" 200 OK'] + [c.vlog("ERROR", w, x) for x in [
            "Error in extracting tool call from response.",
            "Traceback (most recent call last):",
            f'  File "{p}/hermes_tool_parser.py", line 134, in extract_tool_calls',
            "    raw_function_calls = [",
            f'  File "{p}/hermes_tool_parser.py", line 135, in <listcomp>',
            "    json.loads(match[0] if match[0] else match[1])",
            '  File "/opt/conda/envs/vllm_py310/lib/python3.10/json/__init__.py", line 346, in loads',
            "    return _default_decoder.decode(s)",
            '  File "/opt/conda/envs/vllm_py310/lib/python3.10/json/decoder.py", line 337, in decode',
            "    obj, end = self.raw_decode(s, idx=_w(s, 0).end())",
            '  File "/opt/conda/envs/vllm_py310/lib/python3.10/json/decoder.py", line 355, in raw_decode',
            '    raise JSONDecodeError("Expecting value", s, err.value) from None',
            "json.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)",
        ]]
    vllm_serve(c, inv, 4, errors=[parse_error(50001), [], parse_error(50017), parse_error(50023)])
    c.suppressed(inv, 1273, dt=0.5)
    vllm_serve(c, inv, 3, errors=[parse_error(50061)])
    return expect4(c, "healthy", False, [], NOT_HEALTHY, "https://github.com/vllm-project/vllm/issues/26561",
                   "The report (Oct 2025, vLLM 0.11.0, `vllm serve Qwen/Qwen3-Coder-30B-A3B-Instruct "
                   "--enable-auto-tool-choice --tool-call-parser hermes`): a large number of `ERROR ... "
                   "[hermes_tool_parser.py:157] Error in extracting tool call from response.` tracebacks after "
                   "`127.0.0.1:50001 - \"POST /v1/chat/completions HTTP/1.1\" 200 OK`; the access line, ERROR header, "
                   "`Traceback`, the frame at line 134 and `raw_function_calls = [` are verbatim (APIServer tag added "
                   "by the kit, times ours). The report's excerpt stops there: the list-comprehension/json frames and "
                   "the final JSONDecodeError follow the parser's and CPython's code (message ours). Ours: further "
                   "ports, journald's `Suppressed 1273 messages`, start-up and throughput templates flowing to the end.")
