"""Journal-writing kit for incident_build.py: one `Case` per incident folder (deterministic, no clock, no randomness).

A `Case` writes what `journalctl -u UNIT -o json` prints on a systemd 252 host (FORMATS c.1-c.4): one
compact JSON object per line, every value a string, cursors `s=;i=;b=;m=;t=;x=`, `_SYSTEMD_INVOCATION_ID`
on the service's lines, `UNIT`/`INVOCATION_ID`/`MESSAGE_ID` on PID 1's lines, each writing process with
its own `_PID`/`_COMM`/`_CMDLINE` (SGLang `sglang::schedul`, vLLM `VLLM::EngineCor`...), `MESSAGE` as a
byte array when it holds ANSI colour or a non-trailing `\\r` (vLLM >= 0.10 prefixes every line with a
coloured `(APIServer pid=N)` tag, FORMATS b.0) and `null` for lines >= 4096 bytes. The error lines are
passed in by incident_build.py, quoted from the public report named in each case's expected.json.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
MACHINE = "0123456789abcdef0123456789abcdef"
HOST = "gpu-7"
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
# placeholders for the writing time of a line: SGLang `%Y-%m-%d %H:%M:%S`, vLLM `%m-%d %H:%M:%S`, glog `MDD HH:MM:SS`
STAMP_S, STAMP_V, STAMP_G = "\x00sglang-time\x00", "\x00vllm-time\x00", "\x00glog-time\x00"
SIGNALS = {"9": "KILL", "15": "TERM", "11": "SEGV", "6": "ABRT"}
EXIT_NAMES = {"1": "FAILURE", "2": "INVALIDARGUMENT", "3": "NOTIMPLEMENTED"}


def _h(text: str, n: int = 32) -> str:
    return hashlib.sha1(text.encode()).hexdigest()[:n]


@dataclass
class Inv:
    """One invocation of the unit: its id and the pids of its processes."""

    id: str
    main: int
    pids: dict[str, int] = field(default_factory=dict)
    start_t: float = 0.0


class Case:
    """One incident: the unit journal, the kernel lines and the side evidence, written to `<id>/`."""

    def __init__(self, cid: str, engine: str, version: str, *, day: int = 1, hour: int = 9,
                 v1: bool = True, model: str = "/models/Qwen2.5-32B-Instruct", tp: int = 1) -> None:
        self.id = cid
        self.engine = engine
        self.version = version
        self.v1 = v1
        self.model = model
        self.tp = tp
        self.unit = {"sglang": "sglang.service", "llamacpp": "llama-server.service"}.get(engine, "vllm.service")
        desc = {"sglang": "SGLang server", "llamacpp": "llama.cpp server"}.get(engine, "vLLM OpenAI server")
        self.ident = f"{self.unit} - {desc}"
        self.t = datetime(2025, 6, day, hour, 0, tzinfo=UTC).timestamp()
        self.boot = _h("boot" + cid)
        self.boot_us = int(self.t * 1e6) - 86_400_000_000 - int(_h(cid, 6), 16)
        self.seqid = _h("seq" + cid)
        self.seq = 0x1000 + int(_h(cid, 4), 16)
        self.lines: list[dict[str, Any]] = []
        self.kernel: list[dict[str, Any]] = []
        self.extra: dict[str, Any] = {}
        self.n_inv = 0
        self.pid_base = 20000 + int(_h(cid, 5), 16) % 700000
        self.restarts = 0
        self.expected: dict[str, Any] = {}

    # --- clock and shape ------------------------------------------------------------------------
    def at(self, dt: float) -> float:
        self.t += dt
        return self.t

    def _base(self, t: float) -> dict[str, Any]:
        self.seq += 1
        rt = int(t * 1e6)
        mono = rt - self.boot_us
        x = _h(f"{self.id}{self.seq}", 16)
        return {
            "__CURSOR": f"s={self.seqid};i={self.seq:x};b={self.boot};m={mono:x};t={rt:x};x={x}",
            "__REALTIME_TIMESTAMP": str(rt),
            "__MONOTONIC_TIMESTAMP": str(mono),
            "_BOOT_ID": self.boot,
            "_MACHINE_ID": MACHINE,
            "_HOSTNAME": HOST,
        }

    def stamp(self) -> str:
        """SGLang's `[%Y-%m-%d %H:%M:%S]` time."""
        return datetime.fromtimestamp(self.t, UTC).strftime("%Y-%m-%d %H:%M:%S")

    def vstamp(self) -> str:
        """vLLM's `%m-%d %H:%M:%S` time."""
        return datetime.fromtimestamp(self.t, UTC).strftime("%m-%d %H:%M:%S")

    @property
    def vtuple(self) -> tuple[int, int]:
        major, minor = (int(x) for x in self.version.split(".")[:2])
        return major, minor

    @property
    def tagged(self) -> bool:
        """vLLM >= 0.10 prefixes every stdout/stderr line with its process tag (FORMATS b.0)."""
        return self.engine == "vllm" and self.vtuple >= (0, 10)

    @property
    def ansi(self) -> bool:
        """0.10/0.11 colour the tag even without a TTY (byte-array MESSAGE); 0.33 only on a TTY.

        Where between 0.11 and 0.33 the colour became TTY-only was not checked; the corpus assumes 0.20.
        """
        return self.tagged and self.vtuple < (0, 20)

    # --- processes --------------------------------------------------------------------------------
    def _proc(self, inv: Inv, role: str) -> tuple[int, str, str]:
        main = inv.main
        if self.engine == "llamacpp":  # one process (its threads log under the same _PID)
            cmd = f"/usr/local/bin/llama-server -m {self.model} --host 0.0.0.0 --port 8080"
            table = {r: (main, "llama-server", cmd) for r in ("main", "engine", "worker", "sched")}
        elif self.engine == "sglang":
            cmd = (f"/opt/sglang/bin/python3 -m sglang.launch_server --model-path {self.model} --tp {self.tp} "
                   "--host 0.0.0.0 --port 30000")
            table = {
                "main": (main, "python3", cmd),
                "sched": (main + 212, "sglang::schedul", "sglang::scheduler" + ("_TP0" if self.tp > 1 else "")),
                "sched1": (main + 213, "sglang::schedul", "sglang::scheduler_TP1"),
                "detok": (main + 209, "sglang::detoken", "sglang::detokenizer"),
            }
        else:
            cmd = (f"/opt/vllm/bin/python3 /opt/vllm/bin/vllm serve {self.model} --tensor-parallel-size {self.tp} "
                   "--port 8000")
            table = {
                "main": (main, "vllm", cmd),
                "engine": (main + 131, "VLLM::EngineCor", "VLLM::EngineCore"),
                "worker": (main + 140, "VLLM::Worker_TP", "VLLM::Worker_TP0"),
                "worker1": (main + 141, "VLLM::Worker_TP", "VLLM::Worker_TP1"),
            }
            if self.vtuple < (0, 10):  # before setproctitle: spawned interpreters keep python's name
                spawn = ("/opt/vllm/bin/python3 -c from multiprocessing.spawn import spawn_main; "
                         "spawn_main(tracker_fd=5, pipe_handle=7) --multiprocessing-fork")
                table["engine"] = (main + 131, "python3", spawn)
                table["worker"] = (main + 140, "python3", spawn)
                table["worker1"] = (main + 141, "python3", spawn)
            if not self.v1:  # V0: MQLLMEngine process and multiproc workers keep python's name
                table["engine"] = (main + 131, "python3", cmd)
                table["worker"] = (main + 140, "python3", cmd)
                table["worker1"] = (main + 141, "python3", cmd)
        pid, comm, cmdline = table[role]
        inv.pids[role] = pid
        return pid, comm, cmdline

    def _tag(self, inv: Inv, role: str) -> str:
        pid = self._proc(inv, role)[0]
        name = {"main": "APIServer", "engine": "EngineCore_DP0", "worker": "Worker_TP0",
                "worker1": "Worker_TP1"}[role]
        if self.vtuple >= (0, 20) and role == "engine":
            name = "EngineCore"
        return f"\x1b[1;36m({name} pid={pid})\x1b[0;0m " if self.ansi else f"({name} pid={pid}) "

    def app(self, inv: Inv, msg: str | None, role: str = "main", *, dt: float = 0.02, tag: bool = True) -> None:
        """One stdout/stderr line of the unit, as journald stores it."""
        t = self.at(dt)
        pid, comm, cmdline = self._proc(inv, role)
        if msg is not None:
            now = datetime.fromtimestamp(self.t, UTC)
            glog = f"{now.month}{now.day:02d} {now:%H:%M:%S}"  # c10's glog prefix: month unpadded (`W508`, `E1021`)
            msg = msg.replace(STAMP_S, self.stamp()).replace(STAMP_V, self.vstamp()).replace(STAMP_G, glog)
        d = self._base(t)
        d.update({
            "PRIORITY": "6",
            "SYSLOG_IDENTIFIER": {"sglang": "python3", "llamacpp": "llama-server"}.get(self.engine, "vllm"),
            "_PID": str(pid), "_UID": "998", "_GID": "998", "_COMM": comm,
            "_EXE": "/usr/local/bin/llama-server" if self.engine == "llamacpp" else "/usr/bin/python3.12", "_CMDLINE": cmdline, "_CAP_EFFECTIVE": "0",
            "_SYSTEMD_CGROUP": f"/system.slice/{self.unit}", "_SYSTEMD_UNIT": self.unit,
            "_SYSTEMD_SLICE": "system.slice", "_SYSTEMD_INVOCATION_ID": inv.id,
            "_TRANSPORT": "stdout", "_STREAM_ID": _h("stream" + inv.id),
        })
        if msg is not None and tag and self.tagged and role in ("main", "engine", "worker", "worker1"):
            msg = self._tag(inv, role) + msg
        elif (msg and tag and self.engine == "vllm" and role in ("worker", "worker1")
              and not msg.startswith(("(", "[rank"))):  # before 0.10 only multiproc workers tag their lines
            rank = 1 if role == "worker1" else 0
            msg = (f"(VllmWorker rank={rank} pid={pid}) " if self.v1 else f"(VllmWorkerProcess pid={pid}) ") + msg
        if msg is None or len(msg.encode()) + 8 >= 4096:
            d["MESSAGE"] = None
        elif any(ord(ch) < 32 and ch not in "\n\t" for ch in msg):
            d["MESSAGE"] = list(msg.encode())
        else:
            d["MESSAGE"] = msg
        self.lines.append(d)

    def many(self, inv: Inv, msgs: list[str], role: str = "main", *, dt: float = 0.0) -> None:
        for m in msgs:
            self.app(inv, m, role, dt=dt)

    # --- engine log prefixes ----------------------------------------------------------------------
    def slog(self, msg: str, rank: str | None = "TP0") -> str:
        """SGLang's `[time RANK] msg` (rank None: main process); the time is the line's, filled in by `app`."""
        return f"[{STAMP_S}{' ' + rank if rank and self.tp > 1 else ''}] {msg}"

    def vlog(self, level: str, where: str, msg: str) -> str:
        """vLLM's `LEVEL mm-dd HH:MM:SS [file.py:N] msg` (before 0.8: `file.py:N]`); the time is filled in by `app`."""
        if self.vtuple < (0, 8):
            return f"{level} {STAMP_V} {where}] {msg}"
        return f"{level} {STAMP_V} [{where}] {msg}"

    # --- systemd (PID 1, systemd 252) -------------------------------------------------------------
    def mgr(self, msg: str, inv: Inv, *, dt: float = 0.01, prio: int = 6, mid: str | None = None,
            func: str = "unit_log_process_exit", **extra: str) -> None:
        t = self.at(dt)
        d = self._base(t)
        d.update({
            "PRIORITY": str(prio), "SYSLOG_FACILITY": "3", "SYSLOG_IDENTIFIER": "systemd",
            "_PID": "1", "_UID": "0", "_GID": "0", "_COMM": "systemd", "_EXE": "/usr/lib/systemd/systemd",
            "_CMDLINE": "/sbin/init", "_CAP_EFFECTIVE": "1ffffffffff", "_SYSTEMD_CGROUP": "/init.scope",
            "_SYSTEMD_UNIT": "init.scope", "_SYSTEMD_SLICE": "-.slice", "_TRANSPORT": "journal", "TID": "1",
            "CODE_FILE": "src/core/unit.c", "CODE_FUNC": func, "UNIT": self.unit, "INVOCATION_ID": inv.id,
            "MESSAGE": msg, "_SOURCE_REALTIME_TIMESTAMP": str(int(t * 1e6) - 41),
        })
        if mid:
            d["MESSAGE_ID"] = MSG_IDS[mid]
        d.update(extra)
        self.lines.append(d)

    def start(self, *, dt: float = 0.3, manual: bool = False) -> Inv:
        """`Started <ident>.` for a new invocation."""
        self.n_inv += 1
        inv = Inv(_h(f"inv-{self.id}-{self.n_inv}"), self.pid_base + 1117 * self.n_inv)
        if manual:
            self.restarts = 0
        self.mgr(f"Started {self.ident}.", inv, dt=dt, mid="started", func="job_emit_done_message",
                 JOB_TYPE="start", JOB_RESULT="done", JOB_ID=str(900 + self.seq % 800))
        inv.start_t = self.t
        return inv

    def exit(self, inv: Inv, code: str, status: str, *, restart: bool = False, cpu: str = "2min 3.411s",
             dt: float = 0.4) -> None:
        """The main process ended badly: exited/killed/dumped, `Failed with result`, `Consumed`."""
        num = status
        name = (SIGNALS if code != "exited" else EXIT_NAMES).get(num, "")
        result = {"exited": "exit-code", "killed": "signal", "dumped": "core-dump"}[code]
        self.mgr(f"{self.unit}: Main process exited, code={code}, status={num}/{name}", inv, dt=dt,
                 prio=5 if code == "exited" else 4, mid="exited", EXIT_CODE=code, EXIT_STATUS=num,
                 COMMAND="ExecStart")
        self.mgr(f"{self.unit}: Failed with result '{result}'.", inv, prio=4, mid="result",
                 func="unit_log_failure", UNIT_RESULT=result)
        self.consumed(inv, cpu)
        if restart:
            self.auto_restart(inv)

    def consumed(self, inv: Inv, cpu: str = "2min 3.411s") -> None:
        self.mgr(f"{self.unit}: Consumed {cpu} CPU time.", inv, mid="consumed", func="unit_log_resources",
                 CPU_USAGE_NSEC="123411000000")

    def clean_exit(self, inv: Inv, *, restart: bool = False, dt: float = 0.3) -> None:
        """Exit status 0 (systemd logs no `Main process exited` line), `Deactivated successfully.`"""
        self.mgr(f"{self.unit}: Deactivated successfully.", inv, dt=dt, mid="success", func="unit_log_success")
        self.consumed(inv)
        if restart:
            self.auto_restart(inv)

    def auto_restart(self, inv: Inv, delay: float = 10.0) -> None:
        self.restarts += 1
        self.mgr(f"{self.unit}: Scheduled restart job, restart counter is at {self.restarts}.", inv, dt=delay,
                 mid="restart", func="service_enter_restart", N_RESTARTS=str(self.restarts))
        self.mgr(f"Stopped {self.ident}.", inv, mid="stopped", func="job_emit_done_message",
                 JOB_TYPE="restart", JOB_RESULT="done")

    def stopping(self, inv: Inv, job: str = "stop", dt: float = 0.5) -> float:
        self.mgr(f"Stopping {self.ident}...", inv, dt=dt, mid="stopping", func="job_emit_start_message",
                 JOB_TYPE=job, JOB_ID=str(900 + self.seq % 800))
        return self.t

    def stopped(self, inv: Inv, job: str = "stop") -> None:
        self.mgr(f"Stopped {self.ident}.", inv, mid="stopped", func="job_emit_done_message", JOB_TYPE=job,
                 JOB_RESULT="done")

    def stop_timeout(self, inv: Inv, roles: list[str], *, after: float = 90.0, job: str = "stop") -> None:
        """`State 'stop-sigterm' timed out. Killing.` → SIGKILL per process → `Failed with result 'timeout'`."""
        self.mgr(f"{self.unit}: State 'stop-sigterm' timed out. Killing.", inv, dt=after, prio=4,
                 func="service_dispatch_timer")
        for role in roles:
            pid, comm, _ = self._proc(inv, role)
            self.mgr(f"{self.unit}: Killing process {pid} ({comm}) with signal SIGKILL.", inv, prio=5,
                     func="log_kill")
        self.mgr(f"{self.unit}: Main process exited, code=killed, status=9/KILL", inv, prio=4, mid="exited",
                 EXIT_CODE="killed", EXIT_STATUS="9", COMMAND="ExecStart")
        self.mgr(f"{self.unit}: Failed with result 'timeout'.", inv, prio=4, mid="result",
                 func="unit_log_failure", UNIT_RESULT="timeout")
        self.stopped(inv, job)
        self.consumed(inv, "41min 2.101s")

    def start_limit(self, inv: Inv, result: str = "exit-code") -> None:
        self.mgr(f"{self.unit}: Start request repeated too quickly.", inv, prio=4, func="unit_test_start_limit")
        self.mgr(f"{self.unit}: Failed with result '{result}'.", inv, prio=4, mid="result",
                 func="unit_log_failure", UNIT_RESULT=result)
        self.mgr(f"Failed to start {self.ident}.", inv, prio=3, mid="failed_to_start",
                 func="job_emit_done_message", JOB_TYPE="start", JOB_RESULT="failed")

    def oom_killed(self, inv: Inv) -> None:
        self.mgr(f"{self.unit}: A process of this unit has been killed by the OOM killer.", inv, prio=5,
                 mid="oom", func="unit_check_oom")

    def leftover(self, inv: Inv, pid: int, comm: str) -> None:
        self.mgr(f"{self.unit}: Found left-over process {pid} ({comm}) in control group while starting unit. "
                 "Ignoring.\nThis usually indicates unclean termination of a previous run, or service "
                 "implementation deficiencies.", inv, prio=4, func="unit_log_leftover_process_start")

    def remains(self, inv: Inv, pid: int, comm: str) -> None:
        self.mgr(f"{self.unit}: Unit process {pid} ({comm}) remains running after unit stopped.", inv,
                 func="unit_log_leftover_process_stop")

    def suppressed(self, inv: Inv, n: int, role: str = "main", dt: float = 1.0) -> None:
        """journald's own `Suppressed N messages from <unit>` (matched by OBJECT_SYSTEMD_UNIT)."""
        d = self._base(self.at(dt))
        d.update({
            "PRIORITY": "6", "SYSLOG_FACILITY": "3", "SYSLOG_IDENTIFIER": "systemd-journald", "_PID": "312",
            "_UID": "0", "_GID": "0", "_COMM": "systemd-journal", "_SYSTEMD_UNIT": "systemd-journald.service",
            "_TRANSPORT": "driver", "MESSAGE_ID": MSG_IDS["suppressed"], "N_DROPPED": str(n),
            "OBJECT_SYSTEMD_UNIT": self.unit, "OBJECT_PID": str(self._proc(inv, role)[0]),
            "MESSAGE": f"Suppressed {n} messages from {self.unit}",
        })
        self.lines.append(d)

    def kernel_line(self, msg: str, prio: int = 4, dt: float = 0.001) -> None:
        """A `journalctl -k -o json` line, kept in the side evidence (`kernel_journal`)."""
        t = self.at(dt)
        d = self._base(t)
        d.update({
            "PRIORITY": str(prio), "SYSLOG_FACILITY": "0", "SYSLOG_IDENTIFIER": "kernel",
            "_TRANSPORT": "kernel", "MESSAGE": msg, "_SOURCE_MONOTONIC_TIMESTAMP": str(int(t * 1e6) - self.boot_us),
        })
        self.kernel.append(d)

    # --- output ------------------------------------------------------------------------------------
    def iso(self, t: float | None = None) -> str:
        return datetime.fromtimestamp(self.t if t is None else t, UTC).isoformat().replace("+00:00", "Z")

    def write(self, root: Path) -> None:
        out = root / self.id
        out.mkdir(parents=True, exist_ok=True)
        with (out / "journal.jsonl").open("w") as fh:
            for d in self.lines:
                fh.write(json.dumps(d, separators=(",", ":"), ensure_ascii=False) + "\n")
        extra = dict(self.extra)
        if self.kernel:
            extra["kernel_journal"] = self.kernel
        path = out / "extra.json"
        if extra:
            path.write_text(json.dumps(extra, indent=1, ensure_ascii=False) + "\n")
        elif path.exists():
            path.unlink()
        (out / "expected.json").write_text(json.dumps(self.expected, indent=1, ensure_ascii=False) + "\n")
