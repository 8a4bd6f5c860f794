"""The fleet status query: one `HostStatus` per host, for `status` in chat.

Owns reading a host's unit state and configuration (one `systemctl show` and one unit-file read
over SSH; the engine its ``ExecStart=`` launches, with the version the engine gave at its last start
when pitcrew saw that start, else the version the running server names (its engine's `version_path`, asked once
per unit invocation)), sharing that read between concurrent callers and reusing it for `STATUS_HOST_TTL_S`
(200 `status` commands a second must not become 400 SSH commands a second), and joining it with
what the database knows: the running and queued jobs, open incidents and the last result.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from services.engines import detect_engine, engine_display
from services.errors import HostError
from services.experiments import Results, RunSummary
from services.incidents import IncidentInfo
from services.jobs import JobRunner
from services.units import UnitOps, config_label, read_exec_start

STATUS_HOST_TTL_S = 1.0  # a host's unit state is read over SSH at most once a second, however many ask
SSH_READ_TIMEOUT_S = 15.0
VERSION_READ_TIMEOUT_S = 3.0  # the running server's version: status does not wait longer for it
VERSION_RETRY_S = 10.0  # a server that named no version (not listening yet, loading, or none) is asked again then


@dataclass(frozen=True)
class UnitState:
    """A unit as systemd and its unit file describe it."""

    active_state: str
    sub_state: str
    restarts: int
    config: str  # a short name for the configuration ("steps 5")
    engine: str = ""  # "sglang" or "vllm" as the unit's ExecStart says, "" when it names neither
    invocation: str = ""  # systemd's InvocationID of the unit's current run ("" when it does not run)


@dataclass(frozen=True)
class IncidentBrief:
    id: int
    cause: str


@dataclass(frozen=True)
class LastResult:
    """The host's newest benchmark run, with its headline figure: decode tok/s per request (median) at the
    lowest concurrency measured, and that median's bootstrap 95 % interval (the noise band)."""

    run_id: int
    label: str
    ok: bool = True
    concurrency: int | None = None
    decode_tok_s: float | None = None
    decode_ci: tuple[float, float] | None = None


@dataclass(frozen=True)
class HostStatus:
    """One host: its unit (or why it could not be read) and what pitcrew is doing there."""

    host: str
    unit: str
    state: UnitState | None
    unreachable: str | None  # the error that kept `state` from being read, shortened
    running_job: int | None
    queued_jobs: int
    incidents: tuple[IncidentBrief, ...]
    last_result: LastResult | None
    engine_version: str = ""  # as the start pitcrew last saw gave it ("0.11.0"), else as the running server names it
    engine_device: str = ""  # where that start said it runs when not on GPUs ("cpu": vLLM's CPU build), else ""

    @property
    def engine(self) -> str:
        """``vLLM 0.11.0``, ``vLLM 0.32.0 on CPU``, ``SGLang``, or ``—`` when the unit could not be read."""
        if self.state is None:
            return "—"
        name = engine_display(self.state.engine)
        text = f"{name} {self.engine_version}" if self.engine_version else name
        return f"{text} on {self.engine_device.upper()}" if self.engine_device else text


class OpenIncidents(Protocol):
    """The part of the incident monitor status reads."""

    async def open_incidents(self, host: str | None = None) -> list[IncidentInfo]: ...


class FleetStatus:
    """`status` for one or every host; unit reads are shared and cached per host."""

    def __init__(self, *, ops: Callable[[str], UnitOps], jobs: JobRunner, results: Results,
                 incidents: OpenIncidents | None = None, ttl_s: float = STATUS_HOST_TTL_S) -> None:
        self._ops = ops
        self._jobs = jobs
        self._results = results
        self.incidents = incidents
        self.ttl_s = ttl_s
        # host -> (read at, shared read of its unit state)
        self._reads: dict[str, tuple[float, asyncio.Future[UnitState]]] = {}
        # (host, invocation) -> (asked at, shared read of the version its running server names)
        self._served: dict[tuple[str, str], tuple[float, asyncio.Future[str]]] = {}

    async def hosts(self, names: Sequence[str]) -> list[HostStatus]:
        return list(await asyncio.gather(*(self.host(h) for h in names)))

    async def host(self, host: str) -> HostStatus:
        unit = self._ops(host).unit
        state: UnitState | None = None
        unreachable: str | None = None
        try:
            state = await self.unit_state(host)
        except (HostError, TimeoutError, OSError) as e:
            unreachable = str(e)[:60]
        queued = [j for j in await self._jobs.queue(host) if j.state != "running"]
        incidents: tuple[IncidentBrief, ...] = ()
        if self.incidents is not None:
            incidents = tuple(IncidentBrief(i.id, i.cause) for i in await self.incidents.open_incidents(host))
        last = await self._results.recent(host, 1)
        version = device = ""
        if state is not None and last and last[0].capacity.get("engine") == state.engine:
            version = str(last[0].capacity.get("engine_version") or "")
            device = str(last[0].capacity.get("device") or "")
        if state is not None and not version and state.engine and state.active_state == "active":
            version = await self.served_version(host, state)
        return HostStatus(host=host, unit=unit, state=state, unreachable=unreachable,
                          running_job=self._jobs.running_job(host), queued_jobs=len(queued), incidents=incidents,
                          last_result=_last_result(last[0]) if last else None,
                          engine_version=version, engine_device=device)

    async def unit_state(self, host: str) -> UnitState:
        """The host's unit state, shared by concurrent callers and reused for `ttl_s` when it succeeded."""
        now = time.monotonic()
        hit = self._reads.get(host)
        if hit is None or now - hit[0] > self.ttl_s or (hit[1].done() and hit[1].exception() is not None):
            fut = asyncio.ensure_future(self._read(host))
            self._reads[host] = hit = (now, fut)
        return await asyncio.shield(hit[1])

    async def served_version(self, host: str, state: UnitState) -> str:
        """The version the unit's running server names, asked once per invocation (again after
        `VERSION_RETRY_S` while it names none) and shared by concurrent callers; "" when it does not say in
        `VERSION_READ_TIMEOUT_S`."""
        now = time.monotonic()
        key = (host, state.invocation)
        hit = self._served.get(key)
        if hit is None or (hit[1].done() and (hit[1].exception() is not None or not hit[1].result())
                           and now - hit[0] > VERSION_RETRY_S):
            self._served = {k: v for k, v in self._served.items() if k[0] != host}  # older invocations: gone
            fut = asyncio.ensure_future(self._served_read(host, state.engine))
            self._served[key] = hit = (now, fut)
        try:
            return await asyncio.shield(hit[1])
        except (TimeoutError, HostError, OSError):
            return ""

    async def _served_read(self, host: str, engine: str) -> str:
        return await asyncio.wait_for(self._ops(host).served_version(engine), VERSION_READ_TIMEOUT_S)

    async def _read(self, host: str) -> UnitState:
        ops = self._ops(host)
        st = await asyncio.wait_for(ops.state(), SSH_READ_TIMEOUT_S)
        text = await asyncio.wait_for(ops.read_unit(), SSH_READ_TIMEOUT_S)
        argv = read_exec_start(text).argv
        engine = detect_engine(argv)
        return UnitState(st.active_state, st.sub_state, st.n_restarts, config_label(argv),
                         engine="" if engine == "unknown" else engine, invocation=st.invocation_id)


def _last_result(run: RunSummary) -> LastResult:
    measured = sorted((lv for lv in run.levels if lv.decode_tok_s is not None), key=lambda lv: lv.concurrency)
    if not measured:
        return LastResult(run.id, run.label, ok=run.ok)
    lv = measured[0]
    return LastResult(run.id, run.label, ok=run.ok, concurrency=lv.concurrency, decode_tok_s=lv.decode_tok_s,
                      decode_ci=lv.decode_ci)
