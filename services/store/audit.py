"""The audit log: append-only. The API offers `record` and `query` — nothing updates or deletes.

Each event: time, actor (transport user id and display name), channel, the raw command text,
the parsed intent, action, target host, detail JSON, outcome. `record` takes the caller's
session so the audit row commits in the same transaction as the change it describes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from services.redact import redact_obj
from services.store.db import Database
from services.store.models import AuditEvent, utcnow


@dataclass(frozen=True)
class AuditActor:
    """Who did it, and through which transport and channel."""

    id: str
    name: str = ""
    transport: str = ""
    channel: str = ""


SYSTEM = AuditActor(id="pitcrew", name="pitcrew", transport="internal")


@dataclass(frozen=True)
class AuditRecord:
    """A recorded audit event (read-only view)."""

    id: int
    at: datetime
    actor_id: str
    actor_name: str
    transport: str
    channel: str
    command_text: str
    intent: Mapping[str, Any]
    action: str
    host: str | None
    detail: Mapping[str, Any]
    outcome: str

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "at": self.at.isoformat(), "actor_id": self.actor_id,
                "actor_name": self.actor_name, "transport": self.transport, "channel": self.channel,
                "command_text": self.command_text, "intent": dict(self.intent), "action": self.action,
                "host": self.host, "detail": dict(self.detail), "outcome": self.outcome}


@dataclass(frozen=True)
class AuditQuery:
    host: str | None = None
    since: datetime | None = None
    actions: Sequence[str] = ()
    actor_id: str | None = None
    limit: int = 1000
    newest_first: bool = False


class AuditLog:
    """Record and query audit events. There is deliberately no update or delete."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def record(self, session: AsyncSession | None, *, actor: AuditActor, action: str,
                     host: str | None = None, command_text: str = "",
                     intent: Mapping[str, Any] | None = None, detail: Mapping[str, Any] | None = None,
                     outcome: str = "ok") -> None:
        """Add one event; inside `session`'s transaction when given, else in its own."""
        row = AuditEvent(at=utcnow(), actor_id=actor.id, actor_name=actor.name,
                         transport=actor.transport, channel=actor.channel,
                         command_text=str(redact_obj(command_text)),
                         intent=dict(redact_obj(dict(intent or {}))),
                         action=action, host=host, detail=dict(redact_obj(dict(detail or {}))),
                         outcome=outcome)
        if session is not None:
            session.add(row)
            return
        async with self._db.session() as s:
            s.add(row)

    async def query(self, q: AuditQuery | None = None) -> list[AuditRecord]:
        q = q or AuditQuery()
        stmt = select(AuditEvent)
        if q.host:
            stmt = stmt.where(AuditEvent.host == q.host)
        if q.since:
            stmt = stmt.where(AuditEvent.at >= q.since)
        if q.actions:
            stmt = stmt.where(AuditEvent.action.in_(list(q.actions)))
        if q.actor_id:
            stmt = stmt.where(AuditEvent.actor_id == q.actor_id)
        order = AuditEvent.id.desc() if q.newest_first else AuditEvent.id.asc()
        stmt = stmt.order_by(order).limit(q.limit)
        async with self._db.sessions() as s:
            rows = (await s.execute(stmt)).scalars().all()
            return [_view(r) for r in rows]


def _view(r: AuditEvent) -> AuditRecord:
    return AuditRecord(id=r.id, at=r.at, actor_id=r.actor_id, actor_name=r.actor_name,
                       transport=r.transport, channel=r.channel, command_text=r.command_text,
                       intent=dict(r.intent or {}), action=r.action, host=r.host,
                       detail=dict(r.detail or {}), outcome=r.outcome)
