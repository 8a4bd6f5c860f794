"""Careful operations on a host's inference unit: read/write the unit, stop, start, wait until it serves.

These are the steps a person did by hand in the field notes, done with deadlines and evidence:
write the unit atomically then `daemon-reload`; stop and wait until the unit is inactive *and*
its GPU memory is released (a leftover holder is reported with its pid, never killed here);
start and follow the journal from the start cursor until the engine's ready line or a failure, then
prove it serves with `/health` and one real short generation, and take the engine's version from its start
lines or, when it logged none, from the running server (`served_version`). Every remote call has a timeout.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import httpx

from services.engines import Capacity, engine_named, engine_version
from services.errors import DeployFailed, HostError
from services.hosts import Host
from services.httpclient import http_client
from services.journal import JournalEntry, SystemdEvent, classify, parse_entry, parse_show

Progress = Callable[[str], Awaitable[None]]
SHOW_PROPS = "NRestarts,ActiveState,SubState,Result,MainPID,ExecMainStatus,ExecMainCode,InvocationID,NeedDaemonReload"


@dataclass(frozen=True)
class UnitState:
    """`systemctl show` of the unit, parsed."""

    active_state: str
    sub_state: str
    result: str
    main_pid: int
    n_restarts: int
    invocation_id: str
    raw: dict[str, str] = field(default_factory=dict)

    @property
    def inactive(self) -> bool:
        return self.active_state in ("inactive", "failed")


@dataclass(frozen=True)
class GpuApp:
    """A process holding GPU memory (`nvidia-smi --query-compute-apps`)."""

    pid: int
    name: str
    used_mib: int


@dataclass(frozen=True)
class StopReport:
    seconds: float
    holders: tuple[GpuApp, ...]  # processes still holding GPU memory after the bounded wait
    result: str = ""  # systemd's Result= once stopped: "timeout" when TimeoutStopSec ran out and it SIGKILLed


@dataclass(frozen=True)
class ReadyReport:
    seconds: float
    ready_line_seconds: float | None
    capacity: Capacity | None
    entries: tuple[JournalEntry, ...]
    health_ok: bool
    engine_version: str = ""  # as the engine logged it while starting ("0.11.0") or, failing that, as the running
    # server named it (llama.cpp's /props: "b1 (0c1e57098)"); "" when neither said


@dataclass(frozen=True)
class StartFailure:
    """The evidence of a start that failed while loading (for the diagnosis)."""

    reason: str
    entries: tuple[JournalEntry, ...]
    events: tuple[SystemdEvent, ...]


class StartFailed(DeployFailed):
    def __init__(self, message: str, failure: StartFailure) -> None:
        super().__init__(message)
        self.failure = failure


def _int(v: str | None) -> int:
    try:
        return int(v or "0")
    except ValueError:
        return 0


class UnitOps:
    """The unit-level operations on one host, with the deadlines that keep them honest."""

    def __init__(self, host: Host, *, time_scale: float = 1.0, http_timeout: float = 10.0) -> None:
        self.host = host
        self.spec = host.spec
        self.unit = host.spec.unit
        self.unit_path = f"{host.spec.unit_dir.rstrip('/')}/{host.spec.unit}"
        self.scale = time_scale
        self.http_timeout = http_timeout

    def _t(self, seconds: float) -> float:
        return max(seconds * self.scale, 0.05)

    async def _ctl(self, *args: str, timeout: float = 30.0, check: bool = True) -> str:  # noqa: ASYNC109
        res = await self.host.run(["systemctl", *args], timeout=timeout, check=check, sudo=self.spec.sudo)
        return res.stdout

    async def state(self) -> UnitState:
        raw = parse_show(await self._ctl("show", self.unit, "-p", SHOW_PROPS, timeout=15.0))
        return UnitState(active_state=raw.get("ActiveState", "unknown"), sub_state=raw.get("SubState", ""),
                         result=raw.get("Result", ""), main_pid=_int(raw.get("MainPID")),
                         n_restarts=_int(raw.get("NRestarts")), invocation_id=raw.get("InvocationID", ""),
                         raw=raw)

    async def read_unit(self) -> str:
        return await self.host.read_file(self.unit_path, timeout=20.0)

    async def write_unit(self, text: str) -> None:
        await self.host.upload(self.unit_path, text.encode(), mode=0o644, timeout=30.0)
        await self._ctl("daemon-reload", timeout=60.0)

    async def gpu_apps(self) -> list[GpuApp]:
        res = await self.host.run(
            ["nvidia-smi", "--query-compute-apps=pid,process_name,used_memory", "--format=csv,noheader,nounits"],
            timeout=20.0)
        if not res.ok:
            raise HostError(f"nvidia-smi failed on {self.spec.name}: {res.stderr.strip()[:200]}")
        apps = []
        for line in res.stdout.splitlines():
            parts = [p.strip() for p in line.split(",")]
            if len(parts) >= 3 and parts[0].isdigit():
                apps.append(GpuApp(int(parts[0]), parts[1], _int(parts[2])))
        return apps

    async def cursor_now(self) -> str | None:
        """The cursor of the newest journal entry of the unit (the point to follow from)."""
        res = await self.host.run(["journalctl", "-u", self.unit, "-o", "json", "-n", "1", "--no-pager"],
                                  timeout=20.0)
        for line in reversed(res.stdout.splitlines()):
            entry = parse_entry(line)
            if entry is not None:
                return entry.cursor
        return None

    async def stop(self, *, deadline_s: float, progress: Progress | None = None) -> StopReport:
        """Stop the unit and wait until it is inactive and its GPU memory is free (bounded)."""
        t0 = time.monotonic()
        if progress:
            await progress("stopping the server")
        await self._ctl("stop", self.unit, timeout=deadline_s)
        while True:
            st = await self.state()
            if st.inactive:
                result = st.result
                break
            if time.monotonic() - t0 > deadline_s:
                raise DeployFailed(f"{self.unit} on {self.spec.name} did not stop within {deadline_s:.0f} s")
            await asyncio.sleep(self._t(1.0))
        if progress:
            await progress("waiting for GPU memory to be released")
        holders: list[GpuApp] = []
        wait_until = time.monotonic() + self._t(30.0)
        while True:
            holders = await self.gpu_apps()
            if not holders or time.monotonic() > wait_until:
                break
            await asyncio.sleep(self._t(1.0))
        return StopReport(seconds=time.monotonic() - t0, holders=tuple(holders), result=result)

    async def start_and_wait(self, *, deadline_s: float, progress: Progress | None = None,
                             model: str | None = None, engine: str = "sglang") -> ReadyReport:
        """Start the unit; follow its journal until ready or failed; then prove it serves.

        ``engine`` names the engine (`services.engines.engine_named`) whose ready line and capacity lines to read
        (SGLang's, or vLLM's ``Application startup complete.`` and KV cache lines)."""
        t0 = time.monotonic()
        cursor = await self.cursor_now()
        # `-f` implies `-n 10` even after a cursor, and `-f -n 0` on an empty journal keeps only the end of the first
        # burst (systemd 252's journalctl, see docs/RELIABILITY.md): `--no-tail` from the cursor, or from the start of
        # a unit that has no entries yet.
        argv = ["journalctl", "-u", self.unit, "-o", "json", "-f", "--no-pager", "--no-tail"]
        argv += ["--after-cursor", cursor] if cursor else []
        entries: list[JournalEntry] = []
        events: list[SystemdEvent] = []
        server = engine_named(engine)
        reader = server.capacity_reader()
        ready_at: float | None = None
        version = ""
        async with self.host.stream(argv, timeout=deadline_s + 30) as lines:
            await self._ctl("start", self.unit, timeout=60.0)
            if progress:
                await progress("loading weights")
            try:
                async with asyncio.timeout(deadline_s):
                    async for line in lines:
                        entry = parse_entry(line)
                        if entry is None:
                            continue
                        entries.append(entry)
                        ev = classify(entry, self.unit)
                        if ev is not None:
                            events.append(ev)
                            if ev.kind in ("main_exited", "failed_result", "scheduled_restart",
                                           "start_limit_hit", "failed_to_start"):
                                raise StartFailed(
                                    f"{self.unit} on {self.spec.name} failed while loading: {ev.message}",
                                    StartFailure(ev.kind, tuple(entries[-400:]), tuple(events)))
                            continue
                        msg = entry.message
                        seen = engine_version(msg)
                        if seen is not None:
                            version = seen[1]
                        if reader.feed(msg) and progress:
                            cap = reader.capacity
                            on_cpu = cap is not None and cap.device == "cpu"
                            await progress(server.warmup_phase if server.warmup_phase and not on_cpu
                                           else "warming up")
                        if server.is_ready_line(msg):
                            ready_at = time.monotonic() - t0
                            break
            except TimeoutError:
                raise StartFailed(
                    f"{self.unit} on {self.spec.name} was not ready within {deadline_s:.0f} s",
                    StartFailure("timeout", tuple(entries[-400:]), tuple(events))) from None
            if ready_at is None:
                raise StartFailed(f"the journal of {self.spec.name} ended before the server was ready",
                                  StartFailure("journal-ended", tuple(entries[-400:]), tuple(events)))
        if progress:
            await progress("checking /health and one generation")
        await self.prove_serving(deadline_s=max(deadline_s - (time.monotonic() - t0), 10.0), model=model)
        if not version:  # it logged none (SGLang; llama.cpp at its default verbosity): ask the running server
            version = await self.served_version(engine)
        return ReadyReport(seconds=time.monotonic() - t0, ready_line_seconds=ready_at, capacity=reader.capacity,
                           entries=tuple(entries), health_ok=True, engine_version=version)

    async def prove_serving(self, *, deadline_s: float, model: str | None = None) -> str:
        """Poll `/health`, then run one short real generation; returns the model name."""
        base = self.spec.server_url
        t_end = time.monotonic() + deadline_s
        async with http_client(base, timeout=self.http_timeout) as client:
            while True:
                with contextlib.suppress(httpx.HTTPError):
                    r = await client.get(f"{base}/health")
                    if r.status_code == 200:
                        break
                if time.monotonic() > t_end:
                    raise DeployFailed(f"{self.spec.name}: /health did not answer 200 in time")
                await asyncio.sleep(min(0.2, self._t(1.0)))
            name = model
            if name is None:
                with contextlib.suppress(httpx.HTTPError, ValueError, KeyError, IndexError):
                    r = await client.get(f"{base}/v1/models")
                    name = str(r.json()["data"][0]["id"])
            body = {"model": name or "default", "prompt": "Say OK.", "max_tokens": 4, "temperature": 0}
            try:
                r = await client.post(f"{base}/v1/completions", json=body)
            except httpx.HTTPError as e:
                raise DeployFailed(f"{self.spec.name}: the test generation failed ({type(e).__name__})") from e
            if r.status_code != 200:
                raise DeployFailed(f"{self.spec.name}: the test generation answered HTTP {r.status_code}")
            return name or "default"

    async def served_version(self, engine: str) -> str:
        """The version the running server names on its engine's `version_path` (llama.cpp's ``/props``), or ""
        when it has none, does not answer within the HTTP timeout, or answers with something else."""
        server = engine_named(engine)
        if not server.version_path:
            return ""
        try:
            async with http_client(self.spec.server_url, timeout=self.http_timeout) as client:
                r = await client.get(f"{self.spec.server_url}{server.version_path}")
            doc = r.json() if r.status_code == 200 else None
        except (httpx.HTTPError, ValueError):
            return ""
        return server.served_version(doc) or ""

    async def recent_entries(self, n: int = 300) -> list[JournalEntry]:
        res = await self.host.run(["journalctl", "-u", self.unit, "-o", "json", "-n", str(n), "--no-pager"],
                                  timeout=30.0)
        out = []
        for line in res.stdout.splitlines():
            e = parse_entry(line)
            if e is not None:
                out.append(e)
        return out

    async def running_capacity(self, engine: str, n: int = 2000) -> Capacity | None:
        """The capacity the unit's running invocation logged while it started (its journal since systemd's last
        ``Started`` line, read by the engine's capacity reader), or None when the last ``n`` entries do not hold
        it (a pitcrew start records it as it happens; this is for a server pitcrew did not start)."""
        entries = await self.recent_entries(n)
        events = [classify(e, self.unit) for e in entries]
        starts = [i for i, ev in enumerate(events) if ev is not None and ev.kind == "started"]
        if not starts:
            return None
        reader = engine_named(engine).capacity_reader()
        for e, ev in zip(entries[starts[-1] + 1:], events[starts[-1] + 1:], strict=True):
            if ev is None and reader.feed(e.message):
                break
        return reader.capacity
