"""Storage and records: the database (SQLite or PostgreSQL), the models and migrations, the audit log, the
outbox of chat messages, leases and schedules.

The names below are the package's public API: other packages import only these."""

from services.store.audit import SYSTEM, AuditActor, AuditLog, AuditQuery, AuditRecord
from services.store.db import Database
from services.store.leases import LeaseInfo, Leases, db_after, db_now
from services.store.models import (
    Base,
    BenchResult,
    BenchRun,
    Incident,
    IncidentEvent,
    Job,
    JobStep,
    JournalCursor,
    Lease,
    UnitRevision,
    utcnow,
)
from services.store.outbox import MessageRef, OutboxDraft, OutboxItem, OutboxStore
from services.store.schedules import ScheduleInfo, Schedules, build_trigger, missed_runs
from services.store.seen import SeenKeys, Window

__all__ = [
    "SYSTEM",
    "AuditActor",
    "AuditLog",
    "AuditQuery",
    "AuditRecord",
    "Base",
    "BenchResult",
    "BenchRun",
    "Database",
    "Incident",
    "IncidentEvent",
    "Job",
    "JobStep",
    "JournalCursor",
    "Lease",
    "LeaseInfo",
    "Leases",
    "MessageRef",
    "OutboxDraft",
    "OutboxItem",
    "OutboxStore",
    "ScheduleInfo",
    "Schedules",
    "SeenKeys",
    "UnitRevision",
    "Window",
    "build_trigger",
    "db_after",
    "db_now",
    "missed_runs",
    "utcnow",
]
