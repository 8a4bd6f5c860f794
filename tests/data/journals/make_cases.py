"""Write every recorded journal (one per cause) and its --extra side evidence. See README.md for sources.

.venv/bin/python tests/data/journals/make_cases.py
"""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from make_journals import IDENT, UNIT, Journal, inv_id, iso, ts, unit_file

T0 = datetime(2026, 3, 9, 14, 0, 0, tzinfo=UTC)
SCHED_FRAMES = [
    '  File "/opt/sglang/venv/lib/python3.11/site-packages/sglang/srt/managers/scheduler.py", line 3177, '
    "in run_scheduler_process",
    "    scheduler = Scheduler(",
    '  File "/opt/sglang/venv/lib/python3.11/site-packages/sglang/srt/managers/scheduler.py", line 318, in __init__',
    "    self.tp_worker = TpModelWorker(",
    '  File "/opt/sglang/venv/lib/python3.11/site-packages/sglang/srt/model_executor/model_runner.py", line 378, '
    "in __init__",
    "    self.initialize(min_per_gpu_memory)",
]
SIGQUIT_LAUNCH = "Received sigquit from a child process. It usually means the child failed."
SIGQUIT_SERVING = "SIGQUIT received. signum=None, frame=None. It usually means one child failed."


def kv_cache_oom_steps10_loop() -> None:
    """Field notes incident 2: steps=10 leaves too little memory for the KV cache, every start fails."""
    j = Journal("kv_cache_oom_steps10_loop", T0, steps=5)
    i0 = inv_id(0, j.name)
    j.started(i0)
    j.startup(i0, 1840101)
    j.decode(i0, 1840101, [279.8, 282.4, 283.1])
    deploy_t = j.at(20.0)
    j.steps = 10
    j.mgr(f"Stopping {IDENT}...", i0, dt=0.4, mid="stopping", func="job_emit_start_message", JOB_TYPE="restart")
    j.app("SIGTERM received. signum=None frame=None. Draining requests and shutting down...", i0, 1840101)
    j.crashed(i0, result="signal")
    j.mgr(f"Stopped {IDENT}.", i0, mid="stopped", func="job_emit_done_message", JOB_TYPE="restart")
    for n in range(1, 5):
        inv = inv_id(n, j.name)
        pid = 1840101 + 977 * n
        j.started(inv, dt=0.1 if n == 1 else 10.0)
        j.startup(inv, pid, until="weights")
        frames = [
            *SCHED_FRAMES,
            '  File "/opt/sglang/venv/lib/python3.11/site-packages/sglang/srt/model_executor/'
            'model_runner_kv_cache_mixin.py", line 415, in init_memory_pool',
            "    raise RuntimeError(",
        ]
        j.traceback(
            inv,
            pid + 212,
            frames,
            "RuntimeError: Not enough memory. Please try to increase "
            "--mem-fraction-static. Current value: self.server_args.mem_fraction_static=0.86",
        )
        j.app(f"[{ts(j.at(0.3))}] {SIGQUIT_LAUNCH}", inv, pid)
        j.crashed(inv, restart=n)
    j.write(
        {
            "systemctl_show": {
                "NRestarts": "4",
                "ActiveState": "activating",
                "SubState": "auto-restart",
                "Result": "signal",
                "MainPID": "0",
                "ExecMainStatus": "9",
            },
            "actions": [
                {
                    "at": iso(deploy_t),
                    "who": "dana",
                    "action": "deploy",
                    "detail": "speculative-num-steps 5 -> 10 (unit revision 7, previous 6)",
                }
            ],
            "unit_file": unit_file(10),
            "nvidia_smi_apps": [],
            "nvidia_smi_gpu": ["0, 0, 97887", "1, 0, 97887", "2, 0, 97887", "3, 0, 97887"],
        }
    )


def stop_timeout_sigkill_own_stop() -> None:
    """Field notes incident 1: served at 270-293 tok/s, then pitcrew's own stop timed out into SIGKILL."""
    j = Journal("stop_timeout_sigkill_own_stop", T0.replace(hour=15))
    i0, i1, pid = inv_id(0, j.name), inv_id(1, j.name), 1843377
    j.started(i0)
    j.startup(i0, pid)
    j.decode(i0, pid, [270.41, 288.93, 293.02, 281.37, 276.85, 290.12])
    stop_t = j.at(1.0)
    j.mgr(f"Stopping {IDENT}...", i0, dt=0.05, mid="stopping", func="job_emit_start_message", JOB_TYPE="stop")
    j.app(
        f"[{ts(j.at(0.02))}] SIGTERM received. signum=None frame=None. Draining requests and shutting down...", i0, pid
    )
    for k in range(11):
        j.app(
            f"[{ts(j.at(5.0))}] Gracefully exiting... Remaining number of requests 4. Remaining requests "
            "remaining_rids=['b1f0c2', '7d9e41', 'a03c55', '5e6f70'].",
            i0,
            pid,
            dt=0.0 if k else 0.1,
        )
    j.mgr(f"{UNIT}: State 'stop-sigterm' timed out. Killing.", i0, dt=4.85, prio=4, func="service_dispatch_timer")
    j.mgr(f"{UNIT}: Killing process {pid} (python3) with signal SIGKILL.", i0, prio=5, func="log_kill")
    j.mgr(f"{UNIT}: Killing process {pid + 209} (sglang::detoken) with signal SIGKILL.", i0, prio=5, func="log_kill")
    j.mgr(
        f"{UNIT}: Main process exited, code=killed, status=9/KILL",
        i0,
        prio=4,
        mid="exited",
        EXIT_CODE="killed",
        EXIT_STATUS="9",
        COMMAND="ExecStart",
    )
    j.mgr(
        f"{UNIT}: Failed with result 'timeout'.",
        i0,
        prio=4,
        mid="result",
        func="unit_log_failure",
        UNIT_RESULT="timeout",
    )
    j.mgr(f"Stopped {IDENT}.", i0, mid="stopped", func="job_emit_done_message", JOB_TYPE="stop", JOB_RESULT="done")
    j.mgr(f"{UNIT}: Consumed 47min 12.345s CPU time.", i0, mid="consumed", func="unit_log_resources")
    start_t = j.at(2.0)
    j.started(i1)
    j.startup(i1, pid + 5120, until="load")
    j.write(
        {
            "systemctl_show": {
                "NRestarts": "0",
                "ActiveState": "active",
                "SubState": "running",
                "Result": "success",
                "MainPID": str(pid + 5120),
            },
            "actions": [
                {
                    "at": iso(T0.replace(hour=14, minute=55).timestamp()),
                    "who": "dana",
                    "action": "deploy",
                    "detail": "speculative-num-steps 5 -> 10",
                },
                {"at": iso(stop_t), "who": "pitcrew", "action": "stop", "detail": "teardown of round steps=5"},
                {"at": iso(start_t), "who": "pitcrew", "action": "start", "detail": "round steps=10"},
            ],
            "unit_file": unit_file(10),
        }
    )


def served_then(name: str, hour: int, steps: int = 10) -> tuple[Journal, str, int]:
    j = Journal(name, T0.replace(hour=hour), steps=steps)
    inv, pid = inv_id(0, name), 1850000 + hour * 1000
    j.started(inv)
    j.startup(inv, pid)
    return j, inv, pid


def cuda_oom_runtime() -> None:
    j, inv, pid = served_then("cuda_oom_runtime", 16)
    j.decode(inv, pid, [1210.4, 1388.2, 1402.9], accept=3.21, rate=0.20, running=14)
    frames = [
        '  File "/opt/sglang/venv/lib/python3.11/site-packages/sglang/srt/managers/scheduler.py", line 1015, '
        "in event_loop_normal",
        "    result = self.run_batch(batch)",
    ]
    j.traceback(
        inv,
        pid + 212,
        frames,
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 32.00 MiB. GPU 0 has a total capacity "
        "of 23.52 GiB of which 13.00 MiB is free. Including non-PyTorch memory, this process has 23.48 GiB "
        "memory in use. Of the allocated memory 22.67 GiB is allocated by PyTorch, and 301.11 MiB is "
        "reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting "
        "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for "
        "Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)",
    )
    j.app(f"[{ts(j.at(0.2))}] {SIGQUIT_SERVING}", inv, pid)
    j.crashed(inv, restart=1)
    j.started(inv_id(1, j.name), dt=10.0)
    j.write()


def cuda_graph_capture_oom() -> None:
    j = Journal("cuda_graph_capture_oom", T0.replace(hour=17))
    for n in range(2):
        inv, pid = inv_id(n, j.name), 1860000 + n * 900
        j.started(inv, dt=10.0)
        j.startup(inv, pid, until="capture")
        frames = [
            '  File "/opt/sglang/venv/lib/python3.11/site-packages/sglang/srt/model_executor/model_runner.py", '
            "line 934, in init_cuda_graphs",
            "    self.cuda_graph_runner = CudaGraphRunner(self)",
            '  File "/opt/sglang/venv/lib/python3.11/site-packages/sglang/srt/model_executor/cuda_graph_runner.py", '
            "line 269, in __init__",
            "    raise Exception(",
        ]
        j.traceback(
            inv,
            pid + 212,
            frames,
            "Exception: Capture cuda graph failed: CUDA out of memory. Tried to allocate 448.00 MiB. GPU 7 has "
            "a total capacity of 95.00 GiB of which 301.56 MiB is free. Including non-PyTorch memory, this "
            "process has 94.69 GiB memory in use.",
        )
        for line in [
            "Possible solutions:",
            "1. set --mem-fraction-static to a smaller value (e.g., 0.8 or 0.7)",
            "2. set --cuda-graph-max-bs to a smaller value (e.g., 16)",
            "3. disable torch compile by not using --enable-torch-compile",
            "4. disable CUDA graph by --disable-cuda-graph. (Not recommended. Huge performance loss)",
            "Open an issue on GitHub https://github.com/sgl-project/sglang/issues/new/choose",
        ]:
            j.app(line, inv, pid + 212, dt=0.0, comm="sglang::schedul", cmd="sglang::scheduler_TP0")
        j.app(f"[{ts(j.at(0.3))}] {SIGQUIT_LAUNCH}", inv, pid)
        j.crashed(inv, restart=n + 1)
    j.write({"unit_file": unit_file(10)})


def gpu_memory_held_by_stale_process() -> None:
    j = Journal("gpu_memory_held_by_stale_process", T0.replace(hour=18))
    for n in range(3):
        inv, pid = inv_id(n, j.name), 1870000 + n * 900
        j.started(inv, dt=10.0)
        j.startup(inv, pid, until="load")
        j.app(
            f"[{ts(j.at(0.1))} TP0] The memory capacity is unbalanced. Some GPUs may be occupied by other "
            "processes. min_per_gpu_memory=4.12, local_gpu_memory=94.12, local_gpu_memory * 0.9=84.71",
            inv,
            pid + 212,
            comm="sglang::schedul",
            cmd="sglang::scheduler_TP0",
        )
        frames = [
            *SCHED_FRAMES,
            '  File "/opt/sglang/venv/lib/python3.11/site-packages/sglang/srt/mem_cache/memory_pool.py", '
            "line 600, in _create_buffers",
            "    torch.zeros(",
        ]
        j.traceback(
            inv,
            pid + 212,
            frames,
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total "
            "capacity of 95.59 GiB of which 20.38 MiB is free. Including non-PyTorch memory, this process has "
            "1.81 GiB memory in use. Process 77102 has 91.40 GiB memory in use. Of the allocated memory 1.34 "
            "GiB is allocated by PyTorch, and 94.59 MiB is reserved by PyTorch but unallocated. If reserved but "
            "unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid "
            "fragmentation.  See documentation for Memory Management  "
            "(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)",
        )
        j.app(f"[{ts(j.at(0.3))}] {SIGQUIT_LAUNCH}", inv, pid)
        j.crashed(inv, restart=n + 1)
    j.write(
        {
            "systemctl_show": {"NRestarts": "3", "MainPID": "0", "Result": "signal", "ActiveState": "activating"},
            "nvidia_smi_apps": [{"pid": 77102, "process_name": "sglang::scheduler", "used_memory": 93594}],
            "nvidia_smi_gpu": ["0, 95440, 97887", "1, 862, 97887", "2, 862, 97887", "3, 862, 97887"],
            "process_info": [
                {
                    "pid": 77102,
                    "ppid": 1,
                    "user": "alice",
                    "cgroup": "/user.slice/user-1001.slice/session-12.scope",
                    "cmdline": "sglang::scheduler_TP0",
                    "started": "2026-03-09T13:10:02",
                }
            ],
            "actions": [],
            "unit_file": unit_file(10),
            "some_future_key": {"ignored": True},
        }
    )


def port_in_use() -> None:
    j = Journal("port_in_use", T0.replace(hour=19))
    inv, pid = inv_id(0, j.name), 1880000
    j.started(inv)
    j.startup(inv, pid, until="uvicorn")
    j.app(
        f"[{ts(j.at(0.01))}] ERROR:    [Errno 98] error while attempting to bind on address ('0.0.0.0', 30000): "
        "address already in use",
        inv,
        pid,
    )
    j.app(f"[{ts(j.at(0.01))}] INFO:     Waiting for application shutdown.", inv, pid)
    j.app(f"[{ts(j.at(0.01))}] INFO:     Application shutdown complete.", inv, pid)
    j.app(f"[{ts(j.at(120.0))}] Initialization failed. warmup error: Cannot connect to host 127.0.0.1:30000", inv, pid)
    j.crashed(inv, restart=1)
    j.write(
        {
            "ss_listen": [{"local": "0.0.0.0:30000", "pid": 55120, "process": "python3", "user": "bob"}],
            "systemctl_show": {"NRestarts": "1", "MainPID": "0"},
        }
    )


def bad_argument() -> None:
    j = Journal("bad_argument", T0.replace(hour=20))
    for n in range(5):
        inv, pid = inv_id(n, j.name), 1890000 + n * 37
        j.started(inv, dt=1.0)
        j.app(
            "usage: launch_server.py [-h] --model-path MODEL_PATH [--tokenizer-path TOKENIZER_PATH] [--host HOST] "
            "[--port PORT] [--tokenizer-mode {auto,slow}] [--skip-tokenizer-init]",
            inv,
            pid,
            dt=3.2,
        )
        j.app("launch_server.py: error: unrecognized arguments: --reasoning_parser kimi_k2", inv, pid, dt=0.0)
        j.mgr(
            f"{UNIT}: Main process exited, code=exited, status=2/INVALIDARGUMENT",
            inv,
            prio=5,
            mid="exited",
            EXIT_CODE="exited",
            EXIT_STATUS="2",
            COMMAND="ExecStart",
        )
        j.mgr(
            f"{UNIT}: Failed with result 'exit-code'.",
            inv,
            prio=4,
            mid="result",
            func="unit_log_failure",
            UNIT_RESULT="exit-code",
        )
        j.mgr(f"{UNIT}: Consumed 3.127s CPU time.", inv, mid="consumed", func="unit_log_resources")
        j.mgr(
            f"{UNIT}: Scheduled restart job, restart counter is at {n + 1}.",
            inv,
            dt=1.0,
            mid="restart",
            func="service_enter_restart",
            N_RESTARTS=str(n + 1),
        )
        j.mgr(f"Stopped {IDENT}.", inv, mid="stopped", func="job_emit_done_message", JOB_TYPE="restart")
    j.mgr(f"{UNIT}: Start request repeated too quickly.", inv, prio=4, func="unit_test_start_limit")
    j.mgr(
        f"{UNIT}: Failed with result 'exit-code'.",
        inv,
        prio=4,
        mid="result",
        func="unit_log_failure",
        UNIT_RESULT="exit-code",
    )
    j.mgr(
        f"Failed to start {IDENT}.",
        inv,
        prio=3,
        mid="failed_to_start",
        func="job_emit_done_message",
        JOB_TYPE="start",
        JOB_RESULT="failed",
    )
    j.write()


def model_load_failure() -> None:
    j = Journal("model_load_failure", T0.replace(hour=21))
    inv, pid = inv_id(0, j.name), 1900000
    j.started(inv)
    j.startup(inv, pid, until="load")
    j.app(
        "\rLoading safetensors checkpoint shards:   0% Completed | 0/47 [00:00<?, ?it/s]\r",
        inv,
        pid + 212,
        dt=0.4,
        comm="sglang::schedul",
        cmd="sglang::scheduler_TP0",
        raw=True,
    )
    frames = [
        *SCHED_FRAMES,
        '  File "/opt/sglang/venv/lib/python3.11/site-packages/safetensors/torch.py", line 313, in load_file',
        '    with safe_open(filename, framework="pt", device=device) as f:',
    ]
    j.traceback(
        inv,
        pid + 212,
        frames,
        "safetensors_rust.SafetensorError: Error while deserializing header: MetadataIncompleteBuffer",
    )
    j.app(f"[{ts(j.at(0.3))}] {SIGQUIT_LAUNCH}", inv, pid)
    j.crashed(inv, restart=1)
    j.write()


def nccl_failure() -> None:
    j = Journal("nccl_failure", T0.replace(hour=22))
    inv, pid = inv_id(0, j.name), 1910000
    j.started(inv)
    j.startup(inv, pid, until="load")
    frames = [
        *SCHED_FRAMES[:2],
        '  File "/opt/sglang/venv/lib/python3.11/site-packages/sglang/srt/distributed/device_communicators/'
        'pynccl_wrapper.py", line 329, in NCCL_CHECK',
        '    raise RuntimeError(f"NCCL error: {error_str}")',
    ]
    j.traceback(
        inv,
        pid + 212,
        frames,
        "RuntimeError: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details)",
    )
    j.app(f"[{ts(j.at(0.3))}] {SIGQUIT_LAUNCH}", inv, pid)
    j.crashed(inv, restart=1)
    j.write()


def gpu_hardware_xid() -> None:
    j, inv, pid = served_then("gpu_hardware_xid", 23)
    j.decode(inv, pid, [282.1, 280.4])
    j.kernel_line("NVRM: Xid (PCI:0000:44:00): 79, GPU has fallen off the bus")
    j.kernel_line("NVRM: GPU 0000:44:00.0: GPU has fallen off the bus.", prio=3)
    j.traceback(inv, pid + 212, SCHED_FRAMES[:2], "RuntimeError: CUDA error: unspecified launch failure")
    j.app(f"[{ts(j.at(0.2))}] {SIGQUIT_SERVING}", inv, pid)
    j.crashed(inv, restart=1)
    for n in (1, 2):
        inv2 = inv_id(n, j.name)
        j.started(inv2, dt=10.0)
        j.app(
            "RuntimeError: nvidia-smi error: Unable to determine the device handle for GPU0000:44:00.0: Unknown Error",
            inv2,
            pid + n * 50,
            dt=3.0,
        )
        j.mgr(
            f"{UNIT}: Main process exited, code=exited, status=1/FAILURE",
            inv2,
            prio=5,
            mid="exited",
            EXIT_CODE="exited",
            EXIT_STATUS="1",
        )
        j.mgr(f"{UNIT}: Failed with result 'exit-code'.", inv2, prio=4, mid="result", UNIT_RESULT="exit-code")
        j.mgr(
            f"{UNIT}: Scheduled restart job, restart counter is at {n + 1}.",
            inv2,
            dt=10.0,
            mid="restart",
            N_RESTARTS=str(n + 1),
        )
    j.write({"nvidia_smi_gpu": []})


def segfault() -> None:
    j = Journal("segfault", T0.replace(day=10, hour=1))
    inv, pid = inv_id(0, j.name), 1920000
    j.started(inv)
    j.startup(inv, pid, until="load")
    for line in [
        "Fatal Python error: Segmentation fault",
        "",
        "Thread 0x00007fbc4bfff640 (most recent call first):",
        '  File "/usr/lib/python3.10/threading.py", line 324 in wait',
    ]:
        if line:
            j.app(line, inv, pid, dt=0.0)
    j.mgr(
        f"{UNIT}: Main process exited, code=dumped, status=11/SEGV",
        inv,
        prio=4,
        mid="exited",
        EXIT_CODE="dumped",
        EXIT_STATUS="11",
    )
    j.mgr(f"{UNIT}: Failed with result 'core-dump'.", inv, prio=4, mid="result", UNIT_RESULT="core-dump")
    j.mgr(f"{UNIT}: Scheduled restart job, restart counter is at 1.", inv, dt=10.0, mid="restart", N_RESTARTS="1")
    j.write()


def engine_exception() -> None:
    j, inv, pid = served_then("engine_exception", 2)
    for g in (61.43, 64.2):
        j.app(
            f"[{ts(j.at(2.0))} TP0] Decode batch. #running-req: 4, #token: 9071, token usage: 0.01, cuda graph: "
            f"True, gen throughput (token/s): {g:.2f}, #queue-req: 0,",
            inv,
            pid + 212,
            comm="sglang::schedul",
        )
    frames = [
        '  File "/opt/sglang/venv/lib/python3.11/site-packages/sglang/srt/managers/schedule_batch.py", '
        "line 1105, in alloc_req_slots",
        "    raise RuntimeError(",
    ]
    j.traceback(
        inv,
        pid + 212,
        frames,
        "RuntimeError: alloc_req_slots runs out of memory. Please set a smaller "
        "number for `--max-running-requests`. self.req_to_token_pool.available_size()=1, num_reqs=2,",
    )
    j.app(f"[{ts(j.at(0.2))}] {SIGQUIT_SERVING}", inv, pid)
    j.crashed(inv, restart=1)
    inv1 = inv_id(1, j.name)
    j.started(inv1, dt=10.0)
    j.startup(inv1, pid + 3000)
    j.write()


def host_oom_kill() -> None:
    j, inv, _ = served_then("host_oom_kill", 3)
    j.app(
        f"[{ts(j.at(1.0))} TP0] Decode batch, #running-req: 2, #token: 2210, token usage: 0.01, accept len: 4.80, "
        "accept rate: 0.44, cuda graph: True, gen throughput (token/s): 512.33, #queue-req: 0",
        inv,
        25315,
        comm="sglang::schedul",
    )
    j.kernel_line(
        "oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0,global_oom,"
        "task_memcg=/system.slice/sglang.service,task=python3,pid=25315,uid=0"
    )
    j.kernel_line(
        "Out of memory: Killed process 25315 (python3) total-vm:53312244kB, anon-rss:31451456kB, "
        "file-rss:74816kB, shmem-rss:12296kB, UID:0 pgtables:69068kB oom_score_adj:0",
        prio=3,
    )
    j.mgr(
        f"{UNIT}: A process of this unit has been killed by the OOM killer.",
        inv,
        prio=5,
        mid="oom",
        func="unit_check_oom",
    )
    j.mgr(
        f"{UNIT}: Main process exited, code=killed, status=9/KILL",
        inv,
        prio=4,
        mid="exited",
        EXIT_CODE="killed",
        EXIT_STATUS="9",
    )
    j.mgr(f"{UNIT}: Failed with result 'oom-kill'.", inv, prio=4, mid="result", UNIT_RESULT="oom-kill")
    j.mgr(f"{UNIT}: Scheduled restart job, restart counter is at 1.", inv, dt=10.0, mid="restart", N_RESTARTS="1")
    j.write({"systemctl_show": {"Result": "oom-kill", "NRestarts": "1"}})


def operator_action() -> None:
    j, inv, pid = served_then("operator_action", 4)
    j.decode(inv, pid, [283.0, 281.9])
    stop_t = j.at(5.0)
    j.mgr(f"Stopping {IDENT}...", inv, dt=0.1, mid="stopping", func="job_emit_start_message", JOB_TYPE="stop")
    j.app(
        f"[{ts(j.at(0.02))}] SIGTERM received. signum=None frame=None. Draining requests and shutting down...", inv, pid
    )
    j.mgr(
        f"{UNIT}: Main process exited, code=killed, status=9/KILL",
        inv,
        dt=1.2,
        prio=4,
        mid="exited",
        EXIT_CODE="killed",
        EXIT_STATUS="9",
    )
    j.mgr(f"{UNIT}: Failed with result 'signal'.", inv, prio=4, mid="result", UNIT_RESULT="signal")
    j.mgr(f"Stopped {IDENT}.", inv, mid="stopped", func="job_emit_done_message", JOB_TYPE="stop", JOB_RESULT="done")
    j.mgr(f"{UNIT}: Consumed 12min 3.004s CPU time.", inv, mid="consumed")
    j.write({"actions": [{"at": iso(stop_t), "who": "dana", "action": "stop", "detail": "maintenance window"}]})


def healthy() -> None:
    j, inv, pid = served_then("healthy", 5, steps=5)
    j.decode(inv, pid, [281.5, 282.9, 283.3, 280.7], accept=4.93, rate=0.82)
    j.lines.insert(3, "-- cursor: s=8c1d6a2fbb1c4f3c9d36a4b1e2f0a9c1;i=3a2f10;b=5f0e0c8e6e1a4c9b8d7e6f5a4b3c2d1e")
    j.write()


def unknown_journald_suppressed() -> None:
    j = Journal("unknown_journald_suppressed", T0.replace(hour=6))
    inv, pid = inv_id(0, j.name), 1930000
    j.started(inv)
    j.startup(inv, pid, until="load")
    d = j._base(j.at(30.0))
    d.update(
        {
            "PRIORITY": "6",
            "SYSLOG_FACILITY": "3",
            "SYSLOG_IDENTIFIER": "systemd-journald",
            "_PID": "312",
            "_COMM": "systemd-journal",
            "_SYSTEMD_UNIT": "systemd-journald.service",
            "_TRANSPORT": "driver",
            "MESSAGE_ID": "a596d6fe7bfa4994828e72309e95d61e",
            "N_DROPPED": "48213",
            "OBJECT_SYSTEMD_UNIT": UNIT,
            "OBJECT_PID": str(pid + 212),
            "MESSAGE": f"Suppressed 48213 messages from {UNIT}",
        }
    )
    import json

    j.lines.append(json.dumps(d, separators=(",", ":")))
    j.mgr(
        f"{UNIT}: Main process exited, code=exited, status=1/FAILURE",
        inv,
        dt=4.0,
        prio=5,
        mid="exited",
        EXIT_CODE="exited",
        EXIT_STATUS="1",
    )
    j.mgr(f"{UNIT}: Failed with result 'exit-code'.", inv, prio=4, mid="result", UNIT_RESULT="exit-code")
    j.mgr(f"{UNIT}: Scheduled restart job, restart counter is at 1.", inv, dt=10.0, mid="restart", N_RESTARTS="1")
    j.write()


CASES = [
    kv_cache_oom_steps10_loop,
    stop_timeout_sigkill_own_stop,
    cuda_oom_runtime,
    cuda_graph_capture_oom,
    gpu_memory_held_by_stale_process,
    port_in_use,
    bad_argument,
    model_load_failure,
    nccl_failure,
    gpu_hardware_xid,
    segfault,
    engine_exception,
    host_oom_kill,
    operator_action,
    healthy,
    unknown_journald_suppressed,
]

if __name__ == "__main__":
    for case in CASES:
        case()
        print("wrote", case.__name__)
