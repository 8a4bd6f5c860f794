"""Status: what the fleet and the bot look like right now, as read-only queries with typed answers.

`FleetStatus` answers "how is each host?" (unit state over SSH, shared and cached briefly, plus
the job, incident and result records); `HealthQuery` answers "how is the bot's own store?"
(jobs by state, open incidents, outbox depth). Views render the value objects; nothing here
formats chat text.

The names below are the package's public API: other packages import only these."""

from services.status.fleet import (
    STATUS_HOST_TTL_S,
    FleetStatus,
    HostStatus,
    IncidentBrief,
    LastResult,
    OpenIncidents,
    UnitState,
)
from services.status.health import HealthCounts, HealthQuery

__all__ = [
    "STATUS_HOST_TTL_S",
    "FleetStatus",
    "HealthCounts",
    "HealthQuery",
    "HostStatus",
    "IncidentBrief",
    "LastResult",
    "OpenIncidents",
    "UnitState",
]
