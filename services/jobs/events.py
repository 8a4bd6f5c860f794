"""Past-tense events about jobs, published on the event bus for whoever tells the humans."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class JobRef:
    """What a listener needs to address a job's messages."""

    id: int
    kind: str
    host: str
    transport: str
    channel: str
    requested_by: str
    requested_by_name: str
    command_text: str


@dataclass(frozen=True)
class JobQueued:
    job: JobRef
    position: int  # 0 = runs next
    eta_s: float | None
    preview: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class JobAwaitingConfirmation:
    job: JobRef
    preview: dict[str, Any]
    position: int
    eta_s: float | None


@dataclass(frozen=True)
class JobStarted:
    job: JobRef


@dataclass(frozen=True)
class JobProgressed:
    job: JobRef
    phase: str
    detail: str = ""
    steps_done: tuple[str, ...] = ()


@dataclass(frozen=True)
class JobResultsReady:
    """A benchmark table is ready (after a try, a bench, or one trial of a sweep)."""

    job: JobRef
    run_id: int
    previous_run_id: int | None
    verdict: str
    partial: bool = False


@dataclass(frozen=True)
class JobFinished:
    """The job ended: state is succeeded, failed, cancelled, refused or interrupted."""

    job: JobRef
    state: str
    summary: str
    detail: dict[str, Any] = field(default_factory=dict)
