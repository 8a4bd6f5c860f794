"""The second holdout (`holdout2`) of the incident corpus: cases nobody tuning the diagnoser has seen.

Built on 2026-12-01 by a helper session that had not read the diagnoser (services/diagnosis, services/journal)
and did not run it until every case here was labelled and committed. Each case is rebuilt from a public report
that no tune/holdout case uses; the error lines are quoted from it, systemd's/journald's lines and the engines'
start-up/serving templates come from incident_kit/incident_scenes (FORMATS.md). Labels follow docs/DIAGNOSIS.md
"Labels" only. **Do not read these journals while changing the diagnoser and do not change a label or line here to
fit a diagnoser**: the cases are scored, never tuned on (benchmarks/bench_diagnosis.py lists no misses for them).

incident_build.py imports CASES2 from here and writes them with the others.
"""

from __future__ import annotations

from incident_kit import STAMP_G, STAMP_V, Case, Inv
from incident_registry import registry
from incident_scenes import (
    NOT_HEALTHY,
    ownership,
    sglang_boot,
    sglang_decode,
    sglang_sched_exception,
    sglang_sigquit,
    vllm_boot,
    vllm_clean_shutdown,
    vllm_engine_dead,
    vllm_serve,
    vllm_start_fail,
)

SPLIT = "holdout2"
CASES2, case2, expect2 = registry(SPLIT)


CUDA_ERR_TAIL = [
    "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be "
    "incorrect.",
    "For debugging consider passing CUDA_LAUNCH_BLOCKING=1",
    "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.",
]
V1_API_TAIL_08 = [
    '  File "/opt/vllm/lib/python3.12/site-packages/vllm/v1/engine/core_client.py", line 421, in _wait_for_engine_startup',
    '    raise RuntimeError("Engine core initialization failed. "',
    "RuntimeError: Engine core initialization failed. See root cause above.",
]


def vworker(c: Case, inv: Inv, where: str, lines: list[str], role: str = "worker") -> None:
    for line in lines:
        c.app(inv, c.vlog("ERROR", where, line), role, dt=0.0)


def v08_engine_failed(c: Case, inv: Inv, lines: list[str], where: str = "core.py:396") -> None:
    """vLLM 0.8.5 V1: `EngineCore failed to start.` with its traceback, then the API server's wrapper."""
    c.app(inv, c.vlog("ERROR", where, "EngineCore failed to start."), "engine", dt=0.3)
    c.app(inv, c.vlog("ERROR", where, "Traceback (most recent call last):"), "engine")
    for line in lines:
        c.app(inv, c.vlog("ERROR", where, line), "engine", dt=0.0)
    c.app(inv, "Traceback (most recent call last):", dt=0.3)
    c.many(inv, V1_API_TAIL_08)


# ============================== kv_cache_oom ===================================================


@case2
def kv2_vllm_085_sampler_warmup_oom_loop() -> Case:
    c = Case("kv2_vllm_085_sampler_warmup_oom_loop", "vllm", "0.8.5", day=1, hour=21, tp=2,
             model="/models/Llama-3.3-70B-Instruct-AWQ")
    base = "/opt/home/s4075740/miniconda3/envs/torch/lib/python3.10/site-packages/vllm/v1/worker/gpu_model_runner.py"
    for _k in range(3):
        inv = c.start(dt=0.2)
        vllm_boot(c, inv, "weights")
        vworker(c, inv, "multiproc_executor.py:470", [
            f'  File "{base}", line 1548, in _dummy_sampler_run',
            "    raise RuntimeError(",
            "RuntimeError: CUDA out of memory occurred when warming up sampler with 256 dummy requests. Please try "
            "lowering `max_num_seqs` or `gpu_memory_utilization` when initializing the engine.",
        ], "worker1")
        vworker(c, inv, "multiproc_executor.py:470", [
            "WorkerProc hit an exception.",
            "Traceback (most recent call last):",
            f'  File "{base}", line 1544, in _dummy_sampler_run',
            "    sampler_output = self.sampler(logits=logits,",
        ])
        v08_engine_failed(c, inv, ["Exception: Call to determine_available_memory method failed: CUDA out of memory "
                                   "occurred when warming up sampler with 256 dummy requests."])
        c.exit(inv, "exited", "1", restart=True)
    return expect2(c, "kv_cache_oom", True,
                   ["CUDA out of memory occurred when warming up sampler with 256 dummy requests"],
                   ["healthy", "cuda_oom_runtime", "cuda_graph_capture_oom"],
                   "https://github.com/vllm-project/vllm/issues/17939",
                   "Worker lines verbatim (multiproc_executor.py:470, VllmWorker rank=1/0); the sampler warm-up is part "
                   "of the memory profiling before the server is ready (KV budget). The EngineCore `Call to ... failed` "
                   "line is ours. Restart=always, three failing starts.")


@case2
def kv2_vllm_011_no_cache_blocks_wrapper() -> Case:
    c = Case("kv2_vllm_011_no_cache_blocks_wrapper", "vllm", "0.11.0", day=2, hour=21, model="openai/gpt-oss-120b")
    kvu = "/opt/conda/envs/vllm_env/lib/python3.13/site-packages/vllm/v1/core/kv_cache_utils.py"
    inv = c.start()
    vllm_start_fail(c, inv, "weights", [
        f'  File "{kvu}", line 1243, in get_kv_cache_configs',
        "    check_enough_kv_cache_memory(vllm_config, kv_cache_spec_one_worker,",
        "                                 available_memory_one_worker)",
        f'  File "{kvu}", line 699, in check_enough_kv_cache_memory',
        '    raise ValueError("No available memory for the cache blocks. "',
        '                     "Try increasing `gpu_memory_utilization` when "',
        '                     "initializing the engine.")',
        "ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when "
        "initializing the engine.",
    ], where="core.py:708", api_tail=[
        '  File "/opt/conda/envs/vllm_env/lib/python3.13/site-packages/vllm/v1/engine/utils.py", line 785, in '
        "wait_for_engine_startup",
        '    raise RuntimeError("Engine core initialization failed. "',
        '                       "See root cause above. "',
        '                       f"Failed core proc(s): {finished}")',
        "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}",
    ])
    c.exit(inv, "exited", "1")
    return expect2(c, "kv_cache_oom", False, ["No available memory for the cache blocks"],
                   ["healthy", "engine_exception", "unknown"], "https://github.com/vllm-project/vllm/issues/27508",
                   "gpt-oss-120b on one H100 (0.11.0); EngineCore_DP0 frames and the APIServer wrapper `Failed core "
                   "proc(s): {}` verbatim; the ValueError line is cut in the report after the raise and completed with "
                   "vLLM's message. The wrapper comes last and must not hide the cause.")


@case2
def kv2_vllm_085_v1_no_cache_blocks_own_engine() -> Case:
    c = Case("kv2_vllm_085_v1_no_cache_blocks_own_engine", "vllm", "0.8.5", day=3, hour=21,
             model="/root/yjpzmodel/basemodel/Qwen3-8B")
    core = "/home/python_vllm_env_085/lib/python3.11/site-packages/vllm/v1/engine/core.py"
    inv = c.start()
    vllm_boot(c, inv, "weights")
    ownership(c, inv, [("engine", 33120)])
    c.app(inv, c.vlog("INFO", "monitor.py:33", "torch.compile takes 13.93 s in total"), "engine", dt=14.0)
    v08_engine_failed(c, inv, [
        f'  File "{core}", line 387, in run_engine_core',
        "    engine_core = EngineCoreProc(*args, **kwargs)",
        f'  File "{core}", line 329, in __init__',
        "    super().__init__(vllm_config, executor_class, log_stats,",
        "ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when "
        "initializing the engine.",
    ])
    c.exit(inv, "exited", "1")
    c.extra["systemctl_show"].update({"ActiveState": "failed", "SubState": "failed", "Result": "exit-code",
                                      "MainPID": "0"})
    return expect2(c, "kv_cache_oom", False, ["No available memory for the cache blocks"],
                   ["healthy", "gpu_memory_held_by_stale_process"], "https://github.com/vllm-project/vllm/issues/17431",
                   "A800, V1 at --gpu-memory-utilization 0.4 (V0 worked). Lines verbatim (core.py:396, frames 387/329); "
                   "error line from the title. Ownership decoy (ours): nvidia-smi lists the unit's own EngineCore, child "
                   "of MainPID in the unit's cgroup.")


# ============================== cuda_graph_capture_oom =========================================


@case2
def cap2_vllm_085_capture_end_cuda_oom() -> Case:
    c = Case("cap2_vllm_085_capture_end_cuda_oom", "vllm", "0.8.5", day=4, hour=21, tp=2,
             model="/models/Qwen3-235B-A22B")
    inv = c.start()
    vllm_boot(c, inv, "capture")
    vworker(c, inv, "multiproc_executor.py:470", [
        "WorkerProc hit an exception.",
        "Traceback (most recent call last):",
        '  File "/usr/local/lib/python3.12/dist-packages/torch/cuda/graphs.py", line 186, in __exit__',
        "    self.cuda_graph.capture_end()",
        '  File "/usr/local/lib/python3.12/dist-packages/torch/cuda/graphs.py", line 84, in capture_end',
        "    super().capture_end()",
        "RuntimeError: CUDA error: out of memory",
    ] + CUDA_ERR_TAIL)
    v08_engine_failed(c, inv, ["Exception: Call to compile_or_warm_up_model method failed: CUDA error: out of memory"])
    c.exit(inv, "exited", "1")
    return expect2(c, "cuda_graph_capture_oom", False, ["RuntimeError: CUDA error: out of memory"],
                   ["healthy", "kv_cache_oom", "engine_exception"], "https://github.com/vllm-project/vllm/issues/18446",
                   "Qwen3-235B on V1 (V0 works): CUDA's own `out of memory` inside torch.cuda.graphs capture_end, after "
                   "`Capturing CUDA graph shapes` and before `Graph capturing finished`. Worker lines verbatim (TP=2 "
                   "here); the EngineCore `Call to ... failed` line is ours.")


# ============================== cuda_oom_runtime ===============================================


@case2
def rt2_vllm_011_oom_serving_own_pid_listed() -> Case:
    c = Case("rt2_vllm_011_oom_serving_own_pid_listed", "vllm", "0.11.0", day=5, hour=21, model="/models/Qwen3-32B")
    c.pid_base = 854401 - 131 - 1117  # EngineCore is pid 854401, the pid torch names in the OOM text
    inv = c.start()
    vllm_boot(c, inv)
    vllm_serve(c, inv, 4)
    ownership(c, inv, [("engine", 80312)])
    vllm_engine_dead(c, inv, [
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 960.00 MiB. GPU 0 has a total capacity of 79.14 "
        "GiB of which 712.75 MiB is free. Process 854401 has 78.43 GiB memory in use. Of the allocated memory 74.06 GiB "
        "is allocated by PyTorch, with 159.88 MiB allocated in private pools (e.g., CUDA Graphs), and 2.22 GiB is "
        "reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting "
        "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for Memory "
        "Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)",
        "",
        "The above exception was the direct cause of the following exception:",
        "",
        "Traceback (most recent call last):",
        '  File "/usr/local/lib/python3.12/dist-packages/vllm/v1/engine/core.py", line 701, in run_engine_core',
        "    engine_core.run_busy_loop()",
    ], where="core.py:710", restart=True)
    inv2 = c.start(dt=0.1)
    vllm_boot(c, inv2)
    vllm_serve(c, inv2, 2)
    return expect2(c, "cuda_oom_runtime", False, ["Process 854401 has 78.43 GiB memory in use"],
                   ["healthy", "gpu_memory_held_by_stale_process", "kv_cache_oom"],
                   "https://github.com/vllm-project/vllm/issues/27466",
                   "OOM while serving (0.11.0, core.py:710, lines verbatim); the pid torch names is the unit's own "
                   "EngineCore (here its host pid; nvidia-smi side evidence ours). Exit 0, Restart=always, serves again.")


@case2
def rt2_sgl_044_overlap_thread_cuda_oom() -> Case:
    c = Case("rt2_sgl_044_overlap_thread_cuda_oom", "sglang", "0.4.4.post1", day=3, hour=22,
             model="/models/Qwen2.5-1.5B-Instruct")
    sp = "/mnt/dolphinfs/hdd_pool/docker/user/hadoop-aipnlp/INS/ruanjunhao04/env/rjh/lib/python3.12/site-packages"
    inv = c.start()
    sglang_boot(c, inv)
    sglang_decode(c, inv, 5, tput=5210.0, running=211)
    c.app(inv, c.slog("TpModelWorkerClient hit an exception: Traceback (most recent call last):"), "sched", dt=0.7)
    c.many(inv, [
        f'  File "{sp}/sglang/srt/managers/tp_worker_overlap_thread.py", line 111, in forward_thread_func',
        "    with torch.get_device_module(self.device).stream(self.forward_stream):",
        f'  File "{sp}/torch/cuda/__init__.py", line 595, in __exit__',
        "    torch.cuda.set_stream(self.src_prev_stream)  # type: ignore[arg-type]",
        f'  File "{sp}/vllm/utils.py", line 928, in _patched_set_stream',
        "    prev_set_stream(stream)",
        f'  File "{sp}/torch/cuda/__init__.py", line 636, in set_stream',
        "    _set_stream_by_id(",
        f'  File "{sp}/torch/cuda/__init__.py", line 618, in _set_stream_by_id',
        "    torch._C._cuda_setStream(",
        "RuntimeError: CUDA error: out of memory",
    ] + CUDA_ERR_TAIL, "sched")
    sglang_sigquit(c, inv, serving=True)
    c.exit(inv, "killed", "9")
    return expect2(c, "cuda_oom_runtime", False, ["RuntimeError: CUDA error: out of memory"],
                   ["healthy", "kv_cache_oom"], "https://github.com/sgl-project/sglang/issues/4547",
                   "Qwen2.5-1.5B on an 80 GB A100 runs out of memory during inference (March 2025, 0.4.4.postN); the "
                   "overlap thread's frames and CUDA's `out of memory` verbatim, the `TpModelWorkerClient hit an "
                   "exception` head is SGLang's template. Restart=no.")


# ============================== gpu_memory_held_by_stale_process ===============================


@case2
def stale2_vllm_020_other_container_loop() -> Case:
    c = Case("stale2_vllm_020_other_container_loop", "vllm", "0.20.1", day=6, hour=21, model="/models/gemma-4-26B-it")
    for _k in range(3):
        inv = c.start(dt=0.2)
        c.app(inv, c.vlog("INFO", "api_server.py:1972", f"vLLM API server version {c.version}"), dt=4.0)
        c.app(inv, c.vlog("INFO", "utils.py:278", f"non-default args: {{'model_tag': '{c.model}', 'model': "
                          f"'{c.model}', 'gpu_memory_utilization': 0.95}}"))
        w = c._proc(inv, "worker")[0]
        for line in [
            '  File "/usr/local/lib/python3.12/dist-packages/vllm/v1/worker/gpu_worker.py", line 300, in init_device',
            "    self.requested_memory = request_memory(init_snapshot, self.cache_config)",
            '  File "/usr/local/lib/python3.12/dist-packages/vllm/v1/worker/utils.py", line 413, in request_memory',
            "    raise ValueError(",
            "ValueError: Free memory on device cuda:0 (22.35/23.56 GiB) on startup is less than desired GPU memory "
            "utilization (0.95, 22.38 GiB). Decrease GPU memory utilization or reduce GPU memory used by other "
            "processes.",
        ]:
            c.app(inv, f"(Worker pid={w}) ERROR {STAMP_V} [multiproc_executor.py:870] {line}", "worker", dt=0.0,
                  tag=False)
        c.app(inv, f"[rank0]:[W{STAMP_G}.144600040 ProcessGroupNCCL.cpp:1575] Warning: WARNING: destroy_process_group() "
                   "was not called before program exit, which can leak resources. For more info, please see "
                   "https://pytorch.org/docs/stable/distributed.html#shutdown (function operator())", "worker", dt=0.5,
              tag=False)
        c.app(inv, c.vlog("ERROR", "core.py:1093", "EngineCore failed to start."), "engine", dt=0.2)
        c.many(inv, ["RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): "
                     "{'EngineCore': 1}"])
        c.exit(inv, "exited", "1", restart=True, cpu="21.302s")
    c.extra = {
        "nvidia_smi_apps": [{"pid": 61873, "process_name": "python3", "used_memory": 21890}],
        "process_info": [{"pid": 61873, "ppid": 61850, "user": "root",
                          "cgroup": "/system.slice/docker-3f9c0d2e7b41a6c58e2d9f0a1b7c4e6d5a3f2b1c0e9d8a7b6c5d4e3f2a1b0c9d"
                                    ".scope",
                          "cmdline": "python3 -m ai_studio.server --port 7860", "started": c.iso(c.t - 3600)}],
        "systemctl_show": {"MainPID": "0", "ActiveState": "activating", "SubState": "auto-restart",
                           "NRestarts": str(c.restarts), "Result": "exit-code"},
    }
    return expect2(c, "gpu_memory_held_by_stale_process", True, ["reduce GPU memory used by other processes"],
                   ["healthy", "kv_cache_oom"], "https://github.com/noonghunna/club-3090/issues/535",
                   "Switching to another container (ai-studio) and back: the other container still holds the GPU. "
                   "Worker/NCCL lines verbatim (`(Worker pid=N)` and `(EngineCore pid=N)` tags of vLLM >= 0.20; version "
                   "estimated); the holder's pid/cgroup are ours. Restart=always, three failing starts.")


@case2
def stale2_vllm_023_unbound_launcher_instance() -> Case:
    c = Case("stale2_vllm_023_unbound_launcher_instance", "vllm", "0.23.0", day=4, hour=22,
             model="/models/Qwen3-32B-FP8")
    inv = c.start()
    c.app(inv, c.vlog("INFO", "api_server.py:1972", f"vLLM API server version {c.version}"), dt=4.0)
    c.app(inv, c.vlog("INFO", "core.py:98", f"Initializing a V1 LLM engine (v{c.version}) with config: model="
                      f"'{c.model}', tensor_parallel_size=1"), "engine", dt=3.0)
    c.app(inv, "ValueError: Free memory on device cuda:0 (22.65/79.18 GiB) on startup is less than desired GPU memory "
               "utilization (0.825, 65.32 GiB). Decrease GPU memory utilization or reduce GPU memory used by other "
               "processes.", "engine", dt=2.0)
    c.app(inv, "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): "
               "{'EngineCore': 1}", dt=0.4)
    c.exit(inv, "exited", "1", cpu="18.551s")
    c.extra = {
        "nvidia_smi_apps": [{"pid": 402117, "process_name": "VLLM::EngineCore", "used_memory": 56812}],
        "process_info": [{"pid": 402117, "ppid": 402001, "user": "llmd",
                          "cgroup": "/system.slice/launcher-02-16-48-00-ngqjl.service",
                          "cmdline": "VLLM::EngineCore", "started": c.iso(inv.start_t - 1800)}],
        "systemctl_show": {"MainPID": "0", "ActiveState": "failed", "SubState": "failed", "Result": "exit-code"},
    }
    return expect2(c, "gpu_memory_held_by_stale_process", False, ["on startup is less than desired GPU memory "
                                                                  "utilization (0.825, 65.32 GiB)"],
                   ["healthy", "kv_cache_oom"], "https://github.com/llm-d-incubation/llm-d-fast-model-actuation/issues/720",
                   "Flaky start: an instance of an earlier (unbound) launcher still holds the GPU. Error line verbatim "
                   "(`(EngineCore pid=N)` tag, version estimated); the holder is a VLLM::EngineCore with the same "
                   "name but another unit's cgroup (side evidence ours, launcher name from the report).")


# ============================== port_in_use ====================================================


@case2
def port2_sgl_050_zmq_disagg() -> Case:
    c = Case("port2_sgl_050_zmq_disagg", "sglang", "0.5.0", day=7, hour=21, model="/models/DeepSeek-V3-0324")
    inv = c.start()
    sglang_boot(c, inv, "load")
    for line in [
        "transfer_engine.cpp:422] Metrics reporting is disabled (set MC_TE_METRIC=1 to enable)",
        "transfer_engine.cpp:44] Transfer Engine starting. Server: 192.168.0.136, Metadata: P2PHANDSHAKE, "
        "ip_or_host_name: , rpc_port: 0",
        "transfer_engine.cpp:63] Transfer Engine parseHostNameWithPort. server_name: 192.168.0.136 port: 12001",
        "transfer_engine.cpp:114] Transfer Engine RPC using P2P handshake, listening on 192.168.0.136:15838",
        "transfer_engine.cpp:138] Auto-discovering topology...",
        "transfer_engine.cpp:153] Topology discovery complete. Found 4 HCAs.",
    ]:
        c.app(inv, f"I{STAMP_G}.446154 {c._proc(inv, 'sched')[0]} {line}", "sched", dt=0.0)
    sglang_sched_exception(c, inv, ["zmq.error.ZMQError: Address already in use"])
    sglang_sigquit(c, inv, serving=False)
    c.exit(inv, "killed", "9", cpu="48.112s")
    return expect2(c, "port_in_use", False, ["zmq.error.ZMQError: Address already in use"],
                   ["healthy", "engine_exception"], "https://github.com/sgl-project/sglang/issues/9396",
                   "PD disaggregation with Mooncake (August 2025, 0.5.0rc); the transfer-engine glog lines and the "
                   "ZMQError are the report's, the scheduler's traceback frames are cut in our copy.")


@case2
def port2_vllm_054_zmq_rpc_loop() -> Case:
    c = Case("port2_vllm_054_zmq_rpc_loop", "vllm", "0.5.4", v1=False, day=8, hour=21,
             model="/models/Meta-Llama-3.1-8B-Instruct")
    for _k in range(3):
        inv = c.start(dt=0.2)
        c.app(inv, c.vlog("INFO", "api_server.py:339", "vLLM API server version 0.5.4"), dt=2.0)
        c.app(inv, c.vlog("INFO", "api_server.py:166", "Multiprocessing frontend to use ipc:///tmp/652c9ad3-a61d-4e6d"
                          "-ad7f-b9aa98c42c0d for RPC Path."), dt=0.3)
        c.many(inv, [
            "Traceback (most recent call last):",
            "zmq.error.ZMQError: Address already in use (addr='tcp://127.0.0.1:5570')",
        ], dt=0.4)
        c.exit(inv, "exited", "1", restart=True, cpu="6.013s")
    return expect2(c, "port_in_use", True, ["ZMQError: Address already in use (addr='tcp://127.0.0.1:5570')"],
                   ["healthy", "engine_exception"], "https://github.com/vllm-project/vllm/issues/7196",
                   "The RPC frontend's ZMQ port is taken (title line verbatim); the RPC-path line is vLLM's template of "
                   "the time. Restart=always, three failing starts.")


# ============================== bad_argument ===================================================


@case2
def arg2_vllm_085_enable_reasoning_start_limit() -> Case:
    c = Case("arg2_vllm_085_enable_reasoning_start_limit", "vllm", "0.8.5", day=9, hour=21,
             model="/xxx/hf_models/Qwen3-32B")
    for k in range(5):
        inv = c.start(dt=0.1)
        c.app(inv, f"INFO {STAMP_V} [__init__.py:239] Automatically detected platform cuda.", dt=2.0)
        c.app(inv, "usage: vllm [-h] {serve,complete,chat} ...")
        c.app(inv, "vllm: error: unrecognized arguments: --enable-reasoning --reasoning-parser deepseek_r1")
        c.exit(inv, "exited", "2", restart=k < 4, cpu="3.114s")
    c.start_limit(inv)
    return expect2(c, "bad_argument", True, ["vllm: error: unrecognized arguments: --enable-reasoning"],
                   ["healthy", "model_load_failure"], "https://github.com/vllm-project/vllm/issues/18538",
                   "usage and error lines verbatim; five fast exits with status 2, then systemd's start limit.")


@case2
def arg2_sgl_055_reasoning_parser_underscore() -> Case:
    c = Case("arg2_sgl_055_reasoning_parser_underscore", "sglang", "0.5.5", day=10, hour=21, tp=8,
             model="/moonshotai/Kimi-K2-Thinking")
    inv = c.start()
    c.app(inv, "usage: launch_server.py [-h] --model-path MODEL_PATH [--tokenizer-path TOKENIZER_PATH] "
               "[--tokenizer-mode {auto,slow}] [--tokenizer-worker-num TOKENIZER_WORKER_NUM] [--skip-tokenizer-init]",
          dt=3.0)
    c.app(inv, "launch_server.py: error: unrecognized arguments: --reasoning_parser kimi_k2")
    c.exit(inv, "exited", "2", cpu="4.870s")
    return expect2(c, "bad_argument", False, ["unrecognized arguments: --reasoning_parser kimi_k2"], ["healthy"],
                   "https://github.com/sgl-project/sglang/issues/12818",
                   "Error line verbatim (v0.5.5); the usage line is argparse's, shortened (ours). Restart=no.")


# ============================== model_load_failure =============================================


@case2
def load2_sgl_01x_gated_loop() -> Case:
    c = Case("load2_sgl_01x_gated_loop", "sglang", "0.1.14", day=11, hour=21, model="meta-llama/Llama-2-7b-chat-hf")
    for _k in range(3):
        inv = c.start(dt=0.2)
        c.many(inv, [
            "Cannot access gated repo for url https://huggingface.co/meta-llama/Llama-2-7b-chat-hf/resolve/main/"
            "config.json.",
            "Access to model meta-llama/Llama-2-7b-chat-hf is restricted. You must be authenticated to access it.",
        ], dt=2.5)
        c.exit(inv, "exited", "1", restart=True, cpu="3.921s")
    return expect2(c, "model_load_failure", True, ["Cannot access gated repo for url"], ["healthy", "unknown"],
                   "https://github.com/sgl-project/sglang/issues/387",
                   "The README's example model is gated (April 2024, sglang 0.1.x): the hub's two lines verbatim. "
                   "Restart=always.")


@case2
def load2_sgl_056_gated_processor() -> Case:
    c = Case("load2_sgl_056_gated_processor", "sglang", "0.5.6", day=12, hour=21,
             model="meta-llama/Llama-3.2-1B-Instruct")
    inv = c.start()
    c.app(inv, None, dt=3.0)
    c.many(inv, [
        "Traceback (most recent call last):",
        '  File "/usr/local/lib/python3.12/dist-packages/transformers/configuration_utils.py", line 721, in '
        "_get_config_dict",
        "    resolved_config_file = cached_file(",
        '  File "/usr/local/lib/python3.12/dist-packages/transformers/utils/hub.py", line 322, in cached_file',
        "    file = cached_files(path_or_repo_id=path_or_repo_id, filenames=[filename], **kwargs)",
        '  File "/usr/local/lib/python3.12/dist-packages/transformers/utils/hub.py", line 543, in cached_files',
        "    raise OSError(",
        "OSError: You are trying to access a gated repo.",
        "Make sure to have access to it at https://huggingface.co/meta-llama/Llama-3.2-1B-Instruct.",
        "401 Client Error. (Request ID: Root=1-695139c1-20c276683bbfa05022511a7b;379c2def-ca77-4fc6-9489-6fc1f7a44e40)",
        "",
        "Cannot access gated repo for url https://huggingface.co/meta-llama/Llama-3.2-1B-Instruct/resolve/main/"
        "config.json.",
        "Access to model meta-llama/Llama-3.2-1B-Instruct is restricted. You must have access to it and be "
        "authenticated to access it. Please log in.",
    ], dt=0.05)
    c.exit(inv, "exited", "1", cpu="7.402s")
    return expect2(c, "model_load_failure", False, ["OSError: You are trying to access a gated repo."],
                   ["healthy", "unknown"], "https://github.com/sgl-project/sglang/pull/14644",
                   "transformers' gated-repo error as printed in SGLang's CI (December 2025) when the token lacks "
                   "access; lines verbatim. Restart=on-failure not set: one failure.")


@case2
def load2_vllm_063_arch_not_supported_loop() -> Case:
    c = Case("load2_vllm_063_arch_not_supported_loop", "vllm", "0.6.3", v1=False, day=13, hour=21, tp=4,
             model="/llm_models/meta-llama/Llama-3.1-70B-Instruct")
    for _k in range(3):
        inv = c.start(dt=0.2)
        c.app(inv, c.vlog("INFO", "api_server.py:528", "vLLM API server version 0.6.3"), dt=3.0)
        c.many(inv, [
            "Traceback (most recent call last):",
            "ValueError: Model architectures ['LlamaForCausalLM'] are not supported for now. Supported architectures: "
            "['AquilaModel', 'AquilaForCausalLM', 'ArcticForCausalLM', 'BaiChuanForCausalLM', 'BaichuanForCausalLM', "
            "'BloomForCausalLM', 'CohereForCausalLM', 'DbrxForCausalLM', 'DeciLMForCausalLM', 'DeepseekForCausalLM', "
            "'DeepseekV2ForCausalLM', 'ExaoneForCausalLM', 'FalconForCausalLM', 'GemmaForCausalLM', "
            "'Gemma2ForCausalLM', 'GPT2LMHeadModel', 'GPTBigCodeForCausalLM', 'GPTJForCausalLM', 'GPTNeoXForCausalLM', "
            "'GraniteForCausalLM', 'GraniteMoeForCausalLM', 'InternLMForCausalLM', 'InternLM2ForCausalLM', "
            "'JAISLMHeadModel', 'JambaForCausalLM', 'LlamaForCausalLM', 'LLaMAForCausalLM', 'MambaForCausalLM']",
        ], dt=2.0)
        c.exit(inv, "exited", "1", restart=True, cpu="9.450s")
    return expect2(c, "model_load_failure", True, ["are not supported for now. Supported architectures"],
                   ["healthy", "bad_argument"], "https://github.com/vllm-project/vllm/issues/9515",
                   "After `pip install -U vllm` (0.6.3) the model registry check fails and reports the architecture as "
                   "unsupported; the supported list is cut after 'MambaForCausalLM' in our copy. Restart=always.")


# ============================== nccl_failure ===================================================


def sglang_init_nccl_fail(c: Case, inv: Inv, lines: list[str]) -> None:
    c.app(inv, None, dt=4.0)  # server_args=ServerArgs(...)
    c.app(inv, c.slog("Init torch distributed begin."), "sched", dt=2.0)
    sglang_sched_exception(c, inv, lines)
    sglang_sigquit(c, inv, serving=False)


@case2
def nccl2_sgl_043_init_unhandled_loop() -> Case:
    c = Case("nccl2_sgl_043_init_unhandled_loop", "sglang", "0.4.3.post4", day=14, hour=21, tp=2,
             model="/models/Qwen2.5-32B-Instruct")
    d = "/home/clouduser/miniconda3/envs/sglang/lib/python3.10/site-packages/sglang/srt/distributed"
    lines = [
        f'  File "{d}/parallel_state.py", line 1100, in initialize_model_parallel',
        "    _TP = init_model_parallel_group(",
        f'  File "{d}/parallel_state.py", line 927, in init_model_parallel_group',
        "    return GroupCoordinator(",
        f'  File "{d}/parallel_state.py", line 255, in __init__',
        "    self.pynccl_comm = PyNcclCommunicator(",
        f'  File "{d}/device_communicators/pynccl.py", line 108, in __init__',
        "    self.comm: ncclComm_t = self.nccl.ncclCommInitRank(",
        f'  File "{d}/device_communicators/pynccl_wrapper.py", line 350, in ncclCommInitRank',
        "    self.NCCL_CHECK(",
        f'  File "{d}/device_communicators/pynccl_wrapper.py", line 329, in NCCL_CHECK',
        '    raise RuntimeError(f"NCCL error: {error_str}")',
        "RuntimeError: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details)",
    ]
    for _k in range(3):
        inv = c.start(dt=0.2)
        sglang_init_nccl_fail(c, inv, lines)
        c.exit(inv, "killed", "9", restart=True, cpu="14.208s")
    return expect2(c, "nccl_failure", True, ["NCCL error: unhandled system error"], ["healthy"],
                   "https://github.com/sgl-project/sglang/issues/4289",
                   "Frames, error and `Received sigquit from a child process` verbatim (March 2025, 0.4.3.postN); "
                   "Restart=always, three failing starts.")


@case2
def nccl2_sgl_0410_init_unhandled_tp8() -> Case:
    c = Case("nccl2_sgl_0410_init_unhandled_tp8", "sglang", "0.4.10.post2", day=15, hour=21, tp=8,
             model="/models/Qwen3-235B-A22B-Instruct-2507")
    s = "/sgl-workspace/sglang/python/sglang/srt"
    inv = c.start()
    sglang_init_nccl_fail(c, inv, [
        f'  File "{s}/model_executor/model_runner.py", line 235, in __init__',
        "    min_per_gpu_memory = self.init_torch_distributed()",
        f'  File "{s}/model_executor/model_runner.py", line 559, in init_torch_distributed',
        "    initialize_model_parallel(",
        f'  File "{s}/distributed/parallel_state.py", line 1336, in initialize_model_parallel',
        "    _TP = init_model_parallel_group(",
        f'  File "{s}/distributed/parallel_state.py", line 1124, in init_model_parallel_group',
        "    return GroupCoordinator(",
        f'  File "{s}/distributed/parallel_state.py", line 280, in __init__',
        "    self.pynccl_comm = PyNcclCommunicator(",
        f'  File "{s}/distributed/device_communicators/pynccl.py", line 110, in __init__',
        "    self.comm: ncclComm_t = self.nccl.ncclCommInitRank(",
        f'  File "{s}/distributed/device_communicators/pynccl_wrapper.py", line 375, in ncclCommInitRank',
        "    self.NCCL_CHECK(",
        f'  File "{s}/distributed/device_communicators/pynccl_wrapper.py", line 350, in NCCL_CHECK',
        '    raise RuntimeError(f"NCCL error: {error_str}")',
        "RuntimeError: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details)",
    ])
    c.exit(inv, "killed", "9", cpu="31.660s")
    return expect2(c, "nccl_failure", False, ["RuntimeError: NCCL error: unhandled system error"],
                   ["healthy", "engine_exception"], "https://github.com/sgl-project/sglang/issues/8974",
                   "Title `Scheduler hit an exception`; frames verbatim (August 2025, 0.4.10.post2 estimated); the "
                   "NCCL cause sits inside the scheduler's generic exception. Restart=no.")


# ============================== gpu_hardware_xid ===============================================


@case2
def xid2_vllm_v0_054_xid13_engine_dead_restart() -> Case:
    c = Case("xid2_vllm_v0_054_xid13_engine_dead_restart", "vllm", "0.5.4", v1=False, day=16, hour=21, tp=2,
             model="/models/Qwen2-72B-Instruct")
    inv = c.start()
    vllm_boot(c, inv)
    vllm_serve(c, inv, 4)
    for esr in ("0x52e7b0=0x101000e 0x52e7b4=0x4 0x52e7a8=0xc81eb60 0x52e7ac=0x1174",
                "0x52ef30=0x0 0x52ef34=0x20 0x52ef28=0xc81eb60 0x52ef2c=0x1174",
                "0x52efb0=0x0 0x52efb4=0x20 0x52efa8=0xc81eb60 0x52efac=0x1174"):
        c.kernel_line(f"NVRM: Xid (PCI:0000:43:00): 13, pid='<unknown>', name=<unknown>, Graphics Exception: ESR {esr}",
                      dt=0.002)
    c.many(inv, [
        c.vlog("ERROR", "async_llm_engine.py:63", "Engine background task failed"),
        "RuntimeError: CUDA error: an illegal memory access was encountered",
    ] + CUDA_ERR_TAIL + [
        "vllm.engine.async_llm_engine.AsyncEngineDeadError: Background loop has errored already.",
        'INFO:     10.0.3.7:52990 - "POST /v1/chat/completions HTTP/1.1" 500 Internal Server Error',
    ], dt=0.2)
    c.exit(inv, "exited", "1", restart=True)
    inv2 = c.start(dt=0.1)
    vllm_boot(c, inv2)
    vllm_serve(c, inv2, 2)
    return expect2(c, "gpu_hardware_xid", False, ["Graphics Exception: ESR 0x52e7b0=0x101000e"],
                   ["healthy", "engine_exception"], "https://github.com/vllm-project/vllm/issues/5901",
                   "Xid 13 kernel lines verbatim from the async-engine-dead tracking issue (A800, driver 535); the "
                   "engine's error lines are ours. The restart serves again: the GPU still needs checking.")


@case2
def xid2_vllm_011_xid13_109_recovers() -> Case:
    c = Case("xid2_vllm_011_xid13_109_recovers", "vllm", "0.11.0", day=17, hour=21, model="/models/Qwen3-30B-A3B")
    inv = c.start()
    vllm_boot(c, inv)
    vllm_serve(c, inv, 3)
    for line in [
        "NVRM: Xid (PCI:0000:cb:00): 13, pid='<unknown>', name=<unknown>, Graphics SM Warp Exception on (GPC 7, TPC 7, "
        "SM 0): Illegal Instruction Parameter",
        "NVRM: Xid (PCI:0000:cb:00): 13, pid='<unknown>', name=<unknown>, Graphics SM Global Exception on (GPC 7, TPC 7, "
        "SM 0): Multiple Warp Errors",
        "NVRM: Xid (PCI:0000:cb:00): 13, pid='<unknown>', name=<unknown>, Graphics Exception: ESR 0x57c730=0xc04000b "
        "0x57c734=0x24 0x57c728=0x1f81fb60 0x57c72c=0x1174",
    ]:
        c.kernel_line(line, dt=0.001)
    c.kernel_line("NVRM: Xid (PCI:0000:cb:00): 109, pid=1797828, name=pt_main_thread, Ch 00000008, errorString CTX "
                  "SWITCH TIMEOUT, Info 0x58005", dt=5.0)
    vllm_engine_dead(c, inv, ["torch.AcceleratorError: CUDA error: an illegal instruction was encountered"] +
                     CUDA_ERR_TAIL, restart=True)
    inv2 = c.start(dt=0.1)
    vllm_boot(c, inv2)
    vllm_serve(c, inv2, 4)
    return expect2(c, "gpu_hardware_xid", False, ["Illegal Instruction Parameter"], ["healthy", "engine_exception"],
                   "https://github.com/leptonai/gpud/pull/46",
                   "Kernel Xid 13/109 lines verbatim from gpud's dmesg example; the vLLM side (EngineCore fatal error, "
                   "exit 0, Restart=always, serving again) is ours: recovered, but an Xid in the window still decides.")


@case2
def xid2_vllm_085_xid45_nvlink_watchdog() -> Case:
    c = Case("xid2_vllm_085_xid45_nvlink_watchdog", "vllm", "0.8.5", day=18, hour=21, tp=2,
             model="/models/Qwen3-32B")
    inv = c.start()
    vllm_boot(c, inv)
    vllm_serve(c, inv, 3)
    c.kernel_line("NVRM: Xid (PCI:0000:dc:00): 45, pid=1818990, name=python3, Ch 00000001 caused by previous Xid 149",
                  dt=1.0)
    c.kernel_line("NVRM: Xid (PCI:0000:ed:00): 45, pid=1818992, name=python3, Ch 0000000c caused by previous Xid 145")
    c.app(inv, f"[rank1]:[E{STAMP_G}.512044871 ProcessGroupNCCL.cpp:685] [Rank 1] Watchdog caught collective "
               "operation timeout: WorkNCCL(SeqNum=41337, OpType=ALLREDUCE, NumelIn=5242880, NumelOut=5242880, "
               "Timeout(ms)=600000) ran for 600031 milliseconds before timing out.", "worker1", dt=600.0)
    c.app(inv, "terminate called after throwing an instance of 'c10::DistBackendError'", "worker1")
    vllm_engine_dead(c, inv, ["vllm.v1.executor.abstract.WorkerProcDiedError: Worker proc VllmWorker-1 died "
                              "unexpectedly"], where="core.py:400", restart=False)
    c.extra["systemctl_show"] = {"ActiveState": "inactive", "SubState": "dead", "MainPID": "0", "NRestarts": "0",
                                 "Result": "success"}
    return expect2(c, "gpu_hardware_xid", False, ["caused by previous Xid 149"], ["healthy", "nccl_failure"],
                   "https://github.com/NVIDIA/open-gpu-kernel-modules/issues/1150",
                   "Kernel Xid 45 lines verbatim (processes named python3, as vLLM < 0.10's spawned workers are); the "
                   "NCCL watchdog and vLLM lines are ours. The Xid decides over the NCCL symptom; exit 0, no restart.")


# ============================== segfault =======================================================


@case2
def seg2_vllm_053_ray_nccl_proxy_sigsegv() -> Case:
    c = Case("seg2_vllm_053_ray_nccl_proxy_sigsegv", "vllm", "0.5.3", v1=False, day=19, hour=21, tp=2,
             model="/models/Meta-Llama-3.1-70B-Instruct")
    inv = c.start()
    vllm_boot(c, inv)
    vllm_serve(c, inv, 2)
    c.many(inv, [
        "(RayWorkerWrapper pid=5993) *** SIGSEGV received at time=1722289279 on cpu 61 ***",
        "(RayWorkerWrapper pid=5993) PC: @     0x7f0c73d2944a  (unknown)  addProxyOpIfNeeded()",
        "(RayWorkerWrapper pid=5993)     @     0x7f3c7fab6090  1954032864  (unknown)",
        "(RayWorkerWrapper pid=5993)     @                0xd        240  (unknown)",
        "(RayWorkerWrapper pid=5993) [2024-07-29 21:41:19,242 E 5993 5993] logging.cc:440: *** SIGSEGV received at "
        "time=1722289279 on cpu 61 ***",
        "(RayWorkerWrapper pid=5993) [2024-07-29 21:41:19,242 E 5993 5993] logging.cc:440: PC: @     0x7f0c73d2944a  "
        "(unknown)  addProxyOpIfNeeded()",
    ], dt=0.5)
    c.app(inv, c.vlog("ERROR", "async_llm_engine.py:56", "Engine background task failed"), dt=2.0)
    c.app(inv, "ray.exceptions.RayActorError: The actor died unexpectedly before finishing this task.")
    c.exit(inv, "exited", "1")
    return expect2(c, "segfault", False, ["SIGSEGV received at time=1722289279 on cpu 61"],
                   ["healthy", "nccl_failure"], "https://github.com/vllm-project/vllm/issues/6918",
                   "A Ray worker segfaults inside NCCL's proxy (addProxyOpIfNeeded) with no NCCL error text; Ray "
                   "forwards its lines with the actor prefix (verbatim). The driver's two error lines are ours.")


@case2
def seg2_sgl_044_address_not_mapped_loop() -> Case:
    c = Case("seg2_sgl_044_address_not_mapped_loop", "sglang", "0.4.4.post3", day=20, hour=21, tp=2,
             model="/data/models/DeepSeek-R1-Channel-INT8")
    for _k in range(2):
        inv = c.start(dt=0.2)
        sglang_boot(c, inv, "capture")
        c.app(inv, "Segmentation fault: address not mapped to object at address 0x17", "sched", dt=20.0)
        c.app(inv, c.slog("Rank 0 scheduler is dead. Please check if there are relevant logs.", None), dt=1.0)
        c.exit(inv, "exited", "1", restart=True, cpu="3min 41.220s")
    return expect2(c, "segfault", True, ["Segmentation fault: address not mapped to object at address 0x17"],
                   ["healthy", "engine_exception", "cuda_graph_capture_oom"],
                   "https://github.com/sgl-project/sglang/issues/5013",
                   "Multi-node DeepSeek-R1 INT8 with torch compile (comment: starting without some options works). The "
                   "segfault line is the report's title; SGLang's `Rank 0 scheduler is dead` (FORMATS a.4) is its "
                   "template. Two failing starts with automatic restarts.")


# ============================== engine_exception ===============================================


@case2
def exc2_sgl_044_decode_oom_page_size() -> Case:
    c = Case("exc2_sgl_044_decode_oom_page_size", "sglang", "0.4.4.post1", day=21, hour=21, tp=8,
             model="/models/DeepSeek-V3")
    inv = c.start()
    sglang_boot(c, inv)
    sglang_decode(c, inv, 4, tput=611.0, running=64)
    sglang_sched_exception(c, inv, [
        "RuntimeError: Decode out of memory. Try to lower your batch size.",
        "Try to allocate 148 tokens.",
        "Avaliable tokens: 2048",
        "self.token_to_kv_pool_allocator.available_size()=2048",
        "self.tree_cache.evictable_size()=0",
    ])
    sglang_sigquit(c, inv, serving=True)
    c.exit(inv, "killed", "9", restart=True)
    inv2 = c.start(dt=0.1)
    sglang_boot(c, inv2, "weights")
    return expect2(c, "engine_exception", False, ["RuntimeError: Decode out of memory. Try to lower your batch size."],
                   ["healthy", "cuda_oom_runtime", "kv_cache_oom"], "https://github.com/sgl-project/sglang/issues/4602",
                   "With --page-size 64 the allocator fails although 2048 tokens are free: a RuntimeError that kills the "
                   "scheduler, not CUDA memory and not the handled `Decode out of memory happened` retraction. Lines "
                   "verbatim; Restart=always.")


@case2
def exc2_vllm_0111_mla_assert_exit0() -> Case:
    c = Case("exc2_vllm_0111_mla_assert_exit0", "vllm", "0.11.1", day=22, hour=21, model="/models/DeepSeek-V3.2-Exp")
    inv = c.start()
    vllm_boot(c, inv)
    vllm_serve(c, inv, 3)
    c.app(inv, c.vlog("ERROR", "dump_input.py:79", "Dumping scheduler output for model execution: SchedulerOutput("
                      "scheduled_new_reqs=[], scheduled_cached_reqs=CachedRequestData(req_ids=['chatcmpl-f3c5fb1e52494"
                      "df481966de649558a7b'], resumed_req_ids=[], new_token_ids=[], all_token_ids={}, new_block_ids="
                      "[[[193, 194, 195]]], num_computed_tokens=[98304], num_output_tokens=[0]), num_scheduled_tokens="
                      "{chatcmpl-f3c5fb1e52494df481966de649558a7b: 1457}, total_num_scheduled_tokens=1457, "
                      "scheduled_spec_decode_tokens={}, scheduled_encoder_inputs={}, num_common_prefix_blocks=[0], "
                      "finished_req_ids=[], free_encoder_mm_hashes=[], pending_structured_output_tokens=false, "
                      "kv_connector_metadata=null)"), "engine", dt=2.0)
    c.app(inv, c.vlog("ERROR", "dump_input.py:81", "Dumping scheduler stats: SchedulerStats(num_running_reqs=1, "
                      "num_waiting_reqs=0, step_counter=0, current_wave=0, kv_cache_usage=0.14423076923076927, "
                      "prefix_cache_stats=PrefixCacheStats(reset=False, requests=0, queries=0, hits=0, "
                      "preempted_requests=0, preempted_queries=0, preempted_hits=0), connector_prefix_cache_stats=None, "
                      "spec_decoding_stats=None, kv_connector_stats=None)"), "engine")
    vllm_engine_dead(c, inv, [
        '  File "/usr/local/lib/python3.12/dist-packages/vllm/v1/attention/backends/mla/common.py", line 1226, in '
        "_compute_prefill_context",
        "    assert reorganized_kv_c_normed.shape[0] == sum_seq_len",
        "AssertionError",
    ], where="core.py:827", restart=True)
    inv2 = c.start(dt=0.1)
    vllm_boot(c, inv2)
    vllm_serve(c, inv2, 2)
    return expect2(c, "engine_exception", False, ["assert reorganized_kv_c_normed.shape[0] == sum_seq_len"],
                   ["healthy", "unknown"], "https://github.com/vllm-project/vllm/issues/28411",
                   "Scheduler dumps and `EngineCore encountered a fatal error` (core.py:827) verbatim; the assert is the "
                   "report's title, its frame (file/line) ours. vLLM V1 exits 0, Restart=always serves again: still an "
                   "incident.")


# ============================== operator_action ================================================


@case2
def op2_vllm_054_sigterm_worker_exit_15() -> Case:
    c = Case("op2_vllm_054_sigterm_worker_exit_15", "vllm", "0.5.4", v1=False, day=23, hour=21, tp=2,
             model="/models/granite-7b-lab")
    inv = c.start()
    vllm_boot(c, inv)
    vllm_serve(c, inv, 3)
    t = c.stopping(inv, "stop")
    vllm_clean_shutdown(c, inv)
    wp = c._proc(inv, "worker1")[0]
    c.many(inv, [
        c.vlog("INFO", "async_llm_engine.py:51", "Engine is gracefully shutting down."),
        c.vlog("ERROR", "multiproc_worker_utils.py:120", f"Worker VllmWorkerProcess pid {wp} died, exit code: -15"),
        c.vlog("INFO", "multiproc_worker_utils.py:123", "Killing local vLLM worker processes"),
        "[rank0]:[W CudaIPCTypes.cpp:16] Producer process has been terminated before all shared CUDA tensors "
        "released. See Note [Sharing CUDA tensors]",
    ], dt=0.6)
    c.clean_exit(inv)
    c.stopped(inv)
    c.extra = {"actions": [{"at": c.iso(t - 0.3), "who": "pitcrew", "action": "stop",
                            "detail": "end of eval run (mt_bench)"}],
               "systemctl_show": {"ActiveState": "inactive", "SubState": "dead", "MainPID": "0", "Result": "success"}}
    return expect2(c, "operator_action", False, ["Engine is gracefully shutting down."],
                   ["engine_exception", "unknown", "segfault"], "https://github.com/instructlab/instructlab/pull/2093",
                   "The shutdown lines instructlab's eval prints when it stops its vLLM server (verbatim); the worker's "
                   "`died, exit code: -15` ERROR is the stop's SIGTERM, not a failure. Stop recorded in the audit log.")


@case2
def op2_vllm_019_kill9_by_person_restart() -> Case:
    c = Case("op2_vllm_019_kill9_by_person_restart", "vllm", "0.19.0", day=24, hour=21, model="/models/Qwen3-14B")
    inv = c.start()
    vllm_boot(c, inv)
    vllm_serve(c, inv, 3)
    kill_t = c.at(20.0)
    c.exit(inv, "killed", "9", restart=True, dt=0.1)
    inv2 = c.start(dt=0.1)
    vllm_boot(c, inv2)
    vllm_serve(c, inv2, 2)
    c.extra = {"actions": [{"at": c.iso(kill_t - 0.2), "who": "farid", "action": "kill",
                            "detail": "kill -9 MainPID (Ctrl+C did not stop vllm serve)"}],
               "kernel_journal": []}
    return expect2(c, "operator_action", False, ["status=9/KILL"], ["host_oom_kill", "segfault"],
                   "https://github.com/vllm-project/vllm/issues/39854",
                   "The reply in the report: when Ctrl+C does not stop `vllm serve`, `kill -9 <PID>`. A person does so "
                   "(audit `kill`, no OOM in the kernel log); Restart=always brings the unit back.")


# ============================== stop_timeout_sigkill ===========================================


@case2
def stop2_vllm_020_orphan_worker_timeout() -> Case:
    c = Case("stop2_vllm_020_orphan_worker_timeout", "vllm", "0.20.2", day=25, hour=21, tp=2,
             model="/workspace/Qwen3.6-35B-A3B")
    inv = c.start()
    vllm_boot(c, inv)
    vllm_serve(c, inv, 3)
    t = c.stopping(inv, "stop")
    vllm_clean_shutdown(c, inv)
    w0, w1 = c._proc(inv, "worker")[0], c._proc(inv, "worker1")[0]
    c.mgr(f"{c.unit}: State 'stop-sigterm' timed out. Killing.", inv, dt=90.0, prio=4, func="service_dispatch_timer")
    for pid in (w0, w1):
        c.mgr(f"{c.unit}: Killing process {pid} (VLLM::Worker_TP) with signal SIGKILL.", inv, prio=5, func="log_kill")
    c.mgr(f"{c.unit}: Failed with result 'timeout'.", inv, prio=4, mid="result", func="unit_log_failure",
          UNIT_RESULT="timeout")
    c.stopped(inv)
    c.consumed(inv, "2h 11min 4.512s")
    c.extra = {"actions": [{"at": c.iso(t - 0.4), "who": "pitcrew", "action": "stop", "detail": "free GPUs 4,7"}]}
    return expect2(c, "stop_timeout_sigkill", False, ["State 'stop-sigterm' timed out. Killing."],
                   ["healthy", "gpu_memory_held_by_stale_process", "host_oom_kill"],
                   "https://github.com/flagos-ai/vllm-plugin-FL/issues/531",
                   "vLLM 0.20.2, TP=2: APIServer and EngineCore finish their shutdown, the Worker_TP processes hang and "
                   "keep the GPU memory (the report). Here systemd's stop timeout SIGKILLs them (main exited 0 first, so "
                   "no `Main process exited` line); uvicorn's shutdown lines are the template of FORMATS b.5.")


@case2
def stop2_vllm_055_tp_p2p_hang() -> Case:
    c = Case("stop2_vllm_055_tp_p2p_hang", "vllm", "0.5.5", v1=False, day=26, hour=21, tp=2,
             model="/models/Meta-Llama-3.1-8B-Instruct")
    inv = c.start()
    vllm_boot(c, inv)
    vllm_serve(c, inv, 4)
    t = c.stopping(inv, "stop")
    c.app(inv, "INFO:     Shutting down", dt=0.1)
    c.stop_timeout(inv, ["main", "worker", "worker1"], after=90.0)
    c.extra = {"actions": [{"at": c.iso(t - 0.2), "who": "dana", "action": "stop", "detail": "maintenance"}],
               "unit_file": "[Service]\nExecStart=/opt/vllm/bin/vllm serve /models/Meta-Llama-3.1-8B-Instruct "
                            "--tensor-parallel-size 2\nRestart=on-failure\n"}
    return expect2(c, "stop_timeout_sigkill", False, ["State 'stop-sigterm' timed out. Killing."],
                   ["healthy", "operator_action", "host_oom_kill"], "https://github.com/vllm-project/vllm/issues/8085",
                   "Multi-GPU vLLM does not stop (solved in the report with NCCL_P2P_DISABLE=1); a person's stop runs "
                   "into TimeoutStopSec. Only uvicorn's `Shutting down` comes before the hang.")


# ============================== host_oom_kill ==================================================


@case2
def hoom2_sgl_059_scheduler_global_oom_http_up() -> Case:
    c = Case("hoom2_sgl_059_scheduler_global_oom_http_up", "sglang", "0.5.9", day=27, hour=21,
             model="/models/Qwen2.5-VL-72B-Instruct-AWQ")
    inv = c.start()
    sglang_boot(c, inv)
    sglang_decode(c, inv, 3)
    sched = c._proc(inv, "sched")[0]
    c.kernel_line("sglang::schedul invoked oom-killer: gfp_mask=0x140dca(GFP_HIGHUSER_MOVABLE|__GFP_COMP|__GFP_ZERO), "
                  "order=0, oom_score_adj=0", dt=4.0)
    c.kernel_line(f"oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0,global_oom,"
                  f"task_memcg=/system.slice/{c.unit},task=sglang::schedul,pid={sched},uid=998")
    c.kernel_line(f"Out of memory: Killed process {sched} (sglang::schedul) total-vm:18313196kB, anon-rss:12303860kB, "
                  "file-rss:548kB, shmem-rss:0kB, UID:998 pgtables:25904kB oom_score_adj:0", prio=3)
    c.oom_killed(inv)
    for i in range(3):
        c.app(inv, c.slog("Health check failed. Server couldn't get a response from detokenizer for last 20 seconds. "
                          f"tic start time: 21:1{i}:05. last_heartbeat time: 21:09:58", None), dt=40.0)
    c.extra["unit_file"] = ("[Service]\nExecStart=/opt/sglang/bin/python3 -m sglang.launch_server --model-path "
                            f"{c.model}\nOOMPolicy=continue\nRestart=on-failure\n")
    return expect2(c, "host_oom_kill", False, ["Out of memory: Killed process"],
                   ["healthy", "cuda_oom_runtime", "unknown"], "https://github.com/open-webui/open-webui/issues/21515",
                   "Kernel line shapes verbatim from the report (global OOM of a python3 process while compressing "
                   "audio); here the victim is the SGLang scheduler (pid/memcg ours). OOMPolicy=continue: the main "
                   "process and HTTP stay up, health checks fail (FORMATS a.6).")


# ============================== unknown ========================================================


@case2
def unk2_vllm_071_engine_process_died_exit0() -> Case:
    c = Case("unk2_vllm_071_engine_process_died_exit0", "vllm", "0.7.1", v1=False, day=28, hour=21,
             model="/model")
    inv = c.start()
    vllm_boot(c, inv)
    vllm_serve(c, inv, 3)
    eng = c._proc(inv, "engine")[0]
    c.many(inv, [
        c.vlog("INFO", "engine.py:275", "Added request chatcmpl-87294cc938af457f9628dd82be72189c."),
        c.vlog("ERROR", "client.py:300", f"RuntimeError('Engine process (pid {eng}) died.')"),
        c.vlog("ERROR", "client.py:300", "NoneType: None"),
        c.vlog("CRITICAL", "launcher.py:101", "MQLLMEngine is already dead, terminating server process"),
        'INFO:     10.44.128.16:28304 - "POST /v1/chat/completions HTTP/1.1" 500 Internal Server Error',
        "INFO:     Shutting down",
        "INFO:     Waiting for application shutdown.",
        "INFO:     Application shutdown complete.",
        f"INFO:     Finished server process [{inv.main}]",
    ], dt=0.5)
    c.clean_exit(inv, restart=True)
    inv2 = c.start(dt=0.1)
    vllm_boot(c, inv2)
    vllm_serve(c, inv2, 2)
    return expect2(c, "unknown", False, ["MQLLMEngine is already dead, terminating server process"],
                   ["healthy", "operator_action"], "https://github.com/vllm-project/vllm/issues/12798",
                   "DeepSeek-VL2 on 0.7.x: the engine process dies after dozens of requests with no exception "
                   "(`NoneType: None`); lines verbatim (engine pid ours). Exit 0, Restart=always, serves again.")


@case2
def unk2_vllm_063_engine_loop_died_no_restart() -> Case:
    c = Case("unk2_vllm_063_engine_loop_died_no_restart", "vllm", "0.6.3", v1=False, day=29, hour=21,
             model="/models/Qwen2.5-72B-Instruct-GPTQ-Int4")
    cl = "/root/miniconda3/envs/vllm/lib/python3.10/site-packages/vllm/engine/multiprocessing/client.py"
    inv = c.start()
    vllm_boot(c, inv)
    vllm_serve(c, inv, 3)
    c.many(inv, [
        c.vlog("INFO", "engine.py:290", "Added request chat-58cc8fe807d34717b775ea663d913bcb."),
    ] + [c.vlog("ERROR", "client.py:250", x) for x in [
        "RuntimeError('Engine loop has died')",
        "Traceback (most recent call last):",
        f'  File "{cl}", line 150, in run_heartbeat_loop',
        "    await self._check_success(",
        f'  File "{cl}", line 314, in _check_success',
        "    raise response",
        "RuntimeError: Engine loop has died",
    ]] + [
        c.vlog("INFO", "metrics.py:349", "Avg prompt throughput: 6.5 tokens/s, Avg generation throughput: 0.0 "
               "tokens/s, Running: 1 reqs, Swapped: 0 reqs, Pending: 0 reqs, GPU KV cache usage: 5.0%, CPU KV cache "
               "usage: 0.0%."),
        'INFO:     10.12.17.5:58280 - "POST /v1/chat/completions HTTP/1.1" 200 OK',
        'INFO:     10.12.17.5:58489 - "GET /v1/models HTTP/1.1" 200 OK',
        c.vlog("CRITICAL", "launcher.py:99", "MQLLMEngine is already dead, terminating server process"),
        'INFO:     10.12.17.5:58489 - "POST /v1/chat/completions HTTP/1.1" 500 Internal Server Error',
    ], dt=0.4)
    vllm_clean_shutdown(c, inv)
    c.clean_exit(inv)
    c.extra = {"systemctl_show": {"ActiveState": "inactive", "SubState": "dead", "MainPID": "0", "NRestarts": "0",
                                  "ExecMainCode": "1", "ExecMainStatus": "0", "Result": "success"},
               "kernel_journal": []}
    return expect2(c, "unknown", False, ["Engine loop has died"], ["healthy", "operator_action"],
                   "https://github.com/vllm-project/vllm/issues/10024",
                   "The engine loop dies with no cause in the log (lines verbatim, 0.6.3.post1); exit 0, so "
                   "Restart=on-failure does not restart. Nothing names a cause: unknown.")


# ============================== healthy ========================================================


@case2
def ok2_sgl_056_high_token_usage_queue() -> Case:
    c = Case("ok2_sgl_056_high_token_usage_queue", "sglang", "0.5.6", day=30, hour=21, model="/models/DeepSeek-V2-Lite")
    inv = c.start()
    sglang_boot(c, inv)
    for g in ("446.45", "445.85", "443.41", "440.85", "445.73"):
        c.app(inv, c.slog(f"Decode batch, #running-req: 6, #token: 1920, token usage: 0.94, cuda graph: True, gen "
                          f"throughput (token/s): {g}, #queue-req: 5,"), "sched", dt=0.2)
        c.app(inv, c.slog('INFO:     10.0.4.21:51733 - "POST /v1/chat/completions HTTP/1.1" 200 OK', None), dt=0.1)
    sglang_decode(c, inv, 2, running=6)
    return expect2(c, "healthy", False, [], NOT_HEALTHY, "https://github.com/sgl-project/sglang/issues/14972",
                   "Decode lines verbatim (December 2025): KV at 94 % with a queue, still decoding at ~445 tok/s. The "
                   "report's later crash is outside this window; the unit is serving at the end.")


@case2
def ok2_vllm_020_spec_metrics_health_polls() -> Case:
    c = Case("ok2_vllm_020_spec_metrics_health_polls", "vllm", "0.20.2", day=1, hour=22, tp=2,
             model="/models/gemma-4-31B-it")
    inv = c.start()
    vllm_boot(c, inv)
    for _ in range(4):
        c.app(inv, 'INFO:     10.42.31.1:56700 - "GET /health HTTP/1.1" 200 OK', dt=5.0)
        c.app(inv, 'INFO:     10.42.31.1:60834 - "GET /health HTTP/1.1" 200 OK', dt=0.5)
        c.app(inv, 'INFO:     10.42.4.0:58264 - "POST /v1/chat/completions HTTP/1.1" 200 OK', dt=1.0)
        c.app(inv, c.vlog("INFO", "loggers.py:271", "Engine 000: Avg prompt throughput: 1310.1 tokens/s, Avg generation "
                          "throughput: 50.9 tokens/s, Running: 1 reqs, Waiting: 0 reqs, GPU KV cache usage: 0.6%, Prefix "
                          "cache hit rate: 56.1%, MM cache hit rate: 16.7%"), dt=3.5)
        c.app(inv, c.vlog("INFO", "metrics.py:101", "SpecDecoding metrics: Mean acceptance length: 2.53, Accepted "
                          "throughput: 10.23 tokens/s, Drafted throughput: 13.40 tokens/s, Accepted: 307 tokens, Drafted: "
                          "402 tokens, Per-position acceptance rate: 0.836, 0.692, Avg Draft acceptance rate: 76.4%"))
    return expect2(c, "healthy", False, [], NOT_HEALTHY, "https://github.com/vllm-project/vllm/issues/42363",
                   "Serving lines verbatim from the report's log before its crash (vLLM 0.20.2, MTP speculative "
                   "decoding, health polls every few seconds); the window ends while serving.")


@case2
def ok2_sgl_043_prefill_health_polls() -> Case:
    c = Case("ok2_sgl_043_prefill_health_polls", "sglang", "0.4.3", day=2, hour=22, tp=8, model="/data/models-r1")
    inv = c.start()
    sglang_boot(c, inv)
    for tok, usage in (("173", "0.85"), ("170", "0.86"), ("168", "0.86"), ("171", "0.87")):
        c.app(inv, c.slog(f"Prefill batch. #new-seq: 1, #new-token: {tok}, #cached-token: 0, cache hit rate: 0.00%, "
                          f"token usage: {usage}, #running-req: 197, #queue-req: 0"), "sched", dt=2.0)
        c.app(inv, c.slog('INFO:     10.101.0.11:45226 - "GET /health HTTP/1.1" 200 OK', None), dt=0.5)
        c.app(inv, c.slog('INFO:     172.29.209.0:11190 - "POST /v1/completions HTTP/1.1" 200 OK', None), dt=0.5)
    sglang_decode(c, inv, 3, tput=2101.0, running=197)
    return expect2(c, "healthy", False, [], NOT_HEALTHY, "https://github.com/sgl-project/sglang/pull/3582",
                   "Prefill, /health and completion lines verbatim from the NextN test comment (200 concurrent, token "
                   "usage 0.85); the window ends before the crash reported after it.")
