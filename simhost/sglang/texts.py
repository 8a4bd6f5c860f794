"""Error texts of SGLang 0.5.9, PyTorch and NCCL as the fake server prints them (FORMATS.md a.4).

Tracebacks use SGLang 0.5.9's file paths and function names; the final exception lines are the
real texts: `RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.
Current value: self.server_args.mem_fraction_static=0.88` (`model_runner_kv_cache_mixin.py`
l.415-419), torch's `torch.OutOfMemoryError: CUDA out of memory. ...`, the NCCL watchdog lines
(text varies by torch version; taken from public issues), torch >= 2.8's `AcceleratorError`.
"""

from __future__ import annotations

import time

PKG = "/usr/local/lib/python3.11/dist-packages"
SRT = f"{PKG}/sglang/srt"
TORCH_DOC = "https://pytorch.org/docs/stable/notes/cuda.html#environment-variables"


def fmt_size(nbytes: float) -> str:
    """torch's `format_size` in the OOM message: GiB above 1 GiB, else MiB, else KiB."""
    if nbytes >= 1 << 30:
        return f"{nbytes / (1 << 30):.2f} GiB"
    if nbytes >= 1 << 20:
        return f"{nbytes / (1 << 20):.2f} MiB"
    return f"{nbytes / 1024:.2f} KiB"


SCHEDULER_HEAD = [
    f'  File "{SRT}/managers/scheduler.py", line 3183, in run_scheduler_process',
    "    scheduler = Scheduler(",
    "                ^^^^^^^^^^",
    f'  File "{SRT}/managers/scheduler.py", line 362, in __init__',
    "    self.init_model_worker()",
]


def not_enough_memory(mem_fraction: float, draft: bool) -> list[str]:
    frames = list(SCHEDULER_HEAD)
    if draft:
        frames += [f'  File "{SRT}/managers/scheduler.py", line 528, in init_model_worker',
                   "    self.draft_worker = DraftWorkerClass(",
                   "                        ^^^^^^^^^^^^^^^^^",
                   f'  File "{SRT}/speculative/eagle_worker.py", line 128, in __init__',
                   "    super().__init__(",
                   f'  File "{SRT}/managers/tp_worker.py", line 247, in __init__',
                   "    self._model_runner = ModelRunner(",
                   "                         ^^^^^^^^^^^^"]
    else:
        frames += [f'  File "{SRT}/managers/scheduler.py", line 496, in init_model_worker',
                   "    self.tp_worker = TpModelWorker(",
                   "                     ^^^^^^^^^^^^^^",
                   f'  File "{SRT}/managers/tp_worker.py", line 247, in __init__',
                   "    self._model_runner = ModelRunner(",
                   "                         ^^^^^^^^^^^^"]
    frames += [f'  File "{SRT}/model_executor/model_runner.py", line 382, in __init__',
               "    self.initialize(min_per_gpu_memory)",
               f'  File "{SRT}/model_executor/model_runner.py", line 548, in initialize',
               "    self.init_memory_pool(",
               f'  File "{SRT}/model_executor/model_runner_kv_cache_mixin.py", line 415, in init_memory_pool',
               "    raise RuntimeError(",
               "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. "
               f"Current value: self.server_args.mem_fraction_static={mem_fraction}"]
    return frames


def torch_oom(gpu: int, alloc: float, total: float, free: float, mine: float, others: list[tuple[int, float]],
              where: str) -> list[str]:
    if where == "load":
        frames = [*SCHEDULER_HEAD,
                  f'  File "{SRT}/model_executor/model_runner.py", line 512, in initialize',
                  "    self.load_model()",
                  f'  File "{SRT}/model_executor/model_runner.py", line 990, in load_model',
                  "    self.model = get_model(",
                  f'  File "{SRT}/model_loader/loader.py", line 658, in load_model',
                  "    model = _initialize_model(",
                  f'  File "{PKG}/torch/utils/_device.py", line 104, in __torch_function__',
                  "    return func(*args, **kwargs)"]
    else:
        frames = [f'  File "{SRT}/managers/scheduler.py", line 3196, in run_scheduler_process',
                  "    scheduler.event_loop_normal()",
                  f'  File "{SRT}/managers/scheduler.py", line 1012, in event_loop_normal',
                  "    result = self.run_batch(batch)",
                  f'  File "{SRT}/managers/scheduler.py", line 2095, in run_batch',
                  "    batch_result = self.model_worker.forward_batch_generation(model_worker_batch)",
                  f'  File "{SRT}/speculative/eagle_worker.py", line 301, in forward_batch_generation',
                  "    logits_output, verify_output, model_worker_batch, _ = self.verify(batch, spec_info)",
                  f'  File "{SRT}/speculative/eagle_worker.py", line 735, in verify',
                  "    logits_output, _ = self.target_worker.forward_batch_generation(",
                  f'  File "{SRT}/layers/logits_processor.py", line 331, in forward',
                  "    logits = self._get_logits(pruned_states, lm_head, logits_metadata)"]
    held = " ".join(f"Process {pid} has {fmt_size(gib * (1 << 30))} memory in use." for pid, gib in others)
    text = (f"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate {fmt_size(alloc * (1 << 30))}. "
            f"GPU {gpu} has a total capacity of {fmt_size(total * (1 << 30))} of which "
            f"{fmt_size(free * (1 << 30))} is free. {held + ' ' if held else ''}Including non-PyTorch memory, "
            f"this process has {fmt_size(mine * (1 << 30))} memory in use. Of the allocated memory "
            f"{fmt_size(mine * 0.97 * (1 << 30))} is allocated by PyTorch, and {fmt_size(mine * 0.01 * (1 << 30))} "
            "is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting "
            "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for "
            f"Memory Management  ({TORCH_DOC})")
    return [*frames, text]


def cuda_error_lines() -> list[str]:
    return ["torch.AcceleratorError: CUDA error: unspecified launch failure",
            "Search for `cudaErrorLaunchFailure' in "
            "https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html for more information.",
            "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below "
            "might be incorrect.",
            "For debugging consider passing CUDA_LAUNCH_BLOCKING=1",
            "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions."]


def nccl_watchdog(rank: int, seq: int) -> list[str]:
    now = time.time()
    stamp = time.strftime("%m%d %H:%M:%S", time.localtime(now)) + f".{int(now % 1 * 1e9):09d}"
    head = f"[rank{rank}]:[E{stamp} ProcessGroupNCCL.cpp:685] [Rank {rank}]"
    work = (f"WorkNCCL(SeqNum={seq}, OpType=ALLREDUCE, NumelIn=2621440, NumelOut=2621440, Timeout(ms)=600000)")
    return [f"{head} Watchdog caught collective operation timeout: {work} ran for 600047 milliseconds before "
            "timing out.",
            f"[rank{rank}]:[E{stamp} ProcessGroupNCCL.cpp:2252] [PG ID 0 PG GUID 0(default_pg) Rank {rank}] "
            f"failure detected by watchdog at work sequence id: {seq} PG status: last enqueued work: {seq}, "
            f"last completed work: {seq - 1}",
            f"[rank{rank}]:[E{stamp} ProcessGroupNCCL.cpp:732] [Rank {rank}] Some NCCL operations have failed or "
            "timed out. Due to the asynchronous nature of CUDA kernels, subsequent GPU operations might run on "
            "corrupted/incomplete data.",
            f"[rank{rank}]:[E{stamp} ProcessGroupNCCL.cpp:738] [Rank {rank}] To avoid data inconsistency, we are "
            "taking the entire process down.",
            "terminate called after throwing an instance of 'c10::DistBackendError'",
            f"  what():  [PG ID 0 PG GUID 0(default_pg) Rank {rank}] Process group watchdog thread terminated with "
            f"exception: [Rank {rank}] Watchdog caught collective operation timeout: {work} ran for 600047 "
            "milliseconds before timing out."]


def warmup_failed(host: str, port: int) -> list[str]:
    return ["Initialization failed. warmup error: Traceback (most recent call last):",
            f'  File "{SRT}/entrypoints/http_server.py", line 1790, in _wait_and_warmup',
            "    res = requests.get(url + \"/model_info\", timeout=5, headers=headers)",
            f'  File "{PKG}/requests/adapters.py", line 713, in send',
            "    raise ReadTimeout(e, request=request)",
            f"requests.exceptions.ReadTimeout: HTTPConnectionPool(host='{host}', port={port}): Read timed out. "
            "(read timeout=5)"]


def model_path_missing(path: str) -> list[str]:
    return ["Traceback (most recent call last):",
            '  File "<frozen runpy>", line 198, in _run_module_as_main',
            '  File "<frozen runpy>", line 88, in _run_code',
            f'  File "{PKG}/sglang/launch_server.py", line 24, in <module>',
            "    server_args = prepare_server_args(sys.argv[1:])",
            f'  File "{SRT}/server_args.py", line 4419, in prepare_server_args',
            "    return ServerArgs.from_cli_args(raw_args)",
            f'  File "{PKG}/transformers/utils/hub.py", line 511, in cached_files',
            "    raise OSError(",
            f"OSError: Incorrect path_or_model_id: '{path}'. Please provide either the path to a local folder or "
            "the repo_id of a model on the Hub."]


def nvidia_smi_failed(stderr: str) -> list[str]:
    return ["Traceback (most recent call last):",
            '  File "<frozen runpy>", line 198, in _run_module_as_main',
            f'  File "{SRT}/server_args.py", line 640, in __post_init__',
            "    self._handle_gpu_memory_settings(gpu_mem)",
            f'  File "{SRT}/utils/common.py", line 1740, in get_nvgpu_memory_capacity',
            '    raise RuntimeError(f"nvidia-smi error: {result.stderr.strip()}")',
            f"RuntimeError: nvidia-smi error: {stderr}"]
