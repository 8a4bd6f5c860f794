"""Value types of the incident lifecycle: the policy, the incident view, and the events published.

`IncidentPolicy` holds the thresholds (loop = `threshold` failed starts within `window_s`; resolution
after `stable_window_s` without a restart; auto-rollback only within `auto_rollback_within_s` of
pitcrew's own deploy). `IncidentInfo` is what subscribers and the router see of an incident; the
events carry it so a chat view can render without reading the database.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime

# Incident states in the `incidents.state` column.
OPEN = "open"
ACKED = "acknowledged"
RESOLVED = "resolved"
ACTIVE_STATES = (OPEN, ACKED)


@dataclass(frozen=True)
class IncidentPolicy:
    """When a restart loop is declared, when it is resolved, and what pitcrew does about it."""

    threshold: int = 2
    window_s: float = 600.0
    stable_window_s: float = 600.0
    own_action_window_s: float = 10.0
    auto_rollback: bool = False
    auto_rollback_within_s: float = 1800.0
    evidence_timeout_s: float = 6.0
    lines_kept: int = 2000
    tick_s: float = 1.0

    def scaled(self, time_scale: float) -> IncidentPolicy:
        """The same policy with its time windows multiplied (the simulated host runs faster)."""
        k = max(time_scale, 1e-4)
        return replace(self, window_s=max(self.window_s * k, 2.0),
                       stable_window_s=max(self.stable_window_s * k, 0.5),
                       own_action_window_s=max(self.own_action_window_s * k, 0.5),
                       auto_rollback_within_s=max(self.auto_rollback_within_s * k, 5.0),
                       tick_s=min(self.tick_s, max(self.stable_window_s * k / 5, 0.05)))


@dataclass(frozen=True)
class IncidentInfo:
    """One incident as the rest of pitcrew sees it."""

    id: int
    host: str
    unit: str
    cause: str
    config_hash: str
    state: str
    summary: str
    confidence: float
    evidence: tuple[str, ...]
    recommendation: str
    config_change: str | None
    ran_before: str | None
    stale_pids: tuple[int, ...]
    restarts: int
    opened_at: datetime
    last_event_at: datetime
    resolved_at: datetime | None
    muted_until: datetime | None
    acknowledged_by: str | None
    resolution: str
    auto_rollback: bool = False

    @property
    def key(self) -> str:
        """The chat message key of the incident's alert."""
        return f"incident:{self.id}"

    def muted(self, now: datetime) -> bool:
        return self.muted_until is not None and self.muted_until > now


@dataclass(frozen=True)
class IncidentOpened:
    incident: IncidentInfo


@dataclass(frozen=True)
class IncidentUpdated:
    """A new restart of an open incident (`line`: the exit line of that restart)."""

    incident: IncidentInfo
    restarts: int
    line: str
    seq: int


@dataclass(frozen=True)
class IncidentResolved:
    incident: IncidentInfo
    duration_s: float
    fixed_by: str


@dataclass(frozen=True)
class IncidentMuted:
    incident: IncidentInfo
    actor: str
    until: datetime


@dataclass(frozen=True)
class IncidentUnmuted:
    incident: IncidentInfo


@dataclass(frozen=True)
class IncidentAcknowledged:
    incident: IncidentInfo
    actor: str


@dataclass(frozen=True)
class AutoRollbackRequested:
    """Policy `auto_rollback`: the loop began soon after pitcrew's own deploy; roll that deploy back."""

    host: str
    unit: str
    incident_id: int
    deploy_at: datetime
    deploy_detail: str
