"""A supervisor with systemd 252's semantics for one service unit of the simulated host.

Owns the unit's state machine (inactive/activating/active/deactivating/failed with systemd's
sub-states), the jobs `start`, `stop`, `restart`, `daemon-reload`, `reset-failed` (one at a time,
as systemd runs one job per unit), automatic restarts (`Restart=`, `RestartSec=`, `NRestarts`),
the start limit (`StartLimitIntervalSec=`/`StartLimitBurst=`), stop with SIGTERM to the whole
process group then SIGKILL after `TimeoutStopSec=` (KillMode=control-group), a fresh
`InvocationID` per start, and the capture of the service's stdout/stderr into the journal under
its pid. Phases (RestartSec, TimeoutStopSec, the start-limit interval) run `time_scale` times
real time; `systemctl show` reports the configured values. The unit's `python3 -m
sglang.launch_server` is mapped to the fake server `simhost.sglang.launch_server`; `vllm serve` and
`python3 -m vllm.entrypoints.openai.api_server` to `simhost.vllm.serve`.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import signal
import time
import uuid
from collections import deque
from collections.abc import Callable
from pathlib import Path

from simhost import gpu, procs, stdstream
from simhost.cgroup import MemoryCgroup, join
from simhost.journal import JournalWriter, clean_line
from simhost.props import unit_properties
from simhost.sdmsg import ManagerLog
from simhost.unitfile import Unit, parse_unit

READY_LINE = "The server is fired up and ready to roll!"
BUSY_CORES = 5.0  # a real TP-4 SGLang: four busy-polling schedulers and the main process
CLEAN_SIGNALS = {signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGPIPE}


class JobFailed(Exception):
    """A job did not succeed; `result` is systemd's job result / unit result word."""

    def __init__(self, result: str) -> None:
        super().__init__(result)
        self.result = result


class Supervisor:
    """One unit, supervised in the SimHost's event loop."""

    def __init__(self, root: Path, journal: JournalWriter, unit_path: Path, *, time_scale: float,
                 service_env: dict[str, str], python: str, fake_engines: bool = True) -> None:
        self.root = root
        self.fake_engines = fake_engines  # False: ExecStart runs as written (`SimHost(real_engine=True)`)
        self.journal = journal
        self.unit_path = unit_path
        self.name = unit_path.name
        self.time_scale = time_scale
        self.service_env = service_env
        self.python = python
        self._cgroup: MemoryCgroup | None = None
        self.log = ManagerLog(journal.append, self.name)
        self.unit: Unit = parse_unit(unit_path)
        self._loaded_sig = self._file_sig()
        self.active_state, self.sub_state, self.result = "inactive", "dead", "success"
        self.main_pid = 0
        self.exec_main_pid = 0
        self.exec_main_code = 0
        self.exec_main_status = 0
        self.n_restarts = 0
        self.invocation_id = ""
        self.stamps: dict[str, float] = {}
        self.on_exit: list[Callable[[str, int], None]] = []  # (invocation id, main pid) after a death
        self._proc: asyncio.subprocess.Process | None = None
        self._exit: asyncio.Future[int] | None = None
        self._reader: asyncio.Task[None] | None = None
        self._watcher: asyncio.Task[None] | None = None
        self._restart_task: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()
        self._stopping = False
        self._closing = False
        self._starts: deque[float] = deque()
        self._started_at = 0.0
        self._ready_at = 0.0
        self._mapped = False
        self._ident = "python3"
        self._stream_id = ""
        self._titles: dict[int, str] = {}

    # ---- unit file ------------------------------------------------------------------------
    def _file_sig(self) -> str:
        try:
            return hashlib.sha256(self.unit_path.read_bytes()).hexdigest()
        except OSError:
            return ""

    def need_daemon_reload(self) -> bool:
        return self._file_sig() != self._loaded_sig

    async def daemon_reload(self) -> None:
        async with self._lock:
            self.log.plain("Reloading.")
            self.unit = parse_unit(self.unit_path)
            self._loaded_sig = self._file_sig()
            for warning in self.unit.warnings:
                self.log.config_warning(warning)

    def scaled(self, usec: int) -> float:
        return max(0.0, usec / 1e6 * self.time_scale)

    def _set(self, active: str, sub: str) -> None:
        now = time.time()
        if active != self.active_state:
            key = {"active": "ActiveEnterTimestamp", "inactive": "InactiveEnterTimestamp",
                   "failed": "InactiveEnterTimestamp"}.get(active)
            if key:
                self.stamps[key] = now
        self.active_state, self.sub_state = active, sub
        self.stamps["StateChangeTimestamp"] = now

    # ---- jobs -----------------------------------------------------------------------------
    async def start(self) -> None:
        async with self._lock:
            await self._start_locked(manual=True)

    async def stop(self) -> None:
        async with self._lock:
            await self._stop_locked("stop")

    async def restart(self) -> None:
        async with self._lock:
            job = await self._stop_locked("restart")
            await self._start_locked(manual=True, job=job)

    async def reset_failed(self) -> None:
        async with self._lock:
            self._starts.clear()
            if self.active_state == "failed":
                self.result = "success"
                self._set("inactive", "dead")

    async def _start_locked(self, *, manual: bool, job: int | None = None) -> None:
        if self.unit.load_error:
            raise JobFailed("bad-setting")
        if self.active_state in ("active", "activating", "deactivating") and self.sub_state != "auto-restart":
            return
        self._cancel_restart()
        job = job or self.log.next_job()
        now = time.monotonic()
        window = self.scaled(self.unit.start_limit_interval_usec)
        while self._starts and now - self._starts[0] > window:
            self._starts.popleft()
        if self.unit.start_limit_burst > 0 and len(self._starts) >= self.unit.start_limit_burst:
            # systemd 252 (service_enter_dead): the result becomes start-limit-hit only if it was success; after a
            # crash loop the unit keeps 'exit-code' (or 'signal'), and NRestarts is not reset by the refused start
            self.log.start_limit()
            if self.result == "success":
                self.result = "start-limit-hit"
            self.log.failed_result(self.result)
            self.log.failed_to_start(self.unit.ident, job)
            self._set("failed", "failed")
            raise JobFailed(self.result)
        if manual:
            self.n_restarts = 0
        self._starts.append(now)
        await self._spawn()
        self.log.started(self.unit.ident, job)

    def _map_command(self, argv: list[str]) -> list[str]:
        self._mapped = False
        self._ident = "python3"
        if not self.fake_engines:
            return argv
        if len(argv) >= 3 and os.path.basename(argv[0]).startswith("python") and argv[1:3] == [
                "-m", "sglang.launch_server"]:
            self._mapped = True
            return [self.python, "-m", "simhost.sglang.launch_server", *argv[3:]]
        if len(argv) >= 3 and os.path.basename(argv[0]).startswith("python") and argv[1:3] == [
                "-m", "vllm.entrypoints.openai.api_server"]:
            self._mapped = True
            return [self.python, "-m", "simhost.vllm.serve", *argv[3:]]
        if len(argv) >= 2 and os.path.basename(argv[0]) == "vllm" and argv[1] == "serve":
            self._mapped = True
            self._ident = "vllm"  # the `vllm` console script: journald names it after the executable
            return [self.python, "-m", "simhost.vllm.serve", *argv[2:]]
        return argv

    async def _spawn(self) -> None:
        self.invocation_id = uuid.uuid4().hex
        self.log.invocation_id = self.invocation_id
        self._stream_id = uuid.uuid4().hex
        argv = self._map_command(list(self.unit.exec_start))
        env = dict(self.service_env)
        env.update(self.unit.environment)
        env["INVOCATION_ID"] = self.invocation_id
        env["SIMHOST_UNIT"] = self.name
        cwd = self.unit.working_directory or str(self.root)
        self.result = "success"
        self._started_at = time.monotonic()
        self._ready_at = 0.0
        self.exec_main_code = 0
        self.exec_main_status = 0
        reader, writer = stdstream.make_pair()
        preexec = self._memory_cgroup()
        try:
            proc = await asyncio.create_subprocess_exec(
                *argv, stdin=asyncio.subprocess.DEVNULL, stdout=writer.fileno(), stderr=writer.fileno(),
                start_new_session=True, env=env, cwd=cwd, preexec_fn=preexec)
        except OSError as exc:
            reader.close()
            writer.close()
            self._reader = None
            self._emit_service_line(0, f"{self.name}: Failed to locate executable {argv[0]}: {exc.strerror}")
            self._emit_service_line(0, f"{self.name}: Failed at step EXEC spawning {argv[0]}: {exc.strerror}")
            self.stamps["ExecMainStartTimestamp"] = time.time()
            self._set("active", "running")
            loop = asyncio.get_running_loop()
            self._exit = loop.create_future()
            self._watcher = asyncio.create_task(self._after_exit(203, 0))
            return
        writer.close()
        self._proc = proc
        self._titles = {}
        self.main_pid = self.exec_main_pid = proc.pid
        self.stamps["ExecMainStartTimestamp"] = time.time()
        self._set("active", "running")
        self._exit = asyncio.get_running_loop().create_future()
        self._reader = asyncio.create_task(stdstream.pump(reader, proc.pid, self._on_line))
        self._watcher = asyncio.create_task(self._watch(proc))

    def _memory_cgroup(self) -> Callable[[], None] | None:
        """`MemoryMax=`: a fresh memory cgroup for this start (`simhost.cgroup`), joined by the child before exec."""
        self._drop_cgroup()
        if self.unit.memory_max is None:
            return None
        cg = MemoryCgroup(self.name)
        if cg.path is None:
            self.log.config_warning(f"{self.name}: MemoryMax= not applied by the simulator: {cg.error}")
            return None
        cg.limit(self.unit.memory_max)
        self._cgroup = cg
        procs_file = cg.join_path()
        return lambda: join(procs_file)

    def _drop_cgroup(self) -> None:
        if self._cgroup is not None:
            self._cgroup.remove()
            self._cgroup = None

    def _oom_killed(self) -> bool:
        return self._cgroup is not None and self._cgroup.oom_kills() > 0

    def _title(self, pid: int) -> str:
        """`_CMDLINE` of a writer: the unit's command for the main process, else the process title."""
        if not pid or pid == self.main_pid or pid == self.exec_main_pid:
            return " ".join(self.unit.exec_start)
        if pid not in self._titles:
            names = {h.pid: h.name for h in gpu.holders(self.root)}
            if pid not in names:  # not (yet) a known scheduler: its real command line, not cached
                return procs.cmdline(pid) or procs.comm(pid)
            self._titles[pid] = names[pid]
        return self._titles[pid]

    def _emit_service_line(self, pid: int, message: str) -> None:
        comm = procs.comm(pid) if pid else "python3"
        ident = self.unit.syslog_identifier or (self._ident if self._mapped else os.path.basename(
            self.unit.exec_start[0] if self.unit.exec_start else comm))
        self.journal.append({
            "_TRANSPORT": "stdout", "PRIORITY": 6, "SYSLOG_IDENTIFIER": ident, "MESSAGE": message,
            "_PID": pid or self.main_pid or 0, "_UID": os.getuid(), "_GID": os.getgid(),
            "_COMM": comm if comm != "?" else "python3",
            "_EXE": "/usr/bin/python3.11" if self._mapped else (self.unit.exec_start or ["?"])[0],
            "_CMDLINE": self._title(pid), "_CAP_EFFECTIVE": "0",
            "_SYSTEMD_CGROUP": f"/system.slice/{self.name}", "_SYSTEMD_UNIT": self.name,
            "_SYSTEMD_SLICE": "system.slice", "_SYSTEMD_INVOCATION_ID": self.invocation_id,
            "_STREAM_ID": self._stream_id})

    def _on_line(self, pid: int, raw: bytes) -> None:
        line = clean_line(raw.decode("utf-8", "surrogateescape"))
        if line is None:
            return
        if not self._ready_at and READY_LINE in line:
            self._ready_at = time.monotonic()
        self._emit_service_line(pid, line)

    async def _watch(self, proc: asyncio.subprocess.Process) -> None:
        rc = await proc.wait()
        await self._after_exit(rc, proc.pid)

    async def _after_exit(self, rc: int, pid: int) -> None:
        leftovers = procs.group_members(pid) if pid else []
        for member in leftovers:
            procs.kill(member, signal.SIGKILL)
        if self._reader is not None:
            with contextlib.suppress(asyncio.TimeoutError, asyncio.CancelledError):
                await asyncio.wait_for(asyncio.shield(self._reader), 0.5)
        for hook in self.on_exit:
            hook(self.invocation_id, pid)
        assert self._exit is not None
        if not self._exit.done():
            self._exit.set_result(rc)
        if not self._stopping and not self._closing:
            self._on_unexpected_exit(rc)

    def _exit_code(self, rc: int) -> tuple[str, int, bool]:
        if rc < 0:
            sig = -rc
            return "killed", sig, sig in CLEAN_SIGNALS
        return "exited", rc, rc == 0

    def _record_exit(self, code: str, status: int) -> None:
        self.exec_main_code = {"exited": 1, "killed": 2, "dumped": 3}[code]
        self.exec_main_status = status
        self.stamps["ExecMainExitTimestamp"] = time.time()
        self.main_pid = 0
        self._proc = None

    def _cpu_usec(self) -> int:
        if not self._mapped:
            return 0
        now = time.monotonic()
        ready = self._ready_at or now
        simulated = (ready - self._started_at) / max(self.time_scale, 1e-6) + (now - ready)
        return int(simulated * BUSY_CORES * 1e6)

    def _on_unexpected_exit(self, rc: int) -> None:
        code, status, clean = self._exit_code(rc)
        self._record_exit(code, status)
        oom = self._oom_killed()
        self._drop_cgroup()
        if oom:  # systemd 252 with OOMPolicy=stop (FORMATS c.2): the cgroup's OOM kill decides the result
            self.result = "oom-kill"
            self.log.oom_killed()
            self.log.main_exited(code, status)
            self.log.failed_result(self.result)
        elif clean:
            self.result = "success"
            self.log.deactivated()
        else:
            self.result = "exit-code" if code == "exited" else "signal"
            self.log.main_exited(code, status)
            self.log.failed_result(self.result)
        self.log.consumed(self._cpu_usec())
        restart = self.unit.restart
        wanted = (restart == "always" or (restart == "on-failure" and not clean)
                  or (restart == "on-success" and clean) or (restart == "on-abnormal" and code == "killed"
                                                             and not clean))
        if wanted:
            self._set("activating", "auto-restart")
            self._restart_task = asyncio.create_task(self._auto_restart())
        else:
            if clean:  # systemd 252: starts that end in a clean exit do not count toward the start limit
                self._starts.clear()
            self._set("inactive" if clean else "failed", "dead" if clean else "failed")

    async def _auto_restart(self) -> None:
        await asyncio.sleep(self.scaled(self.unit.restart_usec))
        async with self._lock:
            if self.sub_state != "auto-restart":
                return
            self._restart_task = None
            self.n_restarts += 1
            self.log.scheduled_restart(self.n_restarts)
            job = self.log.next_job()
            self.log.stopped(self.unit.ident, job, "restart")
            self._set("inactive", "dead")
            with contextlib.suppress(JobFailed):
                await self._start_locked(manual=False, job=job)

    def _cancel_restart(self) -> None:
        task, self._restart_task = self._restart_task, None
        if task is not None and task is not asyncio.current_task():
            task.cancel()

    async def _stop_locked(self, job_type: str) -> int:
        job = self.log.next_job()
        if self.sub_state == "auto-restart":
            self._cancel_restart()
            self.log.stopped(self.unit.ident, job, job_type)
            self._set("inactive", "dead")
            return job
        if self._exit is None or self._exit.done() or self.active_state not in ("active", "activating"):
            return job
        self._stopping = True
        try:
            self.log.stopping(self.unit.ident, job, job_type)
            self._set("deactivating", "stop-sigterm")
            pid = self.main_pid
            procs.kill_group(pid, signal.SIGTERM)
            timed_out = False
            timeout = self.scaled(self.unit.timeout_stop_usec) if self.unit.timeout_stop_usec > 0 else None
            try:
                rc = await asyncio.wait_for(asyncio.shield(self._exit), timeout)
            except TimeoutError:
                timed_out = True
                self.log.stop_timed_out()
                self._set("deactivating", "stop-sigkill")
                for member in procs.group_members(pid):
                    self.log.killing(member, procs.comm(member))
                procs.kill_group(pid, signal.SIGKILL)
                rc = await self._exit
            code, status, clean = self._exit_code(rc)
            self._record_exit(code, status)
            self._drop_cgroup()
            if timed_out:
                self.result = "timeout"
                self.log.main_exited(code, status)
                self.log.failed_result("timeout")
            elif clean:
                self.result = "success"
                self.log.deactivated()
            else:
                self.result = "exit-code" if code == "exited" else "signal"
                self.log.main_exited(code, status)
                self.log.failed_result(self.result)
            self.log.stopped(self.unit.ident, job, job_type)
            self.log.consumed(self._cpu_usec())
            if self.result == "success":
                self._set("inactive", "dead")
            else:
                self._set("failed", "failed")
        finally:
            self._stopping = False
        return job

    async def close(self) -> None:
        """Stop everything now (SIGKILL to the process group); used on SimHost exit."""
        self._closing = True
        self._cancel_restart()
        if self.main_pid:
            procs.kill_group(self.main_pid, signal.SIGKILL)
        for task in (self._watcher, self._reader):
            if task is not None:
                with contextlib.suppress(asyncio.TimeoutError, asyncio.CancelledError, Exception):
                    await asyncio.wait_for(task, 2.0)
        self._cancel_restart()
        self._drop_cgroup()

    # ---- properties -----------------------------------------------------------------------
    def properties(self) -> dict[str, str]:
        return unit_properties(self)
