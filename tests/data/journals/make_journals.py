"""Journal-writing helpers for make_cases.py, which builds the recorded journals (deterministic).

Each file is what `journalctl -u sglang.service -o json` prints on a systemd 252 host (Debian bookworm):
one compact JSON object per line, all values strings, real cursor shape, `_SYSTEMD_INVOCATION_ID` on
the service's lines, `UNIT`/`INVOCATION_ID`/`MESSAGE_ID` on PID 1's messages. The application lines
that carry the failure are quoted from public bug reports; README.md gives the source of each.

    .venv/bin/python tests/data/journals/make_cases.py
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from pathlib import Path

HERE = Path(__file__).parent
UNIT = "sglang.service"
DESC = "SGLang Qwen3.5-122B-A10B server"
IDENT = f"{UNIT} - {DESC}"
BOOT = "5f0e0c8e6e1a4c9b8d7e6f5a4b3c2d1e"
MACHINE = "0123456789abcdef0123456789abcdef"
SEQID = "8c1d6a2fbb1c4f3c9d36a4b1e2f0a9c1"
HOST = "gpu-2"
BOOT_US = int(datetime(2026, 3, 1, 6, 0, tzinfo=UTC).timestamp() * 1e6)
EXEC = (
    "/opt/sglang/venv/bin/python3 -m sglang.launch_server --model-path /models/Qwen3.5-122B-A10B --tp 4 "
    "--host 0.0.0.0 --port 30000 --speculative-algorithm EAGLE --speculative-num-steps {steps} "
    "--speculative-eagle-topk 1 --mem-fraction-static 0.86"
)
MSG_IDS = {
    "started": "39f53479d3a045ac8e11786248231fbf",
    "stopping": "de5b426a63be47a7b6ac3eaac82e2f6f",
    "stopped": "9d1aaa27d60140bd96365438aad20286",
    "failed_to_start": "be02cf6855d2428ba40df7e9d022f03d",
    "exited": "98e322203f7a4ed290d09fe03c09fe15",
    "result": "d9b373ed55a64feb8242e02dbe79a49c",
    "success": "7ad2d189f7e94e70a38c781354912448",
    "consumed": "ae8f7b866b0347b9af31fe1c80b127c0",
    "restart": "5eb03494b6584870a536b337290809b3",
    "oom": "fe6faa94e7774663a0da52717891d8ef",
    "suppressed": "a596d6fe7bfa4994828e72309e95d61e",
}


def ts(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%d %H:%M:%S")


def inv_id(n: int, name: str) -> str:
    return hashlib.md5(f"{name}-{n}".encode()).hexdigest()


class Journal:
    def __init__(self, name: str, t0: datetime, steps: int = 10) -> None:
        self.name = name
        self.t = t0.timestamp()
        self.seq = 0x3A2F10 + len(name) * 4096
        self.lines: list[str] = []
        self.steps = steps
        self.kernel: list[dict[str, str]] = []

    def at(self, dt: float) -> float:
        self.t += dt
        return self.t

    def _base(self, t: float) -> dict[str, str]:
        self.seq += 1
        rt = int(t * 1e6)
        mono = rt - BOOT_US
        x = hashlib.sha1(f"{self.name}{self.seq}".encode()).hexdigest()[:16]
        return {
            "__CURSOR": f"s={SEQID};i={self.seq:x};b={BOOT};m={mono:x};t={rt:x};x={x}",
            "__REALTIME_TIMESTAMP": str(rt),
            "__MONOTONIC_TIMESTAMP": str(mono),
            "_BOOT_ID": BOOT,
            "_MACHINE_ID": MACHINE,
            "_HOSTNAME": HOST,
        }

    def app(
        self,
        msg: str | None,
        inv: str,
        pid: int,
        *,
        dt: float = 0.01,
        comm: str = "python3",
        cmd: str | None = None,
        raw: bool = False,
    ) -> None:
        t = self.at(dt)
        d = self._base(t)
        d.update(
            {
                "PRIORITY": "6",
                "SYSLOG_IDENTIFIER": "python3",
                "_PID": str(pid),
                "_UID": "998",
                "_GID": "998",
                "_COMM": comm,
                "_EXE": "/usr/bin/python3.11",
                "_CMDLINE": cmd or EXEC.format(steps=self.steps),
                "_CAP_EFFECTIVE": "0",
                "_SYSTEMD_CGROUP": f"/system.slice/{UNIT}",
                "_SYSTEMD_UNIT": UNIT,
                "_SYSTEMD_SLICE": "system.slice",
                "_SYSTEMD_INVOCATION_ID": inv,
                "_TRANSPORT": "stdout",
                "_STREAM_ID": hashlib.md5(inv.encode()).hexdigest(),
            }
        )
        if raw and msg is not None:
            d["MESSAGE"] = list(msg.encode())  # type: ignore[assignment]
        else:
            d["MESSAGE"] = msg  # type: ignore[assignment]
        self.lines.append(json.dumps(d, separators=(",", ":"), ensure_ascii=False))

    def mgr(
        self,
        msg: str,
        inv: str,
        *,
        dt: float = 0.01,
        prio: int = 6,
        mid: str | None = None,
        func: str = "unit_log_process_exit",
        **extra: str,
    ) -> None:
        t = self.at(dt)
        d = self._base(t)
        d.update(
            {
                "PRIORITY": str(prio),
                "SYSLOG_FACILITY": "3",
                "SYSLOG_IDENTIFIER": "systemd",
                "_PID": "1",
                "_UID": "0",
                "_GID": "0",
                "_COMM": "systemd",
                "_EXE": "/usr/lib/systemd/systemd",
                "_CMDLINE": "/sbin/init",
                "_CAP_EFFECTIVE": "1ffffffffff",
                "_SYSTEMD_CGROUP": "/init.scope",
                "_SYSTEMD_UNIT": "init.scope",
                "_SYSTEMD_SLICE": "-.slice",
                "_TRANSPORT": "journal",
                "TID": "1",
                "CODE_FILE": "src/core/unit.c",
                "CODE_FUNC": func,
                "UNIT": UNIT,
                "INVOCATION_ID": inv,
                "MESSAGE": msg,
                "_SOURCE_REALTIME_TIMESTAMP": str(int(t * 1e6) - 35),
            }
        )
        if mid:
            d["MESSAGE_ID"] = MSG_IDS[mid]
        d.update(extra)
        self.lines.append(json.dumps(d, separators=(",", ":")))

    # --- systemd sequences (systemd 252) ---
    def started(self, inv: str, dt: float = 0.2) -> None:
        self.mgr(
            f"Started {IDENT}.",
            inv,
            dt=dt,
            mid="started",
            func="job_emit_done_message",
            JOB_TYPE="start",
            JOB_RESULT="done",
            JOB_ID=str(1000 + self.seq % 900),
        )

    def crashed(
        self,
        inv: str,
        *,
        code: str = "killed",
        status: str = "9/KILL",
        result: str = "signal",
        restart: int | None = None,
        cpu: str = "1min 41.212s",
    ) -> None:
        prio = 5 if code == "exited" else 4
        self.mgr(
            f"{UNIT}: Main process exited, code={code}, status={status}",
            inv,
            prio=prio,
            mid="exited",
            EXIT_CODE=code,
            EXIT_STATUS=status.split("/")[0],
            COMMAND="ExecStart",
        )
        self.mgr(
            f"{UNIT}: Failed with result '{result}'.",
            inv,
            prio=4,
            mid="result",
            func="unit_log_failure",
            UNIT_RESULT=result,
        )
        self.mgr(
            f"{UNIT}: Consumed {cpu} CPU time.",
            inv,
            mid="consumed",
            func="unit_log_resources",
            CPU_USAGE_NSEC="101212000000",
        )
        if restart is not None:
            self.mgr(
                f"{UNIT}: Scheduled restart job, restart counter is at {restart}.",
                inv,
                dt=5.0,
                mid="restart",
                func="service_enter_restart",
                N_RESTARTS=str(restart),
            )
            self.mgr(
                f"Stopped {IDENT}.",
                inv,
                mid="stopped",
                func="job_emit_done_message",
                JOB_TYPE="restart",
                JOB_RESULT="done",
            )

    def startup(self, inv: str, pid: int, *, until: str = "ready", load_s: float = 95.0) -> None:
        """SGLang 0.5.9 start-up lines (FORMATS a.3), up to `until`."""
        a = self.app
        a(
            "speculative_num_draft_tokens is adjusted to speculative_num_steps + 1 when speculative_eagle_topk == 1",
            inv,
            pid,
            dt=4.1,
        )
        a(
            "Max running requests is reset to 48 for speculative decoding. You can override this by explicitly "
            "setting --max-running-requests.",
            inv,
            pid,
        )
        a(None, inv, pid, dt=0.3)  # server_args=ServerArgs(...) is ~10 KB: journalctl -o json prints null
        sched = pid + 212
        a(
            f"[{ts(self.at(3.0))} TP0] Init torch distributed begin.",
            inv,
            sched,
            comm="sglang::schedul",
            cmd="sglang::scheduler_TP0",
        )
        a(
            f"[{ts(self.at(2.2))} TP0] Init torch distributed ends. elapsed=2.21 s, mem usage=0.86 GB",
            inv,
            sched,
            comm="sglang::schedul",
            cmd="sglang::scheduler_TP0",
        )
        a(
            f"[{ts(self.t)} TP0] Load weight begin. avail mem=94.12 GB",
            inv,
            sched,
            comm="sglang::schedul",
            cmd="sglang::scheduler_TP0",
        )
        if until == "load":
            return
        a(
            "\rLoading safetensors checkpoint shards:  45% Completed | 21/47 [00:41<00:51,  1.98s/it]"
            "\rLoading safetensors checkpoint shards: 100% Completed | 47/47 [01:31<00:00,  1.95s/it]\r",
            inv,
            sched,
            dt=load_s * 0.95,
            comm="sglang::schedul",
            cmd="sglang::scheduler_TP0",
            raw=True,
        )
        a(
            f"[{ts(self.at(load_s * 0.05))} TP0] Load weight end. elapsed={load_s:.2f} s, type=Qwen3_5MoeForCausalLM, "
            "dtype=torch.bfloat16, avail mem=33.48 GB, mem usage=60.64 GB.",
            inv,
            sched,
            comm="sglang::schedul",
            cmd="sglang::scheduler_TP0",
        )
        if until == "weights":
            return
        a(
            f"[{ts(self.at(1.4))} TP0] KV Cache is allocated. #tokens: 295931, K size: 10.16 GB, V size: 10.16 GB",
            inv,
            sched,
            comm="sglang::schedul",
            cmd="sglang::scheduler_TP0",
        )
        a(
            f"[{ts(self.t)} TP0] Memory pool end. avail mem=12.71 GB",
            inv,
            sched,
            comm="sglang::schedul",
            cmd="sglang::scheduler_TP0",
        )
        a(
            f"[{ts(self.at(0.3))} TP0] Capture cuda graph begin. This can take up to several minutes. "
            "avail mem=12.58 GB",
            inv,
            sched,
            comm="sglang::schedul",
            cmd="sglang::scheduler_TP0",
        )
        if until == "capture":
            return
        a(
            f"[{ts(self.at(14.0))} TP0] Capture cuda graph end. Time elapsed: 14.02 s. mem usage=2.91 GB. "
            "avail mem=9.67 GB.",
            inv,
            sched,
            comm="sglang::schedul",
            cmd="sglang::scheduler_TP0",
        )
        a(
            f"[{ts(self.at(0.4))} TP0] max_total_num_tokens=295931, chunked_prefill_size=8192, "
            "max_prefill_tokens=16384, max_running_requests=17, context_len=262144, available_gpu_mem=9.61 GB",
            inv,
            sched,
            comm="sglang::schedul",
            cmd="sglang::scheduler_TP0",
        )
        a(f"INFO:     Started server process [{pid}]", inv, pid, dt=1.0)
        a("INFO:     Waiting for application startup.", inv, pid)
        a("INFO:     Application startup complete.", inv, pid)
        if until == "uvicorn":
            return
        a("INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)", inv, pid)
        a(f'[{ts(self.at(1.0))}] INFO:     127.0.0.1:48955 - "GET /model_info HTTP/1.1" 200 OK', inv, pid)
        a(
            f"[{ts(self.t)} TP0] Prefill batch, #new-seq: 1, #new-token: 6, #cached-token: 0, token usage: 0.00, "
            "#running-req: 0, #queue-req: 0,",
            inv,
            sched,
            comm="sglang::schedul",
            cmd="sglang::scheduler_TP0",
        )
        a(f'[{ts(self.at(0.8))}] INFO:     127.0.0.1:48969 - "POST /generate HTTP/1.1" 200 OK', inv, pid)
        a(f"[{ts(self.at(0.1))}] The server is fired up and ready to roll!", inv, pid)

    def decode(
        self,
        inv: str,
        pid: int,
        tputs: list[float],
        *,
        accept: float | None = 5.50,
        rate: float = 0.50,
        running: int = 1,
        dt: float = 1.4,
    ) -> None:
        for i, g in enumerate(tputs):
            spec = f"accept len: {accept:.2f}, accept rate: {rate:.2f}, " if accept is not None else ""
            self.app(
                f"[{ts(self.at(dt))} TP0] Decode batch, #running-req: {running}, #token: {1200 + 37 * i}, "
                f"token usage: 0.00, {spec}cuda graph: True, gen throughput (token/s): {g:.2f}, "
                "#queue-req: 0",
                inv,
                pid + 212,
                comm="sglang::schedul",
                cmd="sglang::scheduler_TP0",
            )

    def traceback(
        self,
        inv: str,
        pid: int,
        frames: list[str],
        last: str,
        *,
        head: str = "Scheduler hit an exception",
        rank: str = "TP0",
    ) -> None:
        comm, cmd = ("sglang::schedul", f"sglang::scheduler_{rank}") if rank else ("python3", None)
        self.app(
            f"[{ts(self.at(0.5))}{' ' + rank if rank else ''}] {head}: Traceback (most recent call last):",
            inv,
            pid,
            comm=comm,
            cmd=cmd,
        )
        for f in frames:
            self.app(f, inv, pid, dt=0.0, comm=comm, cmd=cmd)
        self.app(last, inv, pid, dt=0.0, comm=comm, cmd=cmd)

    def kernel_line(self, msg: str, prio: int = 4) -> None:
        t = self.at(0.001)
        d = self._base(t)
        d.update(
            {
                "PRIORITY": str(prio),
                "SYSLOG_FACILITY": "0",
                "SYSLOG_IDENTIFIER": "kernel",
                "_TRANSPORT": "kernel",
                "MESSAGE": msg,
                "_SOURCE_MONOTONIC_TIMESTAMP": str(int(t * 1e6) - BOOT_US),
            }
        )
        self.kernel.append(d)

    def write(self, extra: dict[str, object] | None = None) -> None:
        (HERE / f"{self.name}.jsonl").write_text("\n".join(self.lines) + "\n")
        if extra is not None or self.kernel:
            data = dict(extra or {})
            if self.kernel:
                data["kernel_journal"] = self.kernel
            (HERE / f"{self.name}.extra.json").write_text(json.dumps(data, indent=1) + "\n")


def iso(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).isoformat().replace("+00:00", "Z")


def unit_file(steps: int) -> str:
    return (
        f"[Unit]\nDescription={DESC}\nAfter=network-online.target\n\n[Service]\nType=simple\nUser=sglang\n"
        f"Environment=PYTHONUNBUFFERED=1\nExecStart={EXEC.format(steps=steps)}\nRestart=always\nRestartSec=10\n"
        "TimeoutStopSec=60\n\n[Install]\nWantedBy=multi-user.target\n"
    )
