"""holdout3 cases, theme `hostres` (see incident_h3_base.py): scored only, never tuned on.

Host resources: GPU memory held by a process that is not the unit's (stale holder), an address taken
(HTTP port, torch TCPStore, ZMQ), the kernel's OOM killer, and one ownership decoy (a start-up GPU OOM where
nvidia-smi lists only the unit's own EngineCore). Each case is rebuilt from one public report; the error lines
are the report's, systemd's/journald's lines and the engines' start-up/serving templates are incident_kit's and
incident_scenes' (FORMATS.md), the side evidence is ours unless the notes say otherwise. Labels follow
docs/DIAGNOSIS.md "Labels" only, set before any diagnoser was run.
"""

from __future__ import annotations

from incident_h3_base import Case, case3, expect3
from incident_kit import STAMP_G, STAMP_S, Inv
from incident_scenes import ownership, sglang_boot, vllm_boot, vllm_serve, vllm_start_fail


class HCase(Case):
    """A Case with extra process roles (DP schedulers with their own process titles): role -> (pid offset from
    MainPID, _COMM, _CMDLINE)."""

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


SGL = "/opt/sglang/lib/python3.12/site-packages/sglang/srt"
SGL_SCHED_FRAMES = [  # frame shape of SGLang 0.5.9/0.5.10 (scheduler.py l.3130 ... tp_worker.py l.330, sglang#19781)
    f'  File "{SGL}/managers/scheduler.py", line 3130, in run_scheduler_process',
    "    scheduler = Scheduler(",
    "                ^^^^^^^^^^",
    f'  File "{SGL}/managers/scheduler.py", line 368, in __init__',
    "    self.init_model_worker()",
    f'  File "{SGL}/managers/scheduler.py", line 564, in init_model_worker',
    "    self.init_tp_model_worker()",
    f'  File "{SGL}/managers/scheduler.py", line 522, in init_tp_model_worker',
    "    self.tp_worker = TpModelWorker(",
    "                     ^^^^^^^^^^^^^^",
    f'  File "{SGL}/managers/tp_worker.py", line 247, in __init__',
    "    self._init_model_runner()",
    f'  File "{SGL}/managers/tp_worker.py", line 330, in _init_model_runner',
    "    self._model_runner = ModelRunner(",
    "                         ^^^^^^^^^^^^",
]


def dp_roles(n: int, name: str) -> dict[str, tuple[int, str, str]]:
    """SGLang DP scheduler processes `dp0..dp{n-1}` with the process title `name.format(k=...)`."""
    return {f"dp{k}": (212 + k, "sglang::schedul", name.format(k=k)) for k in range(n)}


# ============================== gpu_memory_held_by_stale_process ===============================


@case3
def stale3_sgl_0510_dp_orphans_slurm_loop() -> Case:
    c = HCase("stale3_sgl_0510_dp_orphans_slurm_loop", "sglang", "0.5.10", day=1, hour=3, tp=4,
              model="/models/Qwen3-30B-A3B", roles=dp_roles(4, "sglang::scheduler_DP{k}_TP{k}_EP{k}"))
    oom = ("RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. Current value: "
           "self.server_args.mem_fraction_static=0.8")
    frames = SGL_SCHED_FRAMES + [
        f'  File "{SGL}/model_executor/model_runner.py", line 411, in __init__',
        "    self.initialize(min_per_gpu_memory)",
        f'  File "{SGL}/model_executor/model_runner.py", line 603, in initialize',
        "    self.init_memory_pool(",
        f'  File "{SGL}/model_executor/model_runner_kv_cache_mixin.py", line 415, in init_memory_pool',
        "    raise RuntimeError(",
        oom,
    ]
    first = None
    for _k in range(3):
        inv = c.start(dt=0.2)
        first = first or inv
        c.app(inv, None, dt=4.0)  # server_args=ServerArgs(...)
        for k in range(4):
            c.app(inv, f"[{STAMP_S} DP{k} TP{k} EP{k}] Init torch distributed begin.", f"dp{k}", dt=0.5)
        for k in range(4):
            c.app(inv, f"[{STAMP_S} DP{k} TP{k} EP{k}] Load weight begin. avail mem=41.2{k} GB", f"dp{k}", dt=1.5)
        c.app(inv, "\rLoading safetensors checkpoint shards:  50% Completed | 8/16 [00:07<00:07,  1.09it/s]"
                   "\rLoading safetensors checkpoint shards: 100% Completed | 16/16 [00:14<00:00,  1.12it/s]\r",
              "dp0", dt=14.0)
        for k in range(4):
            c.app(inv, f"[{STAMP_S} DP{k} TP{k} EP{k}] Load weight end. type=Qwen3MoeForCausalLM, "
                       f"dtype=torch.bfloat16, avail mem=25.7{k} GB, mem usage=15.48 GB.", f"dp{k}", dt=0.3)
        for k in range(4):
            c.app(inv, f"[{STAMP_S} DP{k} TP{k} EP{k}] Scheduler hit an exception: Traceback (most recent call "
                       "last):", f"dp{k}", dt=0.4)
            c.many(inv, frames if k == 0 else [oom], f"dp{k}")
        c.app(inv, f"[{STAMP_S}] Received sigquit from a child process. It usually means the child failed.", dt=0.1)
        c.exit(inv, "killed", "9", restart=True, cpu="1min 2.448s")
    assert first is not None
    names = ["sglang::scheduler_DP0_TP0_EP0", "sglang::scheduler_DP1_TP1_EP1", "sglang::scheduler_DP2_TP2_EP2",
             "sglang::scheduler_DP3_TP3_EP3"]
    mem = [100998, 101044, 101044, 100804]
    c.extra = {
        "nvidia_smi_apps": [{"pid": 2505781 + k, "process_name": names[k], "used_memory": mem[k]} for k in range(4)],
        "process_info": [{"pid": 2505781 + k, "ppid": 1, "user": "user",
                          "cgroup": "/system.slice/slurmstepd.scope/system", "cmdline": names[k],
                          "started": c.iso(first.start_t - 5 * 3600)} for k in range(4)],
        "systemctl_show": {"MainPID": "0", "ActiveState": "activating", "SubState": "auto-restart",
                           "NRestarts": str(c.restarts), "Result": "signal"},
    }
    return expect3(c, "gpu_memory_held_by_stale_process", True,
                   ["Not enough memory. Please try to increase --mem-fraction-static"],
                   ["healthy", "kv_cache_oom"], "https://github.com/sgl-project/sglang/issues/23627",
                   "DP scheduler workers of an earlier Slurm job escape the job's cgroup, are reparented to PID 1 and "
                   "keep ~100 GB on each GPU; the next server on the node fails for lack of memory. nvidia-smi rows "
                   "(pids, process titles, MiB) and the `ppid 1` of the ps output are the report's; their cgroup "
                   "(outside the unit's) and start time are ours. The report does not quote the next start's error: "
                   "the start-up lines and SGLang's `Not enough memory` RuntimeError follow SGLang 0.5.9/0.5.10's "
                   "templates (frames of sglang#19781), version estimated from the report's date. The unit runs "
                   "dp-attention DP4/TP4/EP4 with --mem-fraction-static 0.8; Restart=always, three failing starts. "
                   "KV sizing loses to the proven foreign holder.")


@case3
def stale3_vllm_084_leftover_engine_after_restart() -> Case:
    c = Case("stale3_vllm_084_leftover_engine_after_restart", "vllm", "0.8.4", v1=False, day=2, hour=3, tp=8,
             model="/models/Llama-3.3-70B-Instruct")
    v = c.vlog
    c.pid_base = 104326 - 131 - 1117  # the first invocation's engine (rank 0) is pid 104326, the report's holder
    inv = c.start()
    c.app(inv, v("INFO", "api_server.py:1044", "vLLM API server version 0.8.4"), dt=4.0)
    c.app(inv, v("INFO", "llm_engine.py:240", f"Initializing a V0 LLM engine (v0.8.4) with config: model='{c.model}', "
                 f"speculative_config=None, tokenizer='{c.model}', skip_tokenizer_init=False, tokenizer_mode=auto, "
                 "revision=None, trust_remote_code=False, dtype=torch.bfloat16, max_seq_len=16384, "
                 "tensor_parallel_size=8, pipeline_parallel_size=1, enforce_eager=True"), "engine", dt=3.0)
    c.app(inv, v("INFO", "model_runner.py:1110", f"Starting to load model {c.model}..."), "engine", dt=2.0)
    c.app(inv, v("INFO", "model_runner.py:1110", f"Starting to load model {c.model}..."), "worker")
    c.app(inv, "\rLoading safetensors checkpoint shards:  50% Completed | 15/30 [00:10<00:10,  1.41it/s]"
               "\rLoading safetensors checkpoint shards: 100% Completed | 30/30 [00:21<00:00,  1.40it/s]\r",
          "engine", dt=21.0)
    c.app(inv, v("INFO", "model_runner.py:1146", "Model loading took 16.4629 GiB and 21.431275 seconds"), "engine")
    c.app(inv, v("INFO", "worker.py:267", "Memory profiling takes 6.41 seconds"), "engine", dt=6.4)
    c.app(inv, v("INFO", "worker.py:267", "the current vLLM instance can use total_gpu_memory (79.11GiB) x "
                 "gpu_memory_utilization (0.85) = 67.24GiB"), "engine")
    c.app(inv, v("INFO", "worker.py:267", "model weights take 16.46GiB; non_torch_memory takes 2.89GiB; PyTorch "
                 "activation peak memory takes 1.73GiB; the rest of the memory reserved for KV Cache is 46.16GiB."),
          "engine")
    c.app(inv, v("INFO", "executor_base.py:112", "# cuda blocks: 9453, # CPU blocks: 3276"), "engine")
    c.app(inv, v("INFO", "executor_base.py:117", "Maximum concurrency for 16384 tokens per request: 36.92x"), "engine")
    c.app(inv, v("INFO", "llm_engine.py:437", "init engine (profile, create kv cache, warmup model) took 48.66 "
                 "seconds"), "engine", dt=2.0)
    c.app(inv, v("INFO", "api_server.py:1081", "Starting vLLM API server on http://0.0.0.0:8000"), dt=0.5)
    c.app(inv, f"INFO:     Started server process [{inv.main}]")
    c.app(inv, "INFO:     Waiting for application startup.")
    c.app(inv, "INFO:     Application startup complete.")
    vllm_serve(c, inv, 3, gen=212.4)
    restart_t = c.t + 30.0
    c.stopping(inv, "restart", dt=30.5)
    c.app(inv, "INFO:     Shutting down", dt=0.1)
    c.app(inv, "INFO:     Waiting for application shutdown.")
    c.app(inv, "INFO:     Application shutdown complete.")
    c.app(inv, f"INFO:     Finished server process [{inv.main}]")
    old_engine = c._proc(inv, "engine")[0]
    c.remains(inv, old_engine, "python3")
    c.clean_exit(inv)
    c.stopped(inv, "restart")
    c.pid_base = 153962 - 131 - 2 * 1117  # the second invocation's engine is the report's 153962
    inv2 = c.start(dt=0.2)
    c.leftover(inv2, old_engine, "python3")
    mr = "/opt/vllm/lib/python3.12/site-packages/vllm"
    oom = ("CUDA out of memory. Tried to allocate 112.00 MiB. GPU 0 has a total capacity of 79.11 GiB of which 89.38 "
           "MiB is free. Process 104326 has 70.90 GiB memory in use. Process 153962 has 7.86 GiB memory in use. Of "
           "the allocated memory 6.30 GiB is allocated by PyTorch, and 34.47 MiB is reserved by PyTorch but "
           "unallocated. If reserved but unallocated memory is large try setting "
           "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for Memory "
           "Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)")
    vllm_start_fail(c, inv2, "load", [
        oom,
        "Traceback (most recent call last):",
        f'  File "{mr}/engine/multiprocessing/engine.py", line 436, in run_mp_engine',
        "    engine = MQLLMEngine.from_vllm_config(",
        f'  File "{mr}/worker/model_runner.py", line 1113, in load_model',
        "    self.model = get_model(vllm_config=self.vllm_config)",
        f'  File "{mr}/model_executor/models/llama.py", line 297, in __init__',
        "    self.mlp = LlamaMLP(",
        "torch.OutOfMemoryError: " + oom,
    ])
    c.app(inv2, f"[rank0]:[W{STAMP_G}.004412177 ProcessGroupNCCL.cpp:1496] Warning: WARNING: destroy_process_group() "
                "was not called before program exit, which can leak resources. For more info, please see "
                "https://pytorch.org/docs/stable/distributed.html#shutdown (function operator())", "engine", dt=0.2,
          tag=False)
    c.exit(inv2, "exited", "1", cpu="2min 41.120s")
    c.extra = {
        "nvidia_smi_apps": [{"pid": old_engine, "process_name": "python3", "used_memory": 72602}],
        "process_info": [{"pid": old_engine, "ppid": 1, "user": "vllm", "cgroup": f"/system.slice/{c.unit}",
                          "cmdline": c._proc(inv, "engine")[2], "started": c.iso(inv.start_t + 3)}],
        "systemctl_show": {"MainPID": "0", "ActiveState": "failed", "SubState": "failed", "Result": "exit-code",
                           "KillMode": "process", "NRestarts": "0"},
        "actions": [{"at": c.iso(restart_t), "who": "ravi", "action": "restart", "detail": "enable prefix caching"}],
    }
    return expect3(c, "gpu_memory_held_by_stale_process", False,
                   ["Process 104326 has 70.90 GiB memory in use", "Found left-over process 104326"],
                   ["healthy", "kv_cache_oom"], "https://github.com/ai-dynamo/dynamo/issues/1405",
                   "Llama-3.3-70B, TP8, --gpu-memory-utilization 0.85, --enforce-eager (the report's dynamo VllmWorker "
                   "args; dynamo of June 2025 ran vLLM 0.8.4 V0, version estimated). The OOM text naming Process "
                   "104326 (70.90 GiB) and Process 153962 (the failing process itself) and the NCCL "
                   "destroy_process_group warning are verbatim; the report ends in repeated Ctrl-C. Ours: a person "
                   "restarts the unit with KillMode=process, the old rank-0 engine process (pid 104326) `remains "
                   "running`, the new start logs `Found left-over process 104326` and dies loading weights. The holder "
                   "is a leftover of the previous invocation (systemd names it), not the current one. Restart=no.")


@case3
def stale3_vllm_0102_orphan_enginecore_ppid1_loop() -> Case:
    c = Case("stale3_vllm_0102_orphan_enginecore_ppid1_loop", "vllm", "0.10.2", day=3, hour=3,
             model="/models/Qwen2.5-14B-Instruct")
    v = c.vlog
    vp = "/opt/vllm/lib/python3.12/site-packages/vllm"
    first = None
    for _k in range(3):
        inv = c.start(dt=0.2)
        first = first or inv
        c.app(inv, v("INFO", "api_server.py:1896", "vLLM API server version 0.10.2"), dt=4.0)
        c.app(inv, v("INFO", "utils.py:328", f"non-default args: {{'model_tag': '{c.model}', 'model': '{c.model}', "
                     "'gpu_memory_utilization': 0.6}"))
        c.app(inv, v("INFO", "core.py:654", "Waiting for init message from front-end."), "engine", dt=3.0)
        c.app(inv, v("INFO", "core.py:76", f"Initializing a V1 LLM engine (v0.10.2) with config: model='{c.model}', "
                     f"speculative_config=None, tokenizer='{c.model}', skip_tokenizer_init=False, tokenizer_mode=auto, "
                     "revision=None, trust_remote_code=False, dtype=torch.bfloat16, max_seq_len=32768, "
                     "tensor_parallel_size=1, pipeline_parallel_size=1"), "engine")
        c.app(inv, v("ERROR", "core.py:718", "EngineCore failed to start."), "engine", dt=1.2)
        for line in [
            "Traceback (most recent call last):",
            f'  File "{vp}/v1/engine/core.py", line 709, in run_engine_core',
            "    engine_core = EngineCoreProc(*args, **kwargs)",
            f'  File "{vp}/v1/executor/abstract.py", line 54, in __init__',
            "    self._init_executor()",
            f'  File "{vp}/utils/__init__.py", line 3060, in run_method',
            "    return func(*args, **kwargs)",
            f'  File "{vp}/worker/worker_base.py", line 611, in init_device',
            "    self.worker.init_device()  # type: ignore",
            f'  File "{vp}/v1/worker/gpu_worker.py", line 180, in init_device',
            "    raise ValueError(",
            "ValueError: Free memory on device (31.07/79.18 GiB) on startup is less than desired GPU memory "
            "utilization (0.6, 47.51 GiB). Decrease GPU memory utilization or reduce GPU memory used by other "
            "processes.",
        ]:
            c.app(inv, v("ERROR", "core.py:718", line), "engine", dt=0.0)
        c.many(inv, [
            "Traceback (most recent call last):",
            f'  File "{vp}/v1/engine/utils.py", line 759, in wait_for_engine_startup',
            '    raise RuntimeError("Engine core initialization failed. "',
            "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): "
            "{'EngineCore_DP0': 1}",
        ], dt=0.3)
        c.exit(inv, "exited", "1", restart=True, cpu="14.822s")
    assert first is not None
    c.extra = {
        "nvidia_smi_apps": [{"pid": 77637, "process_name": "VLLM::EngineCore", "used_memory": 48652}],
        "process_info": [{"pid": 77637, "ppid": 1, "user": "dev", "cgroup": "/user.slice/user-1000.slice/session-3.scope",
                          "cmdline": "VLLM::EngineCore", "started": c.iso(first.start_t - 2 * 86400 - 4000)}],
        "systemctl_show": {"MainPID": "0", "ActiveState": "activating", "SubState": "auto-restart",
                           "NRestarts": str(c.restarts), "Result": "exit-code"},
    }
    return expect3(c, "gpu_memory_held_by_stale_process", True,
                   ["Free memory on device (31.07/79.18 GiB) on startup is less than desired GPU memory utilization"],
                   ["healthy", "kv_cache_oom"], "https://github.com/unslothai/unsloth/issues/3331",
                   "A vLLM server (--gpu-memory-utilization 0.6, one H100 80GB) that does not exit: its "
                   "VLLM::EngineCore stays in R state under nvidia_uvm, reparented to PID 1, unkillable, holding the "
                   "GPU (the report's `77637 1 R ... VLLM::EngineCore` ps row: pid, ppid 1, process title). That "
                   "server was started by hand in a login session (cgroup ours); vllm.service then cannot start: the "
                   "`Free memory on device` ValueError follows vLLM 0.10.2's template with frames as in vllm#25837 "
                   "(figures ours: 47.5 GiB held, 0.6 requested). Version estimated from the report's date. "
                   "Restart=always, three failing starts.")


# ============================== decoy: own processes only ======================================


@case3
def kv3_vllm_080_v1_profile_oom_own_engine() -> Case:
    c = Case("kv3_vllm_080_v1_profile_oom_own_engine", "vllm", "0.8.0", day=4, hour=3,
             model="/models/Qwen2.5-1.5B-Instruct")
    v = c.vlog
    inv = c.start()
    c.app(inv, v("INFO", "api_server.py:912", "vLLM API server version 0.8.0"), dt=4.0)
    c.app(inv, v("INFO", "core.py:51", f"Initializing a V1 LLM engine (v0.8.0) with config: model='{c.model}', "
                 f"speculative_config=None, tokenizer='{c.model}', skip_tokenizer_init=False, tokenizer_mode=auto, "
                 "revision=None, trust_remote_code=False, dtype=torch.bfloat16, max_seq_len=32768, "
                 "tensor_parallel_size=1, pipeline_parallel_size=1"), "engine", dt=3.0)
    c.app(inv, v("INFO", "gpu_model_runner.py:1128", f"Starting to load model {c.model}..."), "engine", dt=2.0)
    c.app(inv, "\rLoading safetensors checkpoint shards:  50% Completed | 1/2 [00:01<00:01,  1.02s/it]"
               "\rLoading safetensors checkpoint shards: 100% Completed | 2/2 [00:01<00:00,  1.05it/s]\r",
          "engine", dt=2.0)
    c.app(inv, v("INFO", "gpu_model_runner.py:1140", "Model loading took 2.8876 GB and 2.318423 seconds"), "engine")
    c.app(inv, v("INFO", "backends.py:409", "Using cache directory: /var/cache/vllm/torch_compile_cache/5c2a1f93e0/"
                 "rank_0_0 for vLLM's torch.compile"), "engine", dt=1.5)
    c.app(inv, v("INFO", "monitor.py:33", "torch.compile takes 11.42 s in total"), "engine", dt=11.4)
    core = "/opt/vllm/lib/python3.12/site-packages/vllm/v1"
    c.app(inv, v("ERROR", "core.py:330", "EngineCore hit an exception: Traceback (most recent call last):"), "engine",
          dt=1.0)
    for line in [
        f'  File "{core}/engine/core.py", line 322, in run_engine_core',
        "    engine_core = EngineCoreProc(*args, **kwargs)",
        f'  File "{core}/engine/core.py", line 275, in __init__',
        "    super().__init__(vllm_config, executor_class, log_stats)",
        f'  File "{core}/engine/core.py", line 59, in __init__',
        "    num_gpu_blocks, num_cpu_blocks = self._initialize_kv_caches(",
        f'  File "{core}/engine/core.py", line 98, in _initialize_kv_caches',
        "    available_gpu_memory = self.model_executor.determine_available_memory()",
        f'  File "{core}/worker/gpu_worker.py", line 155, in determine_available_memory',
        "    self.model_runner.profile_run()",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.16 GiB. GPU 0 has a total capacity of 7.75 GiB "
        "of which 1.17 GiB is free. Including non-PyTorch memory, this process has 5.02 GiB memory in use. Of the "
        "allocated memory 4.81 GiB is allocated by PyTorch, and 18.97 MiB is reserved by PyTorch but unallocated. If "
        "reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to "
        "avoid fragmentation.  See documentation for Memory Management  "
        "(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)",
        "",
    ]:
        c.app(inv, v("ERROR", "core.py:330", line), "engine", dt=0.0)
    c.app(inv, v("CRITICAL", "core_client.py:260", "Got fatal signal from worker processes, shutting down. See stack "
                 "trace above for root cause issue."), dt=0.1)
    ownership(c, inv, [("engine", 5140)])
    c.exit(inv, "killed", "9", cpu="31.207s")
    c.extra["systemctl_show"].update({"ActiveState": "failed", "SubState": "failed", "Result": "signal",
                                      "MainPID": "0"})
    return expect3(c, "kv_cache_oom", False, ["torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.16 GiB"],
                   ["healthy", "gpu_memory_held_by_stale_process", "cuda_oom_runtime", "cuda_graph_capture_oom"],
                   "https://github.com/vllm-project/vllm/issues/12529",
                   "V1 uses more GPU memory than V0 at start (the thread's 8 GB GPU, V1 of March 2025 = 0.8.0): the "
                   "OOM line (`this process has 5.02 GiB`), core.py:330 and the CRITICAL core_client.py:260 line are "
                   "the report's; the frames placing it in profile_run (KV sizing, before the server is ready and "
                   "before graph capture) and the start-up lines are ours. Ownership decoy: nvidia-smi lists only "
                   "the unit's own EngineCore, child of MainPID in the unit's cgroup. The fatal-signal handler kills "
                   "the process tree: status=9/KILL. Restart=no.")


# ============================== port_in_use ====================================================


@case3
def port3_vllm_092_nixl_side_channel_zmq_hang() -> Case:
    c = Case("port3_vllm_092_nixl_side_channel_zmq_hang", "vllm", "0.9.2", day=5, hour=3,
             model="/models/Meta-Llama-3.1-8B-Instruct")
    v = c.vlog
    inv = c.start()
    c.app(inv, v("INFO", "api_server.py:1395", "vLLM API server version 0.9.2"), dt=4.0)
    c.app(inv, v("INFO", "cli_args.py:325", f"non-default args: {{'host': '0.0.0.0', 'port': 9999, 'model': "
                 f"'{c.model}', 'trust_remote_code': True, 'dtype': 'bfloat16', 'max_model_len': 2048, "
                 "'enforce_eager': True, 'gpu_memory_utilization': 0.8, 'kv_transfer_config': "
                 "KVTransferConfig(kv_connector='NixlConnector', kv_role='kv_consumer', kv_rank=1, "
                 "kv_parallel_size=2)}"))
    c.app(inv, v("INFO", "core.py:69", f"Initializing a V1 LLM engine (v0.9.2) with config: model='{c.model}', "
                 f"speculative_config=None, tokenizer='{c.model}', skip_tokenizer_init=False, tokenizer_mode=auto, "
                 "revision=None, trust_remote_code=True, dtype=torch.bfloat16, max_seq_len=2048, "
                 "tensor_parallel_size=1, pipeline_parallel_size=1, enforce_eager=True"), "engine", dt=3.0)
    c.app(inv, v("INFO", "factory.py:74", "Creating v1 connector with name: NixlConnector and engine_id: "
                 "5f0c21e4-8a5e-4a31-9d7e-7b3f1b6c2d90"), "engine", dt=0.5)
    c.app(inv, v("INFO", "gpu_model_runner.py:1770", f"Starting to load model {c.model}..."), "engine", dt=1.0)
    c.app(inv, "\rLoading safetensors checkpoint shards:  50% Completed | 2/4 [00:01<00:01,  1.41it/s]"
               "\rLoading safetensors checkpoint shards: 100% Completed | 4/4 [00:02<00:00,  1.52it/s]\r",
          "engine", dt=3.0)
    c.app(inv, v("INFO", "default_loader.py:272", "Loading weights took 2.71 seconds"), "engine")
    c.app(inv, v("INFO", "gpu_model_runner.py:1801", "Model loading took 14.9889 GiB and 3.002176 seconds"), "engine")
    c.app(inv, v("INFO", "gpu_worker.py:232", "Available KV cache memory: 2.80 GiB"), "engine", dt=2.0)
    c.app(inv, v("INFO", "kv_cache_utils.py:716", "GPU KV cache size: 22,944 tokens"), "engine")
    c.app(inv, v("INFO", "kv_cache_utils.py:720", "Maximum concurrency for 2,048 tokens per request: 11.20x"),
          "engine")
    c.app(inv, v("INFO", "nixl_connector.py:526", "Registering KV_Caches: use_mla: False, num_blocks: 1434, "
                 "block_shape: torch.Size([16, 8, 128]), per_layer_kv_cache_shape: torch.Size([2, 1434, 16, 8, 128])"),
          "engine", dt=0.5)
    nx = "/opt/vllm/lib/python3.12/site-packages/vllm/distributed/kv_transfer/kv_connector/v1/nixl_connector.py"
    c.many(inv, [
        "Exception in thread nixl_handshake_listener:",
        "Traceback (most recent call last):",
        '  File "/usr/lib/python3.12/threading.py", line 1075, in _bootstrap_inner',
        "    self.run()",
        '  File "/usr/lib/python3.12/threading.py", line 1012, in run',
        "    self._target(*self._args, **self._kwargs)",
        f'  File "{nx}", line 423, in _nixl_handshake_listener',
        "    with zmq_ctx(zmq.ROUTER, path) as sock:",
        '  File "/usr/lib/python3.12/contextlib.py", line 137, in __enter__',
        "    return next(self.gen)",
        f'  File "{nx}", line 1046, in zmq_ctx',
        "    yield make_zmq_socket(ctx=ctx,",
        '  File "/opt/vllm/lib/python3.12/site-packages/vllm/utils/__init__.py", line 2554, in make_zmq_socket',
        "    socket.bind(path)",
        '  File "/opt/vllm/lib/python3.12/site-packages/zmq/sugar/socket.py", line 311, in bind',
        "    super().bind(addr)",
        '  File "_zmq.py", line 917, in zmq.backend.cython._zmq.Socket.bind',
        '  File "_zmq.py", line 179, in zmq.backend.cython._zmq._check_rc',
        "zmq.error.ZMQError: Address already in use (addr='tcp://localhost:5557')",
    ], "engine", dt=0.0)
    c.extra = {
        "ss_listen": [{"local": "127.0.0.1:5557", "pid": 31822, "process": "python3", "user": "vllm"},
                      {"local": "0.0.0.0:8888", "pid": 31690, "process": "python3", "user": "vllm"}],
        "systemctl_show": {"MainPID": str(inv.main), "ActiveState": "active", "SubState": "running",
                           "NRestarts": "0", "Result": "success"},
    }
    return expect3(c, "port_in_use", False, ["ZMQError: Address already in use (addr='tcp://localhost:5557')"],
                   ["healthy", "engine_exception"], "https://github.com/vllm-project/vllm/issues/20965",
                   "1P1D disaggregation with NixlConnector in one container: prefill (port 8888, kv_producer) and "
                   "decode (port 9999, kv_consumer) both use the default NIXL side-channel port 5557. This unit is "
                   "the decode instance; the report's args, the `Registering KV_Caches` line (its tail completed "
                   "from num_blocks) and the ZMQError line (the title) are verbatim; the listener thread's frames "
                   "follow vLLM 0.9.2's code (line numbers ours). The exception kills only the listener thread: "
                   "register_kv_caches waits on its ready event with no timeout, so the engine never finishes "
                   "starting and systemd sees no exit (no restart, no loop). ss side evidence (the prefill "
                   "instance holds 5557) is ours.")


@case3
def port3_sgl_059_tcpstore_dp8_eaddrinuse_loop() -> Case:
    c = HCase("port3_sgl_059_tcpstore_dp8_eaddrinuse_loop", "sglang", "0.5.9", day=6, hour=3,
              model="/models/Qwen3-Embedding-8B", roles=dp_roles(8, "sglang::scheduler_DP{k}"))
    tv = "/opt/sglang/lib/python3.12/site-packages/torch/distributed"
    for failing, port in ((3, 18103), (5, 18121), (1, 18137)):  # the report's conflicting ports, one per attempt
        inv = c.start(dt=0.2)
        c.app(inv, None, dt=4.0)  # server_args=ServerArgs(...)
        for k in range(8):
            c.app(inv, f"[{STAMP_S}] Launch DP{k} starting at GPU #{k}.", dt=0.1)
        for k in range(8):
            c.app(inv, f"[{STAMP_S} DP{k}] Init torch distributed begin.", f"dp{k}", dt=0.6)
        c.app(inv, f"[{STAMP_S} DP{failing}] Scheduler hit an exception: Traceback (most recent call last):",
              f"dp{failing}", dt=0.4)
        c.many(inv, SGL_SCHED_FRAMES + [
            f'  File "{SGL}/model_executor/model_runner.py", line 392, in __init__',
            "    min_per_gpu_memory = self.init_torch_distributed()",
            f'  File "{SGL}/model_executor/model_runner.py", line 698, in init_torch_distributed',
            "    init_distributed_environment(",
            f'  File "{SGL}/distributed/parallel_state.py", line 1461, in init_distributed_environment',
            "    torch.distributed.init_process_group(",
            f'  File "{tv}/c10d_logger.py", line 81, in wrapper',
            "    return func(*args, **kwargs)",
            f'  File "{tv}/distributed_c10d.py", line 1710, in init_process_group',
            "    store, rank, world_size = next(rendezvous_iterator)",
            f'  File "{tv}/rendezvous.py", line 269, in _tcp_rendezvous_handler',
            "    store = _create_c10d_store(",
            f'  File "{tv}/rendezvous.py", line 189, in _create_c10d_store',
            "    return TCPStore(",
            "           ^^^^^^^^^",
            f"torch.distributed.DistNetworkError: The server socket has failed to listen on any local network address. "
            f"port: {port}, useIpv6: false, code: -98, name: EADDRINUSE, message: address already in use",
        ], f"dp{failing}")
        c.app(inv, f"[{STAMP_S}] Received sigquit from a child process. It usually means the child failed.", dt=0.1)
        c.exit(inv, "killed", "9", restart=True, cpu="38.604s")
    return expect3(c, "port_in_use", True, ["name: EADDRINUSE, message: address already in use"],
                   ["healthy", "nccl_failure"], "https://github.com/sgl-project/sglang/issues/37215",
                   "SGLang 0.5.9 serving Qwen3-Embedding with --dp 8 on one 8xH800 node: some DP schedulers "
                   "intermittently fail to bind their internal TCPStore port (18103, 18121, 18137 from the report, one "
                   "per attempt here), ports inside the host's ephemeral range, not the HTTP port. The DistNetworkError "
                   "text is the report's (one line as torch prints it); the `Launch DPk starting at GPU #k` template is "
                   "SGLang's (as in sglang#15385), the scheduler frames follow 0.5.9 (sglang#19781), torch frames ours. "
                   "Restart=always, three failing starts. The store address is taken: port beats NCCL.")


@case3
def port3_sgl_040_runtime_holds_http_port() -> Case:
    c = Case("port3_sgl_040_runtime_holds_http_port", "sglang", "0.4.0.post1", day=7, hour=3,
             model="/models/llama3-llava-next-8b")
    s = c.slog
    inv = c.start()
    c.app(inv, None, dt=4.0)  # server_args=ServerArgs(...)
    c.app(inv, s("Init torch distributed begin."), "sched", dt=2.0)
    c.app(inv, s("Load weight begin. avail mem=78.54 GB"), "sched", dt=2.2)
    c.app(inv, "\rLoading safetensors checkpoint shards:  50% Completed | 2/4 [00:02<00:02,  1.02s/it]"
               "\rLoading safetensors checkpoint shards: 100% Completed | 4/4 [00:04<00:00,  1.04s/it]\r",
          "sched", dt=4.5)
    c.app(inv, s("Load weight end. type=LlavaLlamaForCausalLM, dtype=torch.float16, avail mem=62.92 GB"), "sched")
    c.app(inv, s("Memory pool end. avail mem=8.31 GB"), "sched", dt=1.0)
    c.app(inv, s("Capture cuda graph begin. This can take up to several minutes."), "sched")
    c.app(inv, "\rCapturing batches (bs=160 avail_mem=4.51 GB):   4%|▍         | 1/23 [00:00<00:10,  2.11it/s]"
               "\rCapturing batches (bs=1 avail_mem=3.93 GB): 100%|██████████| 23/23 [00:09<00:00,  2.47it/s]\r",
          "sched", dt=9.5)
    c.app(inv, s("Capture cuda graph end. Time elapsed: 9.61 s"), "sched")
    c.app(inv, s("max_total_num_tokens=201522, max_prefill_tokens=16384, max_running_requests=2049, "
                 "context_len=8192"), "sched")
    for line in [
        f"INFO:     Started server process [{inv.main}]",
        "INFO:     Waiting for application startup.",
        "INFO:     Application startup complete.",
        "ERROR:    [Errno 98] error while attempting to bind on address ('127.0.0.1', 10000): address already in use",
        "INFO:     Waiting for application shutdown.",
        "INFO:     Application shutdown complete.",
    ]:
        c.app(inv, s(line, None), dt=0.2)
    c.exit(inv, "exited", "1", cpu="1min 4.277s")
    c.extra = {
        "ss_listen": [{"local": "127.0.0.1:10000", "pid": 88214, "process": "python3", "user": "mlee"}],
        "systemctl_show": {"MainPID": "0", "ActiveState": "failed", "SubState": "failed", "Result": "exit-code"},
    }
    return expect3(c, "port_in_use", False, ["error while attempting to bind on address ('127.0.0.1', 10000)"],
                   ["healthy"], "https://github.com/sgl-project/sglang/issues/2430",
                   "Several `sgl.Runtime` instances started a few seconds apart all pick port 10000 (the first free "
                   "port at their start; SGLang binds HTTP only after loading the model and capturing graphs). Here the "
                   "unit serves llava-next on 127.0.0.1:10000 while a user's Runtime script already holds it. The "
                   "report's line is cut after `error while attempting`: the rest is uvicorn's template with the "
                   "Runtime's host/port (127.0.0.1, 10000); the time prefix is the report's shape (Dec 2024, "
                   "0.4.0.post1). What the warm-up thread does next is not shown: we end with exit status 1. ss "
                   "evidence ours. Restart=no.")


# ============================== host_oom_kill ==================================================


@case3
def hoom3_sgl_046_embedding_scheduler_rss_memcg() -> Case:
    c = Case("hoom3_sgl_046_embedding_scheduler_rss_memcg", "sglang", "0.4.6.post5", day=8, hour=3,
             model="/models/gte-Qwen2-7B-instruct")
    s = c.slog

    def embed(inv: Inv, n: int, base: int) -> None:
        for i in range(n):
            c.app(inv, s(f"Prefill batch. #new-seq: 32, #new-token: {3900 + 37 * i}, #cached-token: 0, token usage: "
                         "0.00, #running-req: 0, #queue-req: 0,"), "sched", dt=2.0)
            c.app(inv, s(f'INFO:     10.0.6.{11 + i % 4}:{base + 13 * i} - "POST /v1/embeddings HTTP/1.1" 200 OK',
                         None), dt=0.3)

    inv = c.start()
    sglang_boot(c, inv)
    embed(inv, 8, 40112)
    sched = c._proc(inv, "sched")[0]
    mem = f"/system.slice/{c.unit}"
    c.kernel_line("sglang::schedul invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), order=0, oom_score_adj=0", dt=3.0)
    c.kernel_line(f"oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,mems_allowed=0-1,oom_memcg={mem},"
                  f"task_memcg={mem},task=sglang::schedul,pid={sched},uid=998")
    c.kernel_line(f"Memory cgroup out of memory: Killed process {sched} (sglang::schedul) total-vm:86422016kB, "
                  "anon-rss:62717440kB, file-rss:498176kB, shmem-rss:16384kB, UID:998 pgtables:126808kB "
                  "oom_score_adj:0", prio=3)
    c.oom_killed(inv)
    c.mgr(f"{c.unit}: Failed with result 'oom-kill'.", inv, dt=0.8, prio=4, mid="result", func="unit_log_failure",
          UNIT_RESULT="oom-kill")
    c.consumed(inv, "6h 12min 40.118s")
    c.auto_restart(inv)
    inv2 = c.start(dt=0.1)
    sglang_boot(c, inv2)
    embed(inv2, 3, 52218)
    c.extra = {
        "unit_file": ("[Service]\nExecStart=/opt/sglang/bin/python3 -m sglang.launch_server --model-path "
                      f"{c.model} --is-embedding --host 0.0.0.0 --port 30000\nMemoryMax=64G\nRestart=always\n"),
        "process_info": [{"pid": sched, "ppid": inv.main, "user": "sglang", "cgroup": mem, "cmdline": "sglang::scheduler",
                          "started": c.iso(inv.start_t + 6)}],
    }
    return expect3(c, "host_oom_kill", False, ["Memory cgroup out of memory: Killed process"],
                   ["healthy", "cuda_oom_runtime", "unknown"], "https://github.com/sgl-project/sglang/issues/6914",
                   "The SGLang scheduler's RSS grows with every request on the Embeddings API until the container "
                   "limit kills it (the report's screenshot: ~60 GB, Kubernetes, June 2025 = 0.4.6.postN). Here the "
                   "limit is the unit's MemoryMax=64G: a CONSTRAINT_MEMCG kill of sglang::schedul; the kernel lines "
                   "follow the kernel's template with our pid/memcg/sizes, the embedding traffic (prefill-only "
                   "batches, POST /v1/embeddings) is ours. OOMPolicy=stop ends the unit (`Failed with result "
                   "'oom-kill'`), Restart=always brings it back serving: one restart, no loop.")


@case3
def hoom3_vllm_016_multimodal_apiserver_global_oom() -> Case:
    c = Case("hoom3_vllm_016_multimodal_apiserver_global_oom", "vllm", "0.16.0", day=9, hour=3, tp=8,
             model="/models/Qwen3.5-397B-A17B-FP8")
    inv = c.start()
    vllm_boot(c, inv)
    vllm_serve(c, inv, 6, gen=1204.6)
    main = inv.main
    c.kernel_line("vllm invoked oom-killer: gfp_mask=0x140cca(GFP_HIGHUSER_MOVABLE|__GFP_COMP), order=0, "
                  "oom_score_adj=0", dt=5.0)
    c.kernel_line(f"oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0-1,global_oom,"
                  f"task_memcg=/system.slice/{c.unit},task=vllm,pid={main},uid=998")
    c.kernel_line(f"Out of memory: Killed process {main} (vllm) total-vm:1093412864kB, anon-rss:1001873408kB, "
                  "file-rss:93184kB, shmem-rss:2101248kB, UID:998 pgtables:1987624kB oom_score_adj:0", prio=3)
    c.oom_killed(inv)
    c.mgr(f"{c.unit}: Main process exited, code=killed, status=9/KILL", inv, dt=0.2, prio=4, mid="exited",
          EXIT_CODE="killed", EXIT_STATUS="9", COMMAND="ExecStart")
    c.mgr(f"{c.unit}: Failed with result 'oom-kill'.", inv, prio=4, mid="result", func="unit_log_failure",
          UNIT_RESULT="oom-kill")
    c.consumed(inv, "3h 51min 7.904s")
    c.auto_restart(inv)
    inv2 = c.start(dt=0.1)
    vllm_boot(c, inv2, "load")
    c.extra["unit_file"] = (f"[Service]\nExecStart=/opt/vllm/bin/vllm serve {c.model} --tensor-parallel-size 8\n"
                            "Restart=always\n")
    return expect3(c, "host_oom_kill", False, ["Out of memory: Killed process"],
                   ["healthy", "cuda_oom_runtime", "unknown"], "https://github.com/vllm-project/vllm/issues/35191",
                   "Qwen3.5-397B FP8 on 8xH200 (vLLM 0.16.0rc2): under high-concurrency multimodal requests the host's "
                   "1 TB of RAM fills and the kernel OOM-kills vLLM (the report's title and environment). Which "
                   "process grew is not quoted: here the API server (multimodal preprocessing), a global OOM kill; the "
                   "kernel lines follow the kernel's template with our pid/sizes, the serving and start-up lines are "
                   "vLLM's templates. The main process dies by SIGKILL, systemd logs the OOM kill and restarts the unit "
                   "(Restart=always), which is loading again at the end: one restart, no loop.")


@case3
def hoom3_vllm_023_jit_build_enginecore_init_loop() -> Case:
    c = Case("hoom3_vllm_023_jit_build_enginecore_init_loop", "vllm", "0.23.0", day=10, hour=3,
             model="/models/Qwen3-30B-A3B-NVFP4")
    for _k in range(3):
        inv = c.start(dt=0.2)
        vllm_boot(c, inv, "load")
        c.app(inv, "\rLoading safetensors checkpoint shards:  50% Completed | 2/4 [00:03<00:03,  1.62s/it]"
                   "\rLoading safetensors checkpoint shards: 100% Completed | 4/4 [00:06<00:00,  1.58s/it]\r",
              "engine", dt=6.5)
        c.app(inv, c.vlog("INFO", "default_loader.py:267", "Loading weights took 6.38 seconds"), "engine")
        c.app(inv, c.vlog("INFO", "gpu_model_runner.py:2653", "Model loading took 17.2214 GiB and 6.611907 seconds"),
              "engine")
        eng = c._proc(inv, "engine")[0]
        c.kernel_line("ninja invoked oom-killer: gfp_mask=0x140cca(GFP_HIGHUSER_MOVABLE|__GFP_COMP), order=0, "
                      "oom_score_adj=0", dt=45.0)
        c.kernel_line(f"oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0,global_oom,"
                      f"task_memcg=/system.slice/{c.unit},task=VLLM::EngineCor,pid={eng},uid=998")
        c.kernel_line(f"Out of memory: Killed process {eng} (VLLM::EngineCor) total-vm:148032512kB, "
                      "anon-rss:97650688kB, file-rss:61440kB, shmem-rss:8192kB, UID:998 pgtables:201344kB "
                      "oom_score_adj:0", prio=3)
        c.oom_killed(inv)
        c.many(inv, [
            "Traceback (most recent call last):",
            '  File "/opt/vllm/lib/python3.12/site-packages/vllm/v1/engine/utils.py", line 1209, in '
            "wait_for_engine_startup",
            "    raise RuntimeError(",
            "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}",
        ], dt=0.3)
        c.mgr(f"{c.unit}: Failed with result 'oom-kill'.", inv, dt=0.5, prio=4, mid="result", func="unit_log_failure",
              UNIT_RESULT="oom-kill")
        c.consumed(inv, "9min 12.530s")
        c.auto_restart(inv)
    return expect3(c, "host_oom_kill", True, ["Out of memory: Killed process"],
                   ["healthy", "unknown", "engine_exception", "kv_cache_oom"],
                   "https://github.com/vllm-project/vllm/issues/45626",
                   "vLLM 0.23.0 (V1) with an NvFP4 MoE model on a GB10: FlashInfer JIT-compiles CUTLASS FP4 kernels on "
                   "the first forward, ninja runs the nvcc jobs unbounded and the kernel OOM-kills the EngineCore "
                   "(SIGKILL) mid-init; the API server only says `Engine core initialization failed ... Failed core "
                   "proc(s): {}` (the report's complaint, quoted). Kernel lines follow the kernel's template with our "
                   "pid/sizes; start-up lines are vLLM's templates. Restart=always, the same kill on each of three "
                   "starts. The empty `Failed core proc(s): {}` wrapper is only the consequence.")
