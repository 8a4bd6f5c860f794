"""holdout4 cases, theme `hostres` (see incident_h4_base.py): scored only, never tuned on.

Host resources: GPU memory held by a process that is not the current invocation's (stale holder), an address
taken (HTTP port, torch TCPStore), the kernel's OOM killer (global and memory cgroup), and one ownership decoy (a
start-up CUDA OOM where nvidia-smi lists only the unit's own scheduler). Each case is rebuilt from one public
report; the error lines are the report's where it shows them, systemd's/journald's lines and the engines'
start-up/serving templates are incident_kit's and incident_scenes' (FORMATS.md), the side evidence is ours unless
the notes say otherwise. Labels follow docs/DIAGNOSIS.md "Labels" only, set before any diagnoser was run.
"""

from __future__ import annotations

from incident_h4_base import case4, expect4
from incident_kit import STAMP_S, Case, Inv
from incident_scenes import ownership, sglang_boot, sglang_sched_exception, sglang_sigquit, vllm_boot, vllm_serve


class HCase(Case):
    """A Case with extra process roles: role -> (pid offset from MainPID, _COMM, _CMDLINE)."""

    def __init__(self, *args: object, roles: dict[str, tuple[int, str, str]] | None = None, **kw: object) -> None:
        super().__init__(*args, **kw)  # type: ignore[arg-type]
        self.roles = roles or {}

    def _proc(self, inv: Inv, role: str) -> tuple[int, str, str]:
        if role in self.roles:
            off, comm, cmdline = self.roles[role]
            pid = inv.main + off
            inv.pids[role] = pid
            return pid, comm, cmdline
        return super()._proc(inv, role)


VP = "/opt/vllm/lib/python3.12/site-packages/vllm"
SG = "/opt/sglang/lib/python3.12/site-packages/sglang/srt"
SG_SCHED = [  # SGLang 0.4.6-0.4.9 scheduler start-up frames (shape of sglang#6033/#8336; line numbers ours)
    f'  File "{SG}/managers/scheduler.py", line 2297, in run_scheduler_process',
    "    scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, pp_rank, dp_rank)",
    f'  File "{SG}/managers/scheduler.py", line 268, in __init__',
    "    self.tp_worker = TpWorkerClass(",
    f'  File "{SG}/managers/tp_worker_overlap_thread.py", line 63, in __init__',
    "    self.worker = TpModelWorker(server_args, gpu_id, tp_rank, dp_rank, nccl_port)",
    f'  File "{SG}/managers/tp_worker.py", line 74, in __init__',
    "    self.model_runner = ModelRunner(",
    f'  File "{SG}/model_executor/model_runner.py", line 187, in __init__',
    "    self.initialize(min_per_gpu_memory)",
    f'  File "{SG}/model_executor/model_runner.py", line 220, in initialize',
    "    self.load_model()",
]


def v1_boot_head(c: Case, inv: Inv, api_line: str, core_line: str, extra_args: str = "") -> None:
    """vLLM V1 start-up up to the engine config line (the failures below happen in init_device, before loading)."""
    v = c.vlog
    c.app(inv, v("INFO", api_line, f"vLLM API server version {c.version}"), dt=4.0)
    c.app(inv, v("INFO", "cli_args.py:261" if c.vtuple < (0, 10) else "utils.py:326",
                 f"non-default args: {{'model_tag': '{c.model}', 'model': '{c.model}'{extra_args}}}"))
    c.app(inv, v("INFO", core_line, f"Initializing a V1 LLM engine (v{c.version}) with config: model='{c.model}', "
                 f"speculative_config=None, tokenizer='{c.model}', skip_tokenizer_init=False, tokenizer_mode=auto, "
                 f"revision=None, trust_remote_code=False, dtype=torch.bfloat16, max_seq_len=32768, "
                 f"tensor_parallel_size={c.tp}, pipeline_parallel_size=1"), "engine", dt=3.0)


def v1_init_failed(c: Case, inv: Inv, where: str, lines: list[str], utils_line: int = 759) -> None:
    """EngineCore failed to start + the API server's `Engine core initialization failed` wrapper."""
    v = c.vlog
    c.app(inv, v("ERROR", where, "EngineCore failed to start."), "engine", dt=0.8)
    c.app(inv, v("ERROR", where, "Traceback (most recent call last):"), "engine")
    for line in lines:
        c.app(inv, v("ERROR", where, line), "engine", dt=0.0)
    c.many(inv, [
        "Traceback (most recent call last):",
        f'  File "{VP}/v1/engine/utils.py", line {utils_line}, in wait_for_engine_startup',
        '    raise RuntimeError("Engine core initialization failed. "',
        "RuntimeError: Engine core initialization failed. See root cause above." +
        (" Failed core proc(s): {'EngineCore_DP0': 1}" if c.vtuple >= (0, 10) else ""),
    ], dt=0.3)


# ============================== gpu_memory_held_by_stale_process ===============================


@case4
def stale4_vllm_0101_v1_mixtral_fp8_free_memory_loop() -> Case:
    c = Case("stale4_vllm_0101_v1_mixtral_fp8_free_memory_loop", "vllm", "0.10.1", day=11, hour=7,
             model="/models/Mixtral-8x7B-Instruct-v0.1-FP8")
    frames = [
        f'  File "{VP}/v1/engine/core.py", line 703, in run_engine_core',
        "    engine_core = EngineCoreProc(*args, **kwargs)",
        "                  ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
        f'  File "{VP}/v1/engine/core.py", line 502, in __init__',
        "    super().__init__(vllm_config, executor_class, log_stats,",
        f'  File "{VP}/v1/engine/core.py", line 81, in __init__',
        "    self.model_executor = executor_class(vllm_config)",
        "                          ^^^^^^^^^^^^^^^^^^^^^^^^^^^",
        f'  File "{VP}/executor/executor_base.py", line 54, in __init__',
        "    self._init_executor()",
        f'  File "{VP}/executor/uniproc_executor.py", line 48, in _init_executor',
        '    self.collective_rpc("init_device")',
        f'  File "{VP}/executor/uniproc_executor.py", line 58, in collective_rpc',
        "    answer = run_method(self.driver_worker, method, args, kwargs)",
        "             ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
        f'  File "{VP}/utils/__init__.py", line 3007, in run_method',
        "    return func(*args, **kwargs)",
        "           ^^^^^^^^^^^^^^^^^^^^^",
        f'  File "{VP}/worker/worker_base.py", line 603, in init_device',
        "    self.worker.init_device()  # type: ignore",
        "    ^^^^^^^^^^^^^^^^^^^^^^^^^",
        f'  File "{VP}/v1/worker/gpu_worker.py", line 180, in init_device',
        "    raise ValueError(",
        "ValueError: Free memory on device (7.34/139.72 GiB) on startup is less than desired GPU memory utilization "
        "(0.9, 125.75 GiB). Decrease GPU memory utilization or reduce GPU memory used by other processes.",
    ]
    first = None
    for _k in range(3):
        inv = c.start(dt=0.2)
        first = first or inv
        v1_boot_head(c, inv, "api_server.py:1805", "core.py:74")
        v1_init_failed(c, inv, "core.py:712", frames)
        c.exit(inv, "exited", "1", restart=True, cpu="17.052s")
    assert first is not None
    c.extra = {
        "nvidia_smi_apps": [{"pid": 1794410, "process_name": "VLLM::EngineCore", "used_memory": 135530}],
        "process_info": [{"pid": 1794410, "ppid": 1, "user": "kaiwu",
                          "cgroup": "/user.slice/user-1003.slice/session-41.scope", "cmdline": "VLLM::EngineCore",
                          "started": c.iso(first.start_t - 3 * 3600)}],
        "systemctl_show": {"MainPID": "0", "ActiveState": "activating", "SubState": "auto-restart",
                           "NRestarts": str(c.restarts), "Result": "exit-code"},
    }
    return expect4(c, "gpu_memory_held_by_stale_process", True,
                   ["Free memory on device (7.34/139.72 GiB) on startup is less than desired GPU memory utilization"],
                   ["healthy", "kv_cache_oom", "model_load_failure"], "https://github.com/vllm-project/vllm/issues/23192",
                   "RedHatAI Mixtral-8x7B FP8 on one 140 GB GPU (September 2025; the report's `(EngineCore_0 pid=...)` "
                   "tag is 0.10.1's). The frames from worker_base.py l.603 to gpu_worker.py l.180, core.py:712 and the "
                   "ValueError (7.34/139.72 GiB free, 0.9 = 125.75 GiB wanted) are verbatim; the earlier frames and "
                   "start-up lines follow 0.10.1's templates (the kit tags the engine EngineCore_DP0). Ours: the holder, "
                   "an orphaned VLLM::EngineCore of a server the user had started by hand in a login session (ppid 1, "
                   "session scope, ~132 GiB), and Restart=always with three failing starts. Foreign holder proven by "
                   "process_info, so not KV sizing.")


@case4
def stale4_vllm_092_v1_second_instance_free_memory() -> Case:
    c = Case("stale4_vllm_092_v1_second_instance_free_memory", "vllm", "0.9.2", day=12, hour=7,
             model="/models/Meta-Llama-3.1-8B-Instruct")
    inv = c.start()
    v1_boot_head(c, inv, "api_server.py:1395", "core.py:69")
    v1_init_failed(c, inv, "core.py:519", [
        f'  File "{VP}/v1/engine/core.py", line 510, in run_engine_core',
        "    engine_core = EngineCoreProc(*args, **kwargs)",
        "                  ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
        f'  File "{VP}/v1/engine/core.py", line 394, in __init__',
        "    super().__init__(vllm_config, executor_class, log_stats,",
        f'  File "{VP}/v1/engine/core.py", line 75, in __init__',
        "    self.model_executor = executor_class(vllm_config)",
        "                          ^^^^^^^^^^^^^^^^^^^^^^^^^^^",
        f'  File "{VP}/executor/executor_base.py", line 53, in __init__',
        "    self._init_executor()",
        f'  File "{VP}/executor/uniproc_executor.py", line 47, in _init_executor',
        '    self.collective_rpc("init_device")',
        f'  File "{VP}/executor/uniproc_executor.py", line 57, in collective_rpc',
        "    answer = run_method(self.driver_worker, method, args, kwargs)",
        "             ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
        f'  File "{VP}/utils/__init__.py", line 2736, in run_method',
        "    return func(*args, **kwargs)",
        "           ^^^^^^^^^^^^^^^^^^^^^",
        f'  File "{VP}/worker/worker_base.py", line 606, in init_device',
        "    self.worker.init_device()  # type: ignore",
        "    ^^^^^^^^^^^^^^^^^^^^^^^^^",
        f'  File "{VP}/v1/worker/gpu_worker.py", line 145, in init_device',
        "    raise ValueError(",
        "ValueError: Free memory on device (59.32/79.15 GiB) on startup is less than desired GPU memory utilization "
        "(0.9, 71.24 GiB). Decrease GPU memory utilization or reduce GPU memory used by other processes.",
    ], utils_line=568)
    c.exit(inv, "exited", "1", cpu="12.385s")
    c.extra = {
        "nvidia_smi_apps": [{"pid": 3911782, "process_name": "VLLM::EngineCore", "used_memory": 19614}],
        "process_info": [{"pid": 3911782, "ppid": 3911507, "user": "jrxing",
                          "cgroup": "/user.slice/user-1001.slice/session-12.scope", "cmdline": "VLLM::EngineCore",
                          "started": c.iso(inv.start_t - 5400)},
                         {"pid": 3911507, "ppid": 3902215, "user": "jrxing",
                          "cgroup": "/user.slice/user-1001.slice/session-12.scope",
                          "cmdline": "/home/jrxing/venv/bin/python3 /home/jrxing/venv/bin/vllm serve Qwen/Qwen3-0.6B "
                                     "--port 12346 --gpu-memory-utilization 0.2",
                          "started": c.iso(inv.start_t - 5410)}],
        "systemctl_show": {"MainPID": "0", "ActiveState": "failed", "SubState": "failed", "NRestarts": "0",
                           "Result": "exit-code"},
    }
    return expect4(c, "gpu_memory_held_by_stale_process", False,
                   ["Free memory on device (59.32/79.15 GiB) on startup is less than desired GPU memory utilization"],
                   ["healthy", "kv_cache_oom"], "https://github.com/ovg-project/kvcached/issues/29",
                   "Two vLLM 0.9.2 instances on one 80 GB GPU: the second start finds only 59.32 GiB free and V1's "
                   "init_device check refuses 0.9 (71.24 GiB). The frames from core.py's executor_class call to "
                   "gpu_worker.py l.145 and the ValueError are the report's (its line is cut after `reduce GP`; the "
                   "rest is vLLM's template); site-packages paths, core.py line numbers and the start-up lines are ours. "
                   "Ours as well: the holder, a developer's other `vllm serve` in a login session (its EngineCore "
                   "holds ~19.6 GB, outside the unit's cgroup), and Restart=no.")


@case4
def stale4_sgl_049_orphan_scheduler_after_sigint_leftover() -> Case:
    c = Case("stale4_sgl_049_orphan_scheduler_after_sigint_leftover", "sglang", "0.4.9.post1", day=13, hour=7,
             model="/models/Llama-3.2-3B-Instruct")
    orphan = 36331
    c.pid_base = orphan - 212 - 1117  # the first invocation's scheduler is the report's leftover pid
    s = c.slog
    inv = c.start()
    sglang_boot(c, inv, "load", avail=22.94)
    c.app(inv, "\rLoading safetensors checkpoint shards:  50% Completed | 1/2 [00:01<00:01,  1.21s/it]"
               "\rLoading safetensors checkpoint shards: 100% Completed | 2/2 [00:02<00:00,  1.13s/it]\r",
          "sched", dt=2.4)
    for line in [
        "Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=16.81 GB, mem usage=6.13 GB.",
        "KV Cache is allocated. #tokens: 119360, K size: 6.38 GB, V size: 6.38 GB",
        "Memory pool end. avail mem=3.92 GB",
        "Capture cuda graph begin. This can take up to several minutes. avail mem=3.81 GB",
        "Capture cuda graph end. Time elapsed: 6.12 s. mem usage=0.42 GB. avail mem=3.39 GB.",
        "max_total_num_tokens=119360, chunked_prefill_size=2048, max_prefill_tokens=16384, max_running_requests=2048, "
        "context_len=131072, available_gpu_mem=3.39 GB",
    ]:
        c.app(inv, s(line), "sched", dt=0.8)
    for line in [f"INFO:     Started server process [{inv.main}]", "INFO:     Waiting for application startup.",
                 "INFO:     Application startup complete.",
                 "INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)"]:
        c.app(inv, s(line, None), dt=0.2)
    c.app(inv, s("The server is fired up and ready to roll!", None), dt=1.5)
    for i in range(3):
        c.app(inv, s(f"Decode batch. #running-req: 3, #token: {2210 + 97 * i}, token usage: 0.01, cuda graph: True, "
                     f"gen throughput (token/s): {201.4 + 3 * i:.2f}, #queue-req: 0,"), "sched", dt=6.0)
    stop_t = c.t + 40.0
    c.stopping(inv, dt=40.5)
    c.app(inv, "KeyboardInterrupt", dt=0.2)
    sched = c._proc(inv, "sched")[0]
    c.remains(inv, sched, "sglang::schedul")
    c.clean_exit(inv)
    c.stopped(inv)
    start_t = c.t + 600.0
    inv2 = c.start(dt=600.5, manual=True)
    c.leftover(inv2, sched, "sglang::schedul")
    sglang_boot(c, inv2, "load", avail=2.91)
    oom = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 392.00 MiB. GPU 0 has a total capacity of "
           "23.55 GiB of which 371.06 MiB is free. Process 36331 has 19.94 GiB memory in use. Including non-PyTorch "
           "memory, this process has 2.58 GiB memory in use. Of the allocated memory 2.31 GiB is allocated by "
           "PyTorch, and 19.87 MiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large "
           "try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation "
           "for Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)")
    sglang_sched_exception(c, inv2, SG_SCHED + [
        f'  File "{SG}/model_executor/model_runner.py", line 563, in load_model',
        "    self.model = get_model(",
        f'  File "{SG}/model_loader/loader.py", line 383, in load_model',
        "    model.load_weights(self._get_all_weights(model_config, model))",
        oom,
    ])
    sglang_sigquit(c, inv2, serving=False)
    c.exit(inv2, "killed", "9", cpu="21.730s")
    c.extra = {
        "nvidia_smi_apps": [{"pid": 1890, "process_name": "/usr/lib/xorg/Xorg", "used_memory": 207},
                            {"pid": 2210, "process_name": "/usr/bin/gnome-shell", "used_memory": 164},
                            {"pid": orphan, "process_name": "sglang::scheduler", "used_memory": 20418}],
        "process_info": [{"pid": orphan, "ppid": 1, "user": "sglang", "cgroup": f"/system.slice/{c.unit}",
                          "cmdline": "sglang::scheduler", "started": c.iso(inv.start_t + 3)}],
        "systemctl_show": {"MainPID": "0", "ActiveState": "failed", "SubState": "failed", "NRestarts": "0",
                           "Result": "signal", "KillSignal": "2", "SendSIGKILL": "no"},
        "actions": [{"at": c.iso(stop_t), "who": "muthu", "action": "stop", "detail": "free the GPU"},
                    {"at": c.iso(start_t), "who": "muthu", "action": "start", "detail": ""}],
    }
    return expect4(c, "gpu_memory_held_by_stale_process", False,
                   ["Found left-over process 36331", "Process 36331 has 19.94 GiB memory in use"],
                   ["healthy", "kv_cache_oom", "operator_action"], "https://github.com/ai-dynamo/dynamo/issues/1889",
                   "A small Llama-3.2-3B SGLang server on a desktop GPU (Xorg, gnome-shell in nvidia-smi, as in the "
                   "report): interrupting it with SIGINT (Ctrl+C in the report; here KillSignal=SIGINT, SendSIGKILL=no) "
                   "leaves its sglang::scheduler running and holding the GPU. The report's nvidia-smi lists pid 36331 "
                   "last; we take it as the orphaned scheduler (its name/MiB ours). Ours: systemd's `remains running` "
                   "and `Found left-over process 36331` lines, the person's stop and start (audit log), and the next "
                   "start's CUDA OOM while loading weights (torch's template naming Process 36331; SGLang 0.4.9 frames "
                   "ours; version estimated from the report's date). The holder is a leftover of the previous "
                   "invocation, named by systemd; the failure is not the stop. Restart=no.")


# ============================== decoy: own processes only ======================================


@case4
def kv4_sgl_0462_cpu_offload_load_oom_own_scheduler() -> Case:
    c = Case("kv4_sgl_0462_cpu_offload_load_oom_own_scheduler", "sglang", "0.4.6.post2", day=14, hour=7,
             model="/models/gemma-3-1b-it")
    s = c.slog
    inv = c.start()
    c.app(inv, None, dt=4.0)  # server_args=ServerArgs(...)
    c.app(inv, s("Attention backend not set. Use flashinfer backend by default."), "sched", dt=1.5)
    c.app(inv, s("Init torch distributed begin."), "sched", dt=0.5)
    c.app(inv, s("Init torch distributed ends. mem usage=0.00 GB"), "sched", dt=0.4)
    c.app(inv, s("Load weight begin. avail mem=5.52 GB"), "sched", dt=0.6)
    sglang_sched_exception(c, inv, SG_SCHED + [
        f'  File "{SG}/model_executor/model_runner.py", line 474, in load_model',
        "    self.model = get_model(",
        f'  File "{SG}/model_loader/loader.py", line 374, in load_model',
        "    model = _initialize_model(",
        f'  File "{SG}/models/gemma3_causal.py", line 603, in __init__',
        "    self.model = make_layers(",
        f'  File "{SG}/utils.py", line 435, in maybe_offload_to_cpu',
        "    cpu_data = torch.empty_strided(",
        "RuntimeError: CUDA error: out of memory",
        "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might "
        "be incorrect.",
        "For debugging consider passing CUDA_LAUNCH_BLOCKING=1",
        "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.",
        "",
    ])
    sglang_sigquit(c, inv, serving=False)
    ownership(c, inv, [("sched", 5418)])
    c.exit(inv, "killed", "9", cpu="19.644s")
    c.extra["systemctl_show"].update({"ActiveState": "failed", "SubState": "failed", "Result": "signal",
                                      "MainPID": "0"})
    return expect4(c, "kv_cache_oom", False, ["RuntimeError: CUDA error: out of memory"],
                   ["healthy", "gpu_memory_held_by_stale_process", "cuda_oom_runtime", "cuda_graph_capture_oom"],
                   "https://github.com/sgl-project/sglang/issues/6526",
                   "sglang 0.4.6.post2 on a 6 GB GPU (the report's Docker environment) serving gemma-3-1b-it with "
                   "--mem-fraction-static 0.7 --cpu-offload-gb 1: the start fails with `CUDA error: out of memory` "
                   "(the report's title) while the model's weights are set up for CPU offload; the same command with "
                   "--cpu-offload-gb 0 starts. The torch CUDA-error tail is torch's template, the frames through "
                   "maybe_offload_to_cpu and the start-up lines are ours. Ownership decoy: nvidia-smi lists only the "
                   "unit's own sglang::scheduler (child of MainPID, unit cgroup). A CUDA OOM while loading weights, "
                   "before the server is ready: the start-up memory budget. Restart=no.")


# ============================== port_in_use ====================================================


@case4
def port4_sgl_057_docker_tp2_http_port_taken_loop() -> Case:
    c = Case("port4_sgl_057_docker_tp2_http_port_taken_loop", "sglang", "0.5.7", day=15, hour=7, tp=2,
             model="/models/Qwen2.5-32B-Instruct")

    def d(msg: str, rank: str | None = "DP0 TP0") -> str:
        return f"[{STAMP_S}{' ' + rank if rank else ''}] {msg}"

    for _k in range(3):
        inv = c.start(dt=0.2)
        c.app(inv, None, dt=4.0)  # server_args=ServerArgs(...)
        for r, role in (("DP0 TP0", "sched"), ("DP0 TP1", "sched1")):
            c.app(inv, d("Init torch distributed begin.", r), role, dt=0.6)
        for r, role in (("DP0 TP0", "sched"), ("DP0 TP1", "sched1")):
            c.app(inv, d("Init torch distributed ends. mem usage=0.29 GB", r), role, dt=0.4)
        c.app(inv, d("MOE_RUNNER_BACKEND is not initialized, the backend will be automatically selected"), "sched")
        for r, role in (("DP0 TP1", "sched1"), ("DP0 TP0", "sched")):
            c.app(inv, d("Ignore import error when loading sglang.srt.models.mindspore: name 'ms' is not defined", r),
                  role, dt=0.5)
        for r, role in (("DP0 TP0", "sched"), ("DP0 TP1", "sched1")):
            c.app(inv, d("Load weight begin. avail mem=78.53 GB", r), role, dt=0.2)
        c.app(inv, "\rLoading safetensors checkpoint shards:  53% Completed | 9/17 [00:09<00:08,  1.01s/it]"
                   "\rLoading safetensors checkpoint shards: 100% Completed | 17/17 [00:17<00:00,  1.02s/it]\r",
              "sched", dt=17.0)
        for r, role in (("DP0 TP0", "sched"), ("DP0 TP1", "sched1")):
            c.app(inv, d("Load weight end. type=Qwen2ForCausalLM, dtype=torch.bfloat16, avail mem=47.71 GB, "
                         "mem usage=30.82 GB.", r), role, dt=0.3)
            c.app(inv, d("KV Cache is allocated. #tokens: 713402, K size: 21.77 GB, V size: 21.77 GB", r), role)
        c.app(inv, d("Capture cuda graph begin. This can take up to several minutes. avail mem=3.62 GB"), "sched",
              dt=0.5)
        c.app(inv, d("Capture cuda graph end. Time elapsed: 11.27 s. mem usage=0.61 GB. avail mem=3.01 GB."),
              "sched", dt=11.3)
        c.app(inv, d("max_total_num_tokens=713402, chunked_prefill_size=8192, max_prefill_tokens=16384, "
                     "max_running_requests=4096, context_len=32768, available_gpu_mem=3.01 GB"), "sched")
        for line in [
            f"INFO:     Started server process [{inv.main}]",
            "INFO:     Waiting for application startup.",
            "Using default chat sampling params from model generation config: {'repetition_penalty': 1.05, "
            "'temperature': 0.7, 'top_k': 20, 'top_p': 0.8}",
            "INFO:     Application startup complete.",
            "ERROR:    [Errno 98] error while attempting to bind on address ('127.0.0.1', 30000): address already in "
            "use",
            "INFO:     Waiting for application shutdown.",
            "INFO:     Application shutdown complete.",
        ]:
            c.app(inv, d(line, None), dt=0.2)
        c.exit(inv, "exited", "1", restart=True, cpu="1min 38.902s")
    c.extra = {
        "ss_listen": [{"local": "127.0.0.1:30000", "pid": 4096937, "process": "python3", "user": "killerbear"}],
        "systemctl_show": {"MainPID": "0", "ActiveState": "activating", "SubState": "auto-restart",
                           "NRestarts": str(c.restarts), "Result": "exit-code"},
    }
    return expect4(c, "port_in_use", True,
                   ["error while attempting to bind on address ('127.0.0.1', 30000): address already in use"],
                   ["healthy", "nccl_failure", "engine_exception"], "https://github.com/sgl-project/sglang/issues/17402",
                   "SGLang with --tp 2 started on the host works (the report's host log ends `Uvicorn running on "
                   "http://127.0.0.1:30000`, server process 4096937); the same server started in Docker with TP > 1 "
                   "reports `address already in use` (the report's title). Verbatim from the report: the `DP0 TPk` "
                   "prefix shape, `Init torch distributed ends. mem usage=0.29 GB`, the MOE_RUNNER_BACKEND and mindspore "
                   "import lines, `Load weight begin.` and the chat sampling params line. The report's failing line is "
                   "not in the part we could read: here the unit (host networking) binds 127.0.0.1:30000 after loading "
                   "and capture while the host's own server (pid 4096937, ss evidence ours) still holds it; the "
                   "uvicorn line follows uvicorn's template. Version 0.5.7 estimated from the date (January 2026). "
                   "Restart=always: three starts, each failing at bind.")


@case4
def port4_vllm_073_v0_port_held_after_crash_start_limit() -> Case:
    c = Case("port4_vllm_073_v0_port_held_after_crash_start_limit", "vllm", "0.7.3", v1=False, day=16, hour=7,
             model="mistralai/Pixtral-12B-2409")
    v = c.vlog
    ap = f"{VP}/entrypoints/openai/api_server.py"
    n = 5
    for k in range(n):
        inv = c.start(dt=0.2 if k == 0 else 0.1)
        c.app(inv, v("INFO", "__init__.py:207", "Automatically detected platform cuda."), dt=3.0)
        c.app(inv, v("INFO", "api_server.py:912", "vLLM API server version 0.7.3"))
        c.app(inv, v("INFO", "api_server.py:913", "args: Namespace(host='0.0.0.0', port=5001, uvicorn_log_level='info', "
                     "allow_credentials=False, allowed_origins=['*'], allowed_methods=['*'], allowed_headers=['*'], "
                     "api_key=None, lora_modules=None, prompt_adapters=None, chat_template=None, "
                     "chat_template_content_format='auto', response_role='assistant', ssl_keyfile=None, "
                     "ssl_certfile=None, ssl_ca_certs=None, ssl_cert_reqs=0, root_path=None, middleware=[], "
                     "return_tokens_as_token_ids=False, disable_frontend_multiprocessing=False, "
                     "enable_request_id_headers=False, enable_auto_tool_choice=False, enable_reasoning=False, "
                     "reasoning_parser=None, tool_call_parser=None, tool_parser_plugin='', "
                     "model='mistralai/Pixtral-12B-2409', task='auto', tokenizer=None, skip_tokenizer_init=False, "
                     "revision=None, code_revision=None, tokenizer_revision=None, tokenizer_mode='mistral', "
                     "trust_remote_code=False, allowed_local_media_path=None, "
                     "download_dir='/home/paperspace/.cache/huggingface/hub', load_format='auto', "
                     "config_format=<ConfigFormat.AUTO: 'auto'>, dtype='auto', kv_cache_dtype='auto', "
                     "max_model_len=49152, guided_decoding_backend='xgrammar')"))
        c.many(inv, [
            "Traceback (most recent call last):",
            '  File "/opt/vllm/bin/vllm", line 8, in <module>',
            "    sys.exit(main())",
            "             ^^^^^^",
            f'  File "{VP}/entrypoints/cli/main.py", line 73, in main',
            "    args.dispatch_function(args)",
            f'  File "{VP}/entrypoints/cli/serve.py", line 34, in cmd',
            "    uvloop.run(run_server(args))",
            '  File "/opt/vllm/lib/python3.12/site-packages/uvloop/__init__.py", line 109, in run',
            "    return __asyncio.run(",
            "           ^^^^^^^^^^^^^^",
            f'  File "{ap}", line 947, in run_server',
            "    sock = create_server_socket(sock_addr)",
            "           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
            f'  File "{ap}", line 917, in create_server_socket',
            "    sock.bind(addr)",
            "OSError: [Errno 98] Address already in use",
        ], dt=0.4)
        if k < n - 1:
            c.exit(inv, "exited", "1", restart=True, cpu="6.811s", dt=0.3)
        else:
            c.mgr(f"{c.unit}: Main process exited, code=exited, status=1/FAILURE", inv, dt=0.3, prio=5, mid="exited",
                  EXIT_CODE="exited", EXIT_STATUS="1", COMMAND="ExecStart")
            c.mgr(f"{c.unit}: Failed with result 'exit-code'.", inv, prio=4, mid="result", func="unit_log_failure",
                  UNIT_RESULT="exit-code")
            c.consumed(inv, "6.794s")
            c.mgr(f"{c.unit}: Scheduled restart job, restart counter is at {n}.", inv, dt=1.0, mid="restart",
                  func="service_enter_restart", N_RESTARTS=str(n))
            c.mgr(f"Stopped {c.ident}.", inv, mid="stopped", func="job_emit_done_message", JOB_TYPE="restart",
                  JOB_RESULT="done")
            c.start_limit(inv)
    c.extra = {
        "ss_listen": [{"local": "0.0.0.0:5001", "pid": 0, "process": "", "user": "", "state": "TIME-WAIT"}],
        "systemctl_show": {"MainPID": "0", "ActiveState": "failed", "SubState": "failed", "NRestarts": str(n),
                           "Result": "start-limit-hit", "RestartUSec": "1s"},
    }
    return expect4(c, "port_in_use", True, ["OSError: [Errno 98] Address already in use"],
                   ["healthy", "unknown", "bad_argument"], "https://github.com/vllm-project/vllm/issues/9737",
                   "Since vLLM 0.6.2 the API server binds its socket before starting the engine; after a crash the "
                   "port stays unusable for about a minute and a supervisor that restarts at once loops (the report's "
                   "title and a comment: `infinite loop` on 0.7.3, Pixtral-12B on port 5001, `I have nothing on port "
                   "5001`). The platform, version and args lines are the comment's (args cut after "
                   "guided_decoding_backend); the traceback through create_server_socket and `OSError: [Errno 98] "
                   "Address already in use` follow 0.7.3's code (line numbers ours). The crash that freed the port is "
                   "before this journal window. Restart=always, RestartSec=1: five failing starts, then the start "
                   "limit. V0 engine (not reached).")


@case4
def port4_vllm_0110_v1_worker_tcpstore_eaddrinuse() -> Case:
    c = Case("port4_vllm_0110_v1_worker_tcpstore_eaddrinuse", "vllm", "0.11.0", day=17, hour=7, tp=2,
             model="/models/Qwen2.5-VL-7B-Instruct")
    v = c.vlog
    tv = "/opt/vllm/lib/python3.12/site-packages/torch/distributed"
    mp = f"{VP}/v1/executor/multiproc_executor.py"
    inv = c.start()
    v1_boot_head(c, inv, "api_server.py:1839", "core.py:77", ", 'tensor_parallel_size': 2")
    c.app(inv, v("INFO", "multiproc_executor.py:720", "Creating 2 worker processes (local_world_size=2)."), "engine",
          dt=0.8)
    c.app(inv, v("ERROR", "multiproc_executor.py:597", "WorkerProc failed to start."), "worker1", dt=2.4)
    for line in [
        "Traceback (most recent call last):",
        f'  File "{mp}", line 571, in worker_main',
        "    worker = WorkerProc(*args, **kwargs)",
        "             ^^^^^^^^^^^^^^^^^^^^^^^^^^^",
        f'  File "{mp}", line 430, in __init__',
        "    self.worker.init_device()",
        f'  File "{VP}/worker/worker_base.py", line 611, in init_device',
        "    self.worker.init_device()  # type: ignore",
        "    ^^^^^^^^^^^^^^^^^^^^^^^^^",
        f'  File "{VP}/v1/worker/gpu_worker.py", line 169, in init_device',
        "    init_worker_distributed_environment(self.vllm_config, self.rank,",
        f'  File "{VP}/v1/worker/gpu_worker.py", line 712, in init_worker_distributed_environment',
        "    init_distributed_environment(parallel_config.world_size, rank,",
        f'  File "{VP}/distributed/parallel_state.py", line 1016, in init_distributed_environment',
        "    torch.distributed.init_process_group(",
        f'  File "{tv}/c10d_logger.py", line 81, in wrapper',
        "    return func(*args, **kwargs)",
        f'  File "{tv}/distributed_c10d.py", line 1710, in init_process_group',
        "    store, rank, world_size = next(rendezvous_iterator)",
        f'  File "{tv}/rendezvous.py", line 214, in _tcp_rendezvous_handler',
        "    store = _create_c10d_store(",
        f'  File "{tv}/rendezvous.py", line 189, in _create_c10d_store',
        "    return TCPStore(",
        "torch.distributed.DistNetworkError: The server socket has failed to listen on any local network address. "
        "port: 18071, useIpv6: false, code: -98, name: EADDRINUSE, message: address already in use",
    ]:
        c.app(inv, v("ERROR", "multiproc_executor.py:597", line), "worker1", dt=0.0)
    v1_init_failed(c, inv, "core.py:708", [
        f'  File "{VP}/v1/engine/core.py", line 699, in run_engine_core',
        "    engine_core = EngineCoreProc(*args, **kwargs)",
        f'  File "{mp}", line 106, in _init_executor',
        "    self.workers = WorkerProc.wait_for_ready(unready_workers)",
        f'  File "{mp}", line 509, in wait_for_ready',
        "    raise e from None",
        "Exception: WorkerProc initialization failed due to an exception in a background process. See stack trace "
        "for root cause.",
    ])
    c.exit(inv, "exited", "1", restart=True, cpu="31.116s")
    inv2 = c.start(dt=0.1)
    vllm_boot(c, inv2)
    vllm_serve(c, inv2, 4, gen=388.2)
    c.extra["systemctl_show"] = {"MainPID": str(inv2.main), "ActiveState": "active", "SubState": "running",
                                 "NRestarts": "1", "Result": "success"}
    return expect4(c, "port_in_use", False, ["name: EADDRINUSE, message: address already in use"],
                   ["healthy", "nccl_failure", "engine_exception"], "https://github.com/verl-project/verl/issues/5889",
                   "A TP=2 vLLM V1 server (verl's vLLMHttpServer in the report) fails to start because a worker's "
                   "torch TCPStore port 18071, picked as a free port, is taken by the time it binds. The "
                   "multiproc_executor.py:597 location, the frames multiproc_executor.py l.430 `self.worker."
                   "init_device()` / gpu_worker.py l.169 `init_worker_distributed_environment(...)` and the "
                   "DistNetworkError (the title) are the report's; Ray's `[repeated 2x across cluster]` suffixes are "
                   "dropped (no Ray here), the other frames and the start-up/serving lines follow 0.11.0's templates. "
                   "Version estimated (verl, April 2026, V1 multiproc executor). Restart=on-failure: the next start "
                   "gets a free port and serves; the failure is in the window, so not healthy. One restart, no loop.")


# ============================== host_oom_kill ==================================================


@case4
def hoom4_vllm_0901_v1_enginecore_global_oom_serving() -> Case:
    c = Case("hoom4_vllm_0901_v1_enginecore_global_oom_serving", "vllm", "0.9.0.1", day=18, hour=7,
             model="/models/Qwen3-32B")
    v = c.vlog
    inv = c.start()
    vllm_boot(c, inv)
    vllm_serve(c, inv, 6)
    eng = c._proc(inv, "engine")[0]
    c.kernel_line("python3 invoked oom-killer: gfp_mask=0x140cca(GFP_HIGHUSER_MOVABLE|__GFP_COMP), order=0, "
                  "oom_score_adj=0", dt=8.0)
    c.kernel_line(f"oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0,global_oom,"
                  f"task_memcg=/system.slice/{c.unit},task=python3,pid={eng},uid=998")
    c.kernel_line(f"Out of memory: Killed process {eng} (python3) total-vm:92140288kB, anon-rss:58712064kB, "
                  "file-rss:310272kB, shmem-rss:16384kB, UID:998 pgtables:121856kB oom_score_adj:0", prio=3)
    c.oom_killed(inv)
    c.app(inv, v("ERROR", "core_client.py:408", "Engine core proc EngineCore_0 died unexpectedly, shutting down "
                 "client."), dt=0.4)
    c.app(inv, 'INFO:     10.0.3.7:53120 - "POST /v1/chat/completions HTTP/1.1" 500 Internal Server Error', dt=0.1)
    c.app(inv, "INFO:     Shutting down", dt=0.3)
    c.app(inv, "INFO:     Waiting for application shutdown.")
    c.app(inv, "INFO:     Application shutdown complete.")
    c.app(inv, f"INFO:     Finished server process [{inv.main}]")
    c.mgr(f"{c.unit}: Failed with result 'oom-kill'.", inv, dt=0.6, prio=4, mid="result", func="unit_log_failure",
          UNIT_RESULT="oom-kill")
    c.consumed(inv, "5h 41min 2.337s")
    c.auto_restart(inv)
    inv2 = c.start(dt=0.1)
    vllm_boot(c, inv2)
    vllm_serve(c, inv2, 2)
    c.extra["unit_file"] = (f"[Service]\nExecStart=/opt/vllm/bin/vllm serve {c.model}\n"
                            "Restart=always\n")
    return expect4(c, "host_oom_kill", False, ["Out of memory: Killed process"],
                   ["healthy", "unknown", "engine_exception", "cuda_oom_runtime"],
                   "https://github.com/vllm-project/vllm/issues/19048",
                   "After upgrading to v0.9.0.1 (torch 2.7.0, sentence-transformers installed: the report's "
                   "environment) vLLM's host RAM use grows until the system runs out of memory (the report's title: "
                   "system memory, not GPU). The report's logs are not in the part we could read: here a chat "
                   "server (V1) serves, the kernel's global OOM killer kills its EngineCore (still `python3` "
                   "before 0.10's process titles), the API server logs `Engine core proc EngineCore_0 died "
                   "unexpectedly`, systemd records the OOM kill and stops the unit (OOMPolicy=stop), Restart=always "
                   "brings it back serving. Kernel lines follow the kernel's template, pids/sizes ours; the other lines "
                   "follow 0.9.0's templates. One restart, no loop.")


@case4
def hoom4_vllm_022_runai_streamer_ray_worker_memcg() -> Case:
    ray_cmd = "ray::RayWorkerWrapper.execute_method"
    c = HCase("hoom4_vllm_022_runai_streamer_ray_worker_memcg", "vllm", "0.22.0", day=19, hour=7, tp=4,
              model="s3://models/DeepSeek-V3.2", roles={f"ray{k}": (300 + k, "ray::RayWorkerW", ray_cmd)
                                                        for k in range(4)})
    v = c.vlog
    inv = c.start()
    v1_boot_head(c, inv, "api_server.py:1977", "core.py:93",
                 ", 'load_format': 'runai_streamer', 'distributed_executor_backend': 'ray', 'tensor_parallel_size': 4")
    c.app(inv, v("INFO", "ray_utils.py:396", "Connecting to existing Ray cluster at address: 127.0.0.1:6379..."),
          "engine", dt=2.0)
    for k in range(4):
        c.app(inv, f"(RayWorkerWrapper pid={inv.main + 300 + k}) " + v("INFO", "gpu_model_runner.py:3338",
                                                                      f"Starting to load model {c.model}..."),
              "engine", dt=0.4)
    c.app(inv, f"(RayWorkerWrapper pid={inv.main + 300}) [RunAI Streamer] Overall time to stream 641.9 GiB of all "
               "files to cpu: 212.43s, 3.0 GiB/s", "engine", dt=212.0)
    victim = c._proc(inv, "ray2")[0]
    mem = f"/system.slice/{c.unit}"
    c.kernel_line("ray::RayWorkerW invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), order=0, oom_score_adj=0", dt=30.0)
    c.kernel_line(f"oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,mems_allowed=0-3,oom_memcg={mem},"
                  f"task_memcg={mem},task=ray::RayWorkerW,pid={victim},uid=998")
    c.kernel_line(f"Memory cgroup out of memory: Killed process {victim} (ray::RayWorkerW) total-vm:781203456kB, "
                  "anon-rss:702611456kB, file-rss:1048576kB, shmem-rss:2097152kB, UID:998 pgtables:1402880kB "
                  "oom_score_adj:0", prio=3)
    c.oom_killed(inv)
    v1_init_failed(c, inv, "core.py:780", [
        f'  File "{VP}/v1/executor/ray_executor.py", line 478, in _run_workers',
        "    ray_worker_outputs = ray.get(ray_worker_outputs)",
        "ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.",
        "\tclass_name: RayWorkerWrapper",
        "\tactor_id: 5f1c0b8a2e44d7c19a3f6e2d01000000",
        f"\tpid: {victim}",
        "The actor is dead because its worker process has died. Worker exit type: SYSTEM_ERROR Worker exit detail: "
        "Worker unexpectedly exits with a connection error code 2. End of file. There are some potential root "
        "causes. (1) The process is killed by SIGKILL by OOM killer due to high memory usage.",
    ], utils_line=1112)
    c.mgr(f"{c.unit}: Main process exited, code=exited, status=1/FAILURE", inv, dt=1.2, prio=5, mid="exited",
          EXIT_CODE="exited", EXIT_STATUS="1", COMMAND="ExecStart")
    c.mgr(f"{c.unit}: Failed with result 'oom-kill'.", inv, prio=4, mid="result", func="unit_log_failure",
          UNIT_RESULT="oom-kill")
    c.consumed(inv, "1h 2min 7.311s")
    c.extra = {
        "unit_file": (f"[Service]\nExecStart=/opt/vllm/bin/vllm serve {c.model} --tensor-parallel-size 4 "
                      "--load-format runai_streamer --distributed-executor-backend ray\nMemoryMax=720G\nRestart=no\n"),
        "process_info": [{"pid": victim, "ppid": inv.main + 290, "user": "vllm", "cgroup": mem, "cmdline": ray_cmd,
                          "started": c.iso(inv.start_t + 12)}],
    }
    return expect4(c, "host_oom_kill", False, ["Memory cgroup out of memory: Killed process"],
                   ["healthy", "unknown", "engine_exception", "model_load_failure"],
                   "https://github.com/vllm-project/vllm/issues/44430",
                   "--load-format runai_streamer keeps about the full checkpoint in host RAM on every TP worker under "
                   "the Ray executor, so large models host-OOM while loading (the report's title: a regression from "
                   "#43464, June 2026, aarch64, torch 2.11; vLLM version estimated). Here the unit's MemoryMax kills a "
                   "Ray worker (CONSTRAINT_MEMCG, the unit's cgroup). Kernel lines follow the kernel's template, the "
                   "RunAI/Ray/vLLM lines their templates, pids/sizes ours. vLLM's ActorDiedError and `Engine core "
                   "initialization failed` are the consequence of the kill. Restart=no.")


@case4
def hoom4_sgl_0510_memorymax_scheduler_killed_mid_load_loop() -> Case:
    c = Case("hoom4_sgl_0510_memorymax_scheduler_killed_mid_load_loop", "sglang", "0.5.10", day=20, hour=7,
             model="/models/Qwen3-30B-A3B-Instruct-2507-FP8")
    sp = "/opt/sglang/lib/python3.12/site-packages/sglang/srt/entrypoints"
    mem = f"/system.slice/{c.unit}"
    sched_pids: list[tuple[int, float]] = []
    for _k in range(3):
        inv = c.start(dt=0.2)
        sglang_boot(c, inv, "load", avail=46.71)
        c.app(inv, "\rLoading safetensors checkpoint shards:  38% Completed | 6/16 [00:11<00:19,  1.92s/it]", "sched",
              dt=11.0)
        sched = c._proc(inv, "sched")[0]
        sched_pids.append((sched, inv.start_t + 6))
        c.kernel_line("sglang::schedul invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), order=0, oom_score_adj=0",
                      dt=6.0)
        c.kernel_line(f"oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,mems_allowed=0,oom_memcg={mem},"
                      f"task_memcg={mem},task=sglang::schedul,pid={sched},uid=998")
        c.kernel_line(f"Memory cgroup out of memory: Killed process {sched} (sglang::schedul) total-vm:61872128kB, "
                      "anon-rss:15941632kB, file-rss:712704kB, shmem-rss:65536kB, UID:998 pgtables:41216kB "
                      "oom_score_adj:0", prio=3)
        c.oom_killed(inv)
        c.app(inv, c.slog("Rank 0 scheduler is dead. Please check if there are relevant logs.", None), dt=0.6)
        c.app(inv, c.slog("Exit code: -9", None))
        c.many(inv, [
            "Traceback (most recent call last):",
            '  File "<frozen runpy>", line 198, in _run_module_as_main',
            '  File "<frozen runpy>", line 88, in _run_code',
            '  File "/opt/sglang/lib/python3.12/site-packages/sglang/launch_server.py", line 32, in <module>',
            "    run_server(server_args)",
            f'  File "{sp}/http_server.py", line 1468, in launch_server',
            "    tokenizer_manager, template_manager, scheduler_info, port_args = _launch_subprocesses(",
            f'  File "{sp}/engine.py", line 897, in _launch_subprocesses',
            "    data = scheduler_pipe_readers[i].recv()",
            "EOFError",
        ])
        c.mgr(f"{c.unit}: Main process exited, code=exited, status=1/FAILURE", inv, dt=0.4, prio=5, mid="exited",
              EXIT_CODE="exited", EXIT_STATUS="1", COMMAND="ExecStart")
        c.mgr(f"{c.unit}: Failed with result 'oom-kill'.", inv, prio=4, mid="result", func="unit_log_failure",
              UNIT_RESULT="oom-kill")
        c.consumed(inv, "52.417s")
        c.auto_restart(inv, delay=30.0)
    c.extra = {
        "unit_file": ("[Service]\nExecStart=/opt/sglang/bin/python3 -m sglang.launch_server --model-path "
                      f"{c.model} --host 0.0.0.0 --port 30000\nMemoryMax=16G\nRestart=always\nRestartSec=30\n"),
        "process_info": [{"pid": p, "ppid": p - 212, "user": "sglang", "cgroup": mem, "cmdline": "sglang::scheduler",
                          "started": c.iso(t)} for p, t in sched_pids],
    }
    return expect4(c, "host_oom_kill", True, ["Memory cgroup out of memory: Killed process"],
                   ["healthy", "unknown", "engine_exception", "kv_cache_oom"],
                   "https://github.com/Tanguille/cluster/pull/3650",
                   "A homelab cluster's SGLang deployment: its host-RAM working set is ~17 GiB (cgroup memory.current), "
                   "and memory limits of 28Gi and 16Gi both OOM-killed sglang mid-load (the PR's description and the "
                   "inline comment it quotes). Here the unit's MemoryMax=16G kills the scheduler while it reads the "
                   "checkpoint; the kernel lines follow the kernel's template with our pid/sizes, `Rank 0 scheduler is "
                   "dead` and the EOFError tail SGLang's (FORMATS a.4), the rest ours. SGLang version estimated "
                   "(mid-2026, 0.5.x). Restart=always: the same kill on each of three starts.")
