"""The database schema: every table pitcrew keeps, as SQLAlchemy 2 declarative models.

Conventions: constraint names from one naming convention (Alembic batch mode on SQLite needs
them), datetimes stored and returned as aware UTC (`UTCDateTime`), JSON columns that are JSONB
on PostgreSQL (`JSONType`). Migrations in `migrations/` must agree with these models (a test
runs autogenerate and expects no difference).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column
from sqlalchemy.types import TypeDecorator

NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

JSONType = JSON().with_variant(JSONB(), "postgresql")
# SQLite only auto-increments INTEGER PRIMARY KEY; PostgreSQL gets BIGINT identities.
BigId = BigInteger().with_variant(Integer(), "sqlite")


def utcnow() -> datetime:
    return datetime.now(UTC)


class UTCDateTime(TypeDecorator[datetime]):
    """Aware UTC datetimes on every backend (SQLite drops the zone; we put it back)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given to a UTC column")
        return value.astimezone(UTC)

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)


class Job(Base):
    """One experiment, sweep, benchmark, rollback or kill-stale request and its state."""

    __tablename__ = "jobs"
    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    kind: Mapped[str] = mapped_column(String(32))
    host: Mapped[str] = mapped_column(String(64), index=True)
    state: Mapped[str] = mapped_column(String(24), index=True)
    requested_by: Mapped[str] = mapped_column(String(64))
    requested_by_name: Mapped[str] = mapped_column(String(128), default="")
    transport: Mapped[str] = mapped_column(String(16), default="console")
    channel: Mapped[str] = mapped_column(String(64), default="")
    command_text: Mapped[str] = mapped_column(Text, default="")
    params: Mapped[dict[str, Any]] = mapped_column(JSONType, default=dict)
    parent_id: Mapped[int | None] = mapped_column(ForeignKey("jobs.id"), nullable=True)
    revision_before_id: Mapped[int | None] = mapped_column(ForeignKey("unit_revisions.id"), nullable=True)
    revision_after_id: Mapped[int | None] = mapped_column(ForeignKey("unit_revisions.id"), nullable=True)
    cancel_requested: Mapped[bool] = mapped_column(Boolean, default=False)
    summary: Mapped[str] = mapped_column(Text, default="")
    error: Mapped[str] = mapped_column(Text, default="")
    result: Mapped[dict[str, Any]] = mapped_column(JSONType, default=dict)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    started_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)


class JobStep(Base):
    """One step of a job's pipeline with its timing and output."""

    __tablename__ = "job_steps"
    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    job_id: Mapped[int] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(48))
    state: Mapped[str] = mapped_column(String(16))
    started_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    output: Mapped[str] = mapped_column(Text, default="")
    detail: Mapped[dict[str, Any]] = mapped_column(JSONType, default=dict)


class UnitRevision(Base):
    """A systemd unit file as seen or deployed on a host (full text, hash, who, known-good)."""

    __tablename__ = "unit_revisions"
    __table_args__ = (UniqueConstraint("host", "unit", "sha256"),)
    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    host: Mapped[str] = mapped_column(String(64), index=True)
    unit: Mapped[str] = mapped_column(String(200))
    sha256: Mapped[str] = mapped_column(String(64))
    text: Mapped[str] = mapped_column(Text)
    source: Mapped[str] = mapped_column(String(16), default="observed")
    created_by: Mapped[str] = mapped_column(String(128), default="")
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    known_good: Mapped[bool] = mapped_column(Boolean, default=False)
    known_good_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    # the engine its ExecStart= launches: "sglang", "vllm" or "unknown" ("" for rows older than the column)
    engine: Mapped[str] = mapped_column(String(16), default="", server_default="")


class BenchRun(Base):
    """One benchmark of a host's server at several concurrency levels."""

    __tablename__ = "bench_runs"
    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    job_id: Mapped[int | None] = mapped_column(ForeignKey("jobs.id"), nullable=True, index=True)
    host: Mapped[str] = mapped_column(String(64), index=True)
    model: Mapped[str] = mapped_column(String(256), default="")
    label: Mapped[str] = mapped_column(String(256), default="")
    revision_id: Mapped[int | None] = mapped_column(ForeignKey("unit_revisions.id"), nullable=True)
    flags: Mapped[dict[str, Any]] = mapped_column(JSONType, default=dict)
    capacity: Mapped[dict[str, Any]] = mapped_column(JSONType, default=dict)
    raw: Mapped[dict[str, Any]] = mapped_column(JSONType, default=dict)
    ok: Mapped[bool] = mapped_column(Boolean, default=True)
    started_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)


class BenchResult(Base):
    """The figures of one concurrency level of a benchmark run."""

    __tablename__ = "bench_results"
    __table_args__ = (UniqueConstraint("run_id", "concurrency"),)
    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("bench_runs.id", ondelete="CASCADE"))
    concurrency: Mapped[int] = mapped_column(Integer)
    requests: Mapped[int] = mapped_column(Integer, default=0)
    failed: Mapped[int] = mapped_column(Integer, default=0)
    output_tok_s: Mapped[float | None] = mapped_column(Float, nullable=True)
    decode_tok_s_p50: Mapped[float | None] = mapped_column(Float, nullable=True)
    # bootstrap 95 % interval of the median over the level's requests (services.bench.noise)
    decode_tok_s_ci_lo: Mapped[float | None] = mapped_column(Float, nullable=True)
    decode_tok_s_ci_hi: Mapped[float | None] = mapped_column(Float, nullable=True)
    ttft_ms_p50: Mapped[float | None] = mapped_column(Float, nullable=True)
    ttft_ms_p99: Mapped[float | None] = mapped_column(Float, nullable=True)
    tpot_ms_p50: Mapped[float | None] = mapped_column(Float, nullable=True)
    accept_len: Mapped[float | None] = mapped_column(Float, nullable=True)
    accept_rate: Mapped[float | None] = mapped_column(Float, nullable=True)
    reliable: Mapped[bool] = mapped_column(Boolean, default=True)
    data: Mapped[dict[str, Any]] = mapped_column(JSONType, default=dict)


class Incident(Base):
    """One incident per (host, unit, cause, configuration hash), with its chat message."""

    __tablename__ = "incidents"
    __table_args__ = (Index("ix_incidents_key", "host", "unit", "cause", "config_hash"),)
    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    host: Mapped[str] = mapped_column(String(64))
    unit: Mapped[str] = mapped_column(String(200))
    cause: Mapped[str] = mapped_column(String(48))
    config_hash: Mapped[str] = mapped_column(String(64), default="")
    state: Mapped[str] = mapped_column(String(16), index=True)
    summary: Mapped[str] = mapped_column(Text, default="")
    diagnosis: Mapped[dict[str, Any]] = mapped_column(JSONType, default=dict)
    restarts: Mapped[int] = mapped_column(Integer, default=0)
    opened_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    last_event_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    resolved_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    muted_until: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    acknowledged_by: Mapped[str | None] = mapped_column(String(128), nullable=True)
    resolution: Mapped[str] = mapped_column(Text, default="")


class IncidentEvent(Base):
    """Something that happened to an incident: a restart, an update, a mute, a resolution."""

    __tablename__ = "incident_events"
    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    incident_id: Mapped[int] = mapped_column(ForeignKey("incidents.id", ondelete="CASCADE"), index=True)
    at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    kind: Mapped[str] = mapped_column(String(32))
    detail: Mapped[dict[str, Any]] = mapped_column(JSONType, default=dict)


class JournalCursor(Base):
    """The cursor of the last journal entry processed per host and unit."""

    __tablename__ = "journal_cursors"
    host: Mapped[str] = mapped_column(String(64), primary_key=True)
    unit: Mapped[str] = mapped_column(String(200), primary_key=True)
    cursor: Mapped[str] = mapped_column(Text)
    entries: Mapped[int] = mapped_column(BigInteger, default=0)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class ChatMessageRef(Base):
    """Which transport message a logical key (job:42, incident:7) became."""

    __tablename__ = "chat_messages"
    __table_args__ = (
        UniqueConstraint("transport", "key"),
        Index("ix_chat_messages_ts", "transport", "channel", "ts"),
    )
    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    transport: Mapped[str] = mapped_column(String(16))
    key: Mapped[str] = mapped_column(String(128))
    channel: Mapped[str] = mapped_column(String(64))
    ts: Mapped[str] = mapped_column(String(64))
    thread_ts: Mapped[str | None] = mapped_column(String(64), nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class AuditEvent(Base):
    """Append-only record of every command, change, result and incident action."""

    __tablename__ = "audit_events"
    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, index=True)
    actor_id: Mapped[str] = mapped_column(String(64), default="")
    actor_name: Mapped[str] = mapped_column(String(128), default="")
    transport: Mapped[str] = mapped_column(String(16), default="")
    channel: Mapped[str] = mapped_column(String(64), default="")
    command_text: Mapped[str] = mapped_column(Text, default="")
    intent: Mapped[dict[str, Any]] = mapped_column(JSONType, default=dict)
    action: Mapped[str] = mapped_column(String(48), index=True)
    host: Mapped[str | None] = mapped_column(String(64), nullable=True, index=True)
    detail: Mapped[dict[str, Any]] = mapped_column(JSONType, default=dict)
    outcome: Mapped[str] = mapped_column(String(24), default="ok")


class Schedule(Base):
    """A recurring command ("every day at 02:00 sweep steps 1..5 on gpu-1")."""

    __tablename__ = "schedules"
    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    spec: Mapped[str] = mapped_column(String(128))
    trigger: Mapped[dict[str, Any]] = mapped_column(JSONType, default=dict)
    command_text: Mapped[str] = mapped_column(Text)
    channel: Mapped[str] = mapped_column(String(64), default="")
    transport: Mapped[str] = mapped_column(String(16), default="console")
    created_by: Mapped[str] = mapped_column(String(128), default="")
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    enabled: Mapped[bool] = mapped_column(Boolean, default=True)
    last_fired_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)


class OutboxMessage(Base):
    """An outgoing chat message, delivered at most once per (key, version), retried with backoff."""

    __tablename__ = "outbox"
    __table_args__ = (
        UniqueConstraint("idempotency_key"),
        Index("ix_outbox_due", "transport", "state", "next_attempt_at"),
    )
    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    transport: Mapped[str] = mapped_column(String(16))
    key: Mapped[str] = mapped_column(String(128))
    version: Mapped[int] = mapped_column(Integer)
    idempotency_key: Mapped[str] = mapped_column(String(160))
    channel: Mapped[str] = mapped_column(String(64))
    thread_of: Mapped[str | None] = mapped_column(String(128), nullable=True)
    payload: Mapped[dict[str, Any]] = mapped_column(JSONType)
    state: Mapped[str] = mapped_column(String(16), default="pending")
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    next_attempt_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    claimed_by: Mapped[str | None] = mapped_column(String(128), nullable=True)
    claimed_until: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    last_error: Mapped[str] = mapped_column(Text, default="")
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    sent_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)


class Lease(Base):
    """Who holds a host (for jobs), a journal follower or the scheduler; expires without heartbeat."""

    __tablename__ = "leases"
    name: Mapped[str] = mapped_column(String(128), primary_key=True)
    holder: Mapped[str] = mapped_column(String(128))
    job_id: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    acquired_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    heartbeat_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime)
    fence: Mapped[str] = mapped_column(String(32), default="", server_default="")  # token of this acquisition


class SeenKey(Base):
    """A key seen by some replica until it expires: a chat event or interaction id already answered, or a
    per-user command counter for one rate-limit window (shared by every bot process)."""

    __tablename__ = "seen_keys"
    key: Mapped[str] = mapped_column(String(200), primary_key=True)
    count: Mapped[int] = mapped_column(Integer, default=1)
    holder: Mapped[str] = mapped_column(String(128), default="")
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime, index=True)
