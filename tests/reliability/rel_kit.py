"""Shared helpers for the reliability suite: settings around a simulated host, DB probes, journal checks.

Used by the in-process tests, by `rel_bot_proc.py` (a bot in its own OS process) and by the
benchmarks in `benchmarks/`. Everything binds 127.0.0.1 and port 0.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import multiprocessing
import multiprocessing.context
import multiprocessing.process
import os
import re
import signal
import socket
import sys
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from support.job_wait import JobEnds

from bot.app import Core
from bot.demo import host_entry
from bot.settings import Settings, load_settings
from handlers.contract import Actor, ChatMessage, Reply

TINY_BENCH: dict[str, Any] = {"concurrency": [1], "requests_per_level": 1, "warmup": 0, "input_len": 16,
                              "output_len": 16}
PG_URL = os.environ.get("PITCREW_TEST_PG_URL", "")


def settings_for(info: dict[str, Any], db_url: str, *, bench: dict[str, Any] | None = None,
                 policy: dict[str, Any] | None = None) -> Settings:
    pol = {"roles": {"*": "admin"}, "confirm": [], "max_queued_jobs_per_host": 100,
           "user_commands_per_minute": 10_000, **(policy or {})}
    return load_settings(None, db={"url": db_url}, hosts=[host_entry(info)], bench=bench or TINY_BENCH,
                         policy=pol)


def read_journal(sim_root: Path) -> list[dict[str, Any]]:
    """Every entry of the simulated host's journal file, in order."""
    path = sim_root / "journal" / "system.journal.jsonl"
    out = []
    for line in path.read_text(errors="replace").splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out


def systemd_unit_sequence(entries: list[dict[str, Any]], unit: str = "sglang.service") -> list[str]:
    """systemd's own lines about the unit, reduced to Stopping/Stopped/Starting/Started/other."""
    seq = []
    for e in entries:
        if e.get("SYSLOG_IDENTIFIER") != "systemd" and e.get("_PID") not in (1, "1"):
            continue
        if e.get("UNIT") != unit and e.get("USER_UNIT") != unit:
            continue
        msg = str(e.get("MESSAGE") or "")
        for word in ("Stopping", "Stopped", "Starting", "Started", "Deactivated", "Failed", "Scheduled restart"):
            if msg.startswith(word):
                seq.append(word)
                break
    return seq


def check_no_interleaving(seq: list[str]) -> list[str]:
    """Problems in a unit's lifecycle sequence: a stop or start begun while another was in flight."""
    problems = []
    state = "stopped"  # nothing logged yet: the first line is the boot start
    for i, word in enumerate(seq):
        if word == "Stopping":
            if state != "up":
                problems.append(f"#{i} Stopping while {state}")
            state = "stopping"
        elif word in ("Stopped", "Deactivated"):
            if state not in ("stopping", "stopped", "up"):
                problems.append(f"#{i} {word} while {state}")
            state = "stopped"
        elif word == "Starting":
            if state not in ("stopped",):
                problems.append(f"#{i} Starting while {state}")
            state = "starting"
        elif word == "Started":  # Type=simple units log no "Starting" line
            if state not in ("starting", "stopped"):
                problems.append(f"#{i} Started while {state}")
            state = "up"
    return problems


async def make_pg_database() -> str:
    """A fresh PostgreSQL database for one test (dropped by `drop_pg_database`); returns its URL."""
    import asyncpg

    name = "rel_" + uuid.uuid4().hex[:10]
    raw = PG_URL.replace("postgresql+asyncpg://", "postgresql://")
    conn = await asyncpg.connect(raw, timeout=10)
    try:
        await conn.execute(f'CREATE DATABASE "{name}"')
    finally:
        await conn.close()
    return PG_URL.rsplit("/", 1)[0] + "/" + name


async def drop_pg_database(url: str) -> None:
    import asyncpg

    name = url.rsplit("/", 1)[1]
    raw = PG_URL.replace("postgresql+asyncpg://", "postgresql://")
    conn = await asyncpg.connect(raw, timeout=10)
    try:
        await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await conn.close()


class RelBot:
    """A core plus its sim; `say` dispatches like a chat user."""

    def __init__(self, core: Core, sim: Any) -> None:
        self.core = core
        self.sim = sim
        self.ends = JobEnds(core)

    async def wait_job(self, job_id: int, timeout: float = 120.0) -> Any:
        """The job once it is neither queued nor running."""
        return await self.ends.wait(job_id, timeout, not_ended=("queued", "running"))

    async def say(self, text: str, *, user: str = "U1", channel: str = "C1") -> Reply:
        reply: Reply = await self.core.router.dispatch(
            ChatMessage(text=text, actor=Actor(user, f"user-{user}", "test"), channel=channel))
        return reply


def job_id_of(reply: Reply) -> int:
    m = re.search(r"Job (\d+)", reply.text)
    assert m, reply.text
    return int(m.group(1))


REPO = Path(__file__).resolve().parent.parent.parent


# The modules a bot process needs, imported once by the fork server each test process starts on its first bot
# process: a bot forked from it starts with them imported (~1 CPU-s each otherwise, ~25 bot processes a `make test`).
# `rel_bot_proc` imports them inside `main`; a module missing here is imported by each child, nothing breaks.
# The fork server keeps the environment, working directory and scheduling priority its test process had at its
# first bot (make test's units that start bots each run at one priority: support.xdist_groups).
FORK_PRELOAD = ["bot.app", "handlers.contract", "services.jobs.events", "rel_kit", "rel_bot_proc"]
_fork_context: multiprocessing.context.ForkServerContext | None = None


class ForkedProcess:
    """The part of `asyncio.subprocess.Process` the tests use, for a `multiprocessing` process forked from the fork
    server: `pid`, `returncode` (-N for a signal, as asyncio's), `stdout`/`stderr` stream readers (`stderr` None
    when not asked for), `wait()`, `terminate()`, `kill()`, `send_signal()`."""

    def __init__(self, process: multiprocessing.process.BaseProcess, stdout: asyncio.StreamReader,
                 stderr: asyncio.StreamReader | None, writers: list[asyncio.StreamWriter]) -> None:
        # `writers`: kept for their transports, which close themselves at the child's end of the streams (EOF), after
        # everything it wrote has been read
        self._process = process
        self.pid = int(process.pid or 0)
        self.stdout = stdout
        self.stderr = stderr
        self._writers = writers
        self._ended: asyncio.Future[None] | None = None

    @property
    def returncode(self) -> int | None:
        return self._process.exitcode

    async def wait(self) -> int:
        if self._process.exitcode is None:
            if self._ended is None:  # one reader of the sentinel for every waiter (a second add_reader replaces it)
                loop = asyncio.get_running_loop()
                self._ended = loop.create_future()

                def ended() -> None:
                    loop.remove_reader(self._process.sentinel)
                    if self._ended is not None and not self._ended.done():
                        self._ended.set_result(None)

                loop.add_reader(self._process.sentinel, ended)
            await asyncio.shield(self._ended)
        code = self._process.exitcode
        assert code is not None, "the fork server reported no exit status"  # it writes one before the sentinel ends
        return code

    def send_signal(self, sig: int) -> None:
        if self._process.exitcode is None:
            os.kill(self.pid, sig)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


async def _forked_bot(argv: list[str], *, stderr: bool) -> ForkedProcess:
    """`rel_bot_proc.run(argv)` in a process forked from this test process's fork server."""
    import rel_bot_proc

    global _fork_context
    if _fork_context is None:
        _fork_context = multiprocessing.get_context("forkserver")
        _fork_context.set_forkserver_preload(FORK_PRELOAD)
    ours, theirs = zip(*(socket.socketpair() for _ in range(2 if stderr else 1)), strict=True)
    # daemon: a bot a failed test left running is ended when its test process exits (multiprocessing's atexit)
    process = _fork_context.Process(target=rel_bot_proc.forked, args=(argv, theirs[0], theirs[1] if stderr else None),
                                    daemon=True)
    try:
        await asyncio.to_thread(process.start)  # the fork server's first start imports FORK_PRELOAD
    finally:
        for sock in theirs:
            sock.close()
    streams = [await asyncio.open_connection(sock=sock) for sock in ours]
    return ForkedProcess(process, streams[0][0], streams[1][0] if stderr else None, [w for _, w in streams])


class Proc:
    """A child process whose stdout is JSON lines; `events` collects them as they come."""

    def __init__(self, proc: asyncio.subprocess.Process | ForkedProcess) -> None:
        self.proc = proc
        self.events: list[dict[str, Any]] = []
        self._reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        assert self.proc.stdout is not None
        while line := await self.proc.stdout.readline():
            with contextlib.suppress(ValueError):
                self.events.append(json.loads(line))

    async def wait_event(self, pred: Callable[[dict[str, Any]], bool], within: float = 30.0) -> dict[str, Any]:
        try:
            async with asyncio.timeout(within):
                while True:
                    for e in self.events:
                        if pred(e):
                            return e
                    if self.proc.returncode is not None and self._reader.done():
                        raise AssertionError(f"process exited ({self.proc.returncode}) without it: {self.events}")
                    await asyncio.sleep(0.02)
        except TimeoutError:  # say whether it was stuck or starved: its state and the CPU it had, and what it said
            raise AssertionError(f"no such event within {within} s from pid {self.proc.pid} "
                                 f"({self.cpu_state()}); its events: {self.events[-20:]}") from None

    def cpu_state(self) -> str:
        """The process's scheduler state and CPU seconds so far (from /proc), or how it ended."""
        if self.proc.returncode is not None:
            return f"exited {self.proc.returncode}"
        try:
            fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return "gone"
        ticks = os.sysconf("SC_CLK_TCK")
        return f"state {fields[0]}, {(int(fields[11]) + int(fields[12])) / ticks:.1f} CPU-s"

    def kill9(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.proc.pid, signal.SIGKILL)

    async def stop(self, within: float = 20.0) -> int:
        if self.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.terminate()
        try:
            async with asyncio.timeout(within):
                await self.proc.wait()
        except TimeoutError:
            self.kill9()
            await self.proc.wait()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._reader, 5)
        return int(self.proc.returncode or 0)


async def start_bot_proc(db_url: str, host_json: Path, *, say: list[str] = (),  # type: ignore[assignment]
                         scale: float = 0.002, bench: dict[str, Any] | None = None,
                         until_idle: bool = False, stderr: bool = False,
                         policy: dict[str, Any] | None = None, lease_ttl_s: float | None = None) -> Proc:
    argv = ["--db", db_url, "--host-json", str(host_json), "--scale", str(scale)]
    if bench:
        argv += ["--bench", json.dumps(bench)]
    if policy:
        argv += ["--policy", json.dumps(policy)]
    if lease_ttl_s is not None:
        argv += ["--lease-ttl", str(lease_ttl_s)]
    for s in say:
        argv += ["--say", s]
    if until_idle:
        argv.append("--until-idle")
    return Proc(await _forked_bot(argv, stderr=stderr))


async def start_sim_proc(sim_dir: Path, *, scale: float = 0.002, scenario: str = "healthy") -> Proc:
    """`pitcrew sim up` in its own process; returns once `DIR/host.json` is written."""
    pitcrew = Path(sys.executable).with_name("pitcrew")
    proc = await asyncio.create_subprocess_exec(
        str(pitcrew), "sim", "up", "--dir", str(sim_dir), "--time-scale", str(scale), "--scenario", scenario,
        cwd=str(REPO), stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL)
    p = Proc(proc)
    await p.wait_event(lambda e: "ssh_port" in e, within=60)
    return p


class CuttableProxy:
    """A TCP proxy to ``target`` on 127.0.0.1:0 whose link can be cut (open connections reset, new ones
    refused) and restored — a database that goes away and comes back, without touching the real server."""

    def __init__(self, target_host: str, target_port: int) -> None:
        self.target = (target_host, target_port)
        self.down = False
        self.port = 0
        self._server: asyncio.AbstractServer | None = None
        self._writers: set[asyncio.StreamWriter] = set()

    async def start(self) -> int:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = int(self._server.sockets[0].getsockname()[1])
        return self.port

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.down:
            writer.close()
            return
        try:
            up_r, up_w = await asyncio.open_connection(*self.target)
        except OSError:
            writer.close()
            return
        self._writers |= {writer, up_w}

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            with contextlib.suppress(Exception):
                while data := await src.read(65536):
                    dst.write(data)
                    await dst.drain()
            with contextlib.suppress(Exception):
                dst.close()

        await asyncio.gather(pipe(reader, up_w), pipe(up_r, writer))
        self._writers -= {writer, up_w}

    def cut(self) -> None:
        self.down = True
        for w in list(self._writers):
            with contextlib.suppress(Exception):
                w.transport.abort()
        self._writers.clear()

    def restore(self) -> None:
        self.down = False

    async def close(self) -> None:
        self.cut()
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await self._server.wait_closed()
