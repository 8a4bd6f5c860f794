"""Incidents: restart-loop detection over followed journals, one incident per host/unit/cause/config,
their lifecycle (mute, ack, resolve) and the automatic-rollback request.

The names below are the package's public API: other packages import only these."""

from services.incidents.types import (
    RESOLVED,
    AutoRollbackRequested,
    IncidentAcknowledged,
    IncidentInfo,
    IncidentMuted,
    IncidentOpened,
    IncidentPolicy,
    IncidentResolved,
    IncidentUnmuted,
    IncidentUpdated,
)
from services.incidents.watch import IncidentWatch, build_incident_watch

__all__ = [
    "RESOLVED",
    "AutoRollbackRequested",
    "IncidentAcknowledged",
    "IncidentInfo",
    "IncidentMuted",
    "IncidentOpened",
    "IncidentPolicy",
    "IncidentResolved",
    "IncidentUnmuted",
    "IncidentUpdated",
    "IncidentWatch",
    "build_incident_watch",
]
