"""The services the command handlers use, as typed Protocols: the handlers → services seam.

Owns `Domain` (what the composition root hands the router) and one Protocol per service a
handler calls — only the methods handlers call, with the services' own public value types — so
`mypy --strict` checks every call across the seam and a test can hand in a small stand-in.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from handlers.contract import Outbox
from services.doctor import DoctorReport
from services.experiments import Preview, RunSummary
from services.incidents import IncidentInfo
from services.status import HostStatus
from services.store import AuditActor, SeenKeys
from services.units import Revision, UnitOps

__all__ = [
    "AuditPort",
    "DoctorPort",
    "Domain",
    "ExperimentsPort",
    "IncidentsPort",
    "JobView",
    "JobsPort",
    "ResultsPort",
    "RevisionsPort",
    "SchedulesPort",
    "StatusPort",
]


class JobView(Protocol):
    """A job as handlers read it (the job runner's read-only job record)."""

    @property
    def id(self) -> int: ...
    @property
    def kind(self) -> str: ...
    @property
    def host(self) -> str: ...
    @property
    def state(self) -> str: ...
    @property
    def requested_by(self) -> str: ...
    @property
    def requested_by_name(self) -> str: ...
    @property
    def channel(self) -> str: ...
    @property
    def command_text(self) -> str: ...
    @property
    def params(self) -> dict[str, Any]: ...
    @property
    def summary(self) -> str: ...
    @property
    def result(self) -> dict[str, Any]: ...


class JobsPort(Protocol):
    async def submit(self, *, kind: str, host: str, params: dict[str, Any], actor: AuditActor,
                     command_text: str, needs_confirmation: bool) -> JobView: ...
    async def get(self, job_id: int) -> JobView: ...
    async def position(self, job_id: int) -> int: ...
    async def eta_s(self, host: str, kind: str, position: int) -> float | None: ...
    async def step_seconds(self, host: str, names: tuple[str, ...], limit: int = 200) -> dict[str, float]: ...
    async def step_details(self, job_id: int, name: str) -> list[dict[str, Any]]: ...
    async def pending_confirmation(self, actor_id: str, channel: str) -> JobView | None: ...
    async def confirm(self, job_id: int, actor: AuditActor) -> JobView: ...
    async def cancel(self, job_id: int, actor: AuditActor, *, may_cancel_others: bool) -> str: ...
    async def queue(self, host: str | None = None) -> Sequence[JobView]: ...
    async def recent(self, host: str | None = None, limit: int = 10) -> Sequence[JobView]: ...


class ExperimentsPort(Protocol):
    def ops(self, host: str) -> UnitOps: ...
    async def preview(self, host: str, changes: dict[str, str], *,
                      levels: tuple[int, ...] | None = None,
                      host_busy: Callable[[], Awaitable[bool]] | None = None) -> Preview: ...


class ResultsPort(Protocol):
    async def for_job(self, job_id: int) -> list[RunSummary]: ...
    async def previous(self, host: str, model: str, *, before_id: int | None = None) -> RunSummary | None: ...
    async def repeats(self, host: str, model: str, *, limit: int = 200) -> dict[str, dict[int, list[float]]]: ...


class RevisionsPort(Protocol):
    async def last_known_good(self, host: str, unit: str) -> Revision | None: ...


class IncidentsPort(Protocol):
    async def get(self, incident_id: int) -> IncidentInfo: ...
    async def recent_lines(self, target: int | str, n: int = 40, *, unit: str | None = None) -> list[str]: ...
    async def mute(self, incident_id: int, minutes: float, actor: AuditActor | str) -> IncidentInfo: ...
    async def acknowledge(self, incident_id: int, actor: AuditActor | str) -> IncidentInfo: ...


class SchedulesPort(Protocol):
    async def add(self, *, trigger: dict[str, Any], spec: str, command_text: str, actor: AuditActor) -> int: ...
    async def list(self) -> list[tuple[str, ...]]: ...
    async def remove(self, schedule_id: int, actor: AuditActor) -> None: ...


class AuditPort(Protocol):
    async def record(self, session: None, *, actor: AuditActor, action: str, host: str | None = None,
                     command_text: str = "", intent: Mapping[str, Any] | None = None,
                     detail: Mapping[str, Any] | None = None, outcome: str = "ok") -> None: ...


class StatusPort(Protocol):
    async def hosts(self, names: list[str]) -> list[HostStatus]: ...


class DoctorPort(Protocol):
    async def run(self, names: Sequence[str] | None = None) -> DoctorReport: ...


@dataclass
class Domain:
    """The services the command handlers use, built by the composition root."""

    jobs: JobsPort
    experiments: ExperimentsPort
    audit: AuditPort
    results: ResultsPort
    revisions: RevisionsPort
    host_names: list[str]
    outbox: Outbox
    incidents: IncidentsPort | None = None
    schedules: SchedulesPort | None = None
    status: StatusPort | None = None
    doctor: DoctorPort | None = None  # the read-only host checks (`doctor`)
    health: Callable[[], str] | None = None  # the bot's own health figures as one line, if served
    seen: SeenKeys | None = None  # the per-user rate limit shared by every bot process (PostgreSQL)
