"""The outbox: every outgoing chat message is stored here first, then delivered at most once.

A message has a logical key (``job:42``); each send under a key gets the next version, and the
pair is the idempotency key a transport passes to the chat service. Delivery claims due items
(``FOR UPDATE SKIP LOCKED`` on PostgreSQL, so several bot processes can share the queue), and
for each key only the oldest pending version, so edits of one message arrive in order. An item
whose thread parent has no transport reference yet waits for it. `mark_sent` stores which
transport message a key became (`chat_messages`), so a restarted bot edits the same message.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import and_, func, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from services.store.db import Database
from services.store.models import ChatMessageRef, OutboxMessage, utcnow


@dataclass(frozen=True)
class MessageRef:
    """Where a logical message lives on a transport."""

    transport: str
    channel: str
    ts: str
    thread_ts: str | None = None


@dataclass(frozen=True)
class OutboxItem:
    """One pending send of a logical message."""

    id: int
    transport: str
    key: str
    version: int
    channel: str
    thread_of: str | None
    payload: dict[str, Any]
    attempts: int
    idempotency_key: str


@dataclass(frozen=True)
class OutboxDraft:
    """A message to enqueue inside someone else's transaction (e.g. a job's end with its end state)."""

    transport: str
    key: str
    channel: str
    payload: dict[str, Any]
    thread_of: str | None = None


def _due(transport: str, now: datetime) -> tuple[Any, ...]:
    """The items of `transport` that a claim may take now: pending, due, and not claimed (or their claim lapsed)."""
    return (OutboxMessage.transport == transport, OutboxMessage.state == "pending",
            OutboxMessage.next_attempt_at <= now,
            (OutboxMessage.claimed_until.is_(None)) | (OutboxMessage.claimed_until < now))


class OutboxStore:
    """Enqueue, claim, and settle outgoing messages; remember the transport refs of keys."""

    def __init__(self, db: Database) -> None:
        self._db = db

    @property
    def db(self) -> Database:
        return self._db

    async def enqueue(self, *, transport: str, key: str, channel: str, payload: dict[str, Any],
                      thread_of: str | None = None) -> OutboxItem:
        for _ in range(5):
            try:
                async with self._db.session() as s:
                    current = await s.scalar(
                        select(func.max(OutboxMessage.version)).where(
                            OutboxMessage.transport == transport, OutboxMessage.key == key))
                    version = (current or 0) + 1
                    row = OutboxMessage(transport=transport, key=key, version=version,
                                        idempotency_key=f"{transport}:{key}#{version}", channel=channel,
                                        thread_of=thread_of, payload=payload, state="pending",
                                        attempts=0, next_attempt_at=utcnow())
                    s.add(row)
                    await s.flush()
                    return _item(row)
            except IntegrityError:
                continue  # another writer took this version; take the next
        raise RuntimeError(f"could not enqueue a message for {key}")

    async def enqueue_in(self, s: AsyncSession, draft: OutboxDraft) -> None:
        """Enqueue `draft` in the caller's transaction: it commits (or not) with the caller's other writes. A
        concurrent writer of the same key makes the transaction fail (IntegrityError); the caller retries."""
        current = await s.scalar(select(func.max(OutboxMessage.version)).where(
            OutboxMessage.transport == draft.transport, OutboxMessage.key == draft.key))
        version = (current or 0) + 1
        s.add(OutboxMessage(transport=draft.transport, key=draft.key, version=version,
                            idempotency_key=f"{draft.transport}:{draft.key}#{version}", channel=draft.channel,
                            thread_of=draft.thread_of, payload=draft.payload, state="pending", attempts=0,
                            next_attempt_at=utcnow()))
        await s.flush()

    async def claim(self, *, transport: str, holder: str, limit: int = 20,
                    lease_s: float = 30.0) -> list[OutboxItem]:
        now = utcnow()
        if not await self._any_due(transport, now):
            return []
        await self._supersede(transport, now)
        async with self._db.session() as s:
            older = OutboxMessage.__table__.alias("older")
            has_older = (
                select(older.c.id)
                .where(older.c.transport == OutboxMessage.transport, older.c.key == OutboxMessage.key,
                       older.c.state == "pending", older.c.version < OutboxMessage.version)
                .exists()
            )
            stmt = (
                select(OutboxMessage)
                .where(*_due(transport, now), ~has_older)
                .order_by(OutboxMessage.id)
                .limit(limit * 2)
            )
            if not self._db.is_sqlite:
                stmt = stmt.with_for_update(skip_locked=True, of=OutboxMessage)
            rows = list((await s.execute(stmt)).scalars().all())
            parents = {r.thread_of for r in rows if r.thread_of}
            known: set[str] = set()
            if parents:
                known = set((await s.execute(
                    select(ChatMessageRef.key).where(ChatMessageRef.transport == transport,
                                                     ChatMessageRef.key.in_(parents)))).scalars())
            picked = [r for r in rows if not r.thread_of or r.thread_of in known][:limit]
            until = now + timedelta(seconds=lease_s)
            for r in picked:
                r.claimed_by = holder
                r.claimed_until = until
            return [_item(r) for r in picked]

    async def _any_due(self, transport: str, now: datetime) -> bool:
        """Whether any item of `transport` is pending, due and unclaimed: one indexed read (`ix_outbox_due`), so an
        idle delivery loop's poll takes no write transaction (on SQLite the claim's two took the process's write
        lock five times a second per loop; ~3.6 ms of CPU a poll, most of an idle bot's)."""
        async with self._db.sessions() as s:
            found = await s.scalar(select(OutboxMessage.id).where(*_due(transport, now)).limit(1))
        return found is not None

    async def _supersede(self, transport: str, now: datetime) -> None:
        """Edits of a message that is already posted coalesce: only the newest pending version is sent."""
        newer = OutboxMessage.__table__.alias("newer")
        posted = select(ChatMessageRef.id).where(ChatMessageRef.transport == OutboxMessage.transport,
                                                 ChatMessageRef.key == OutboxMessage.key).exists()
        has_newer = select(newer.c.id).where(
            newer.c.transport == OutboxMessage.transport, newer.c.key == OutboxMessage.key,
            newer.c.state == "pending", newer.c.version > OutboxMessage.version).exists()
        async with self._db.session() as s:
            await s.execute(update(OutboxMessage).where(
                OutboxMessage.transport == transport, OutboxMessage.state == "pending",
                (OutboxMessage.claimed_until.is_(None)) | (OutboxMessage.claimed_until < now),
                posted, has_newer).values(state="superseded").execution_options(synchronize_session=False))

    async def mark_sent(self, item: OutboxItem, ref: MessageRef) -> None:
        async with self._db.session() as s:
            await s.execute(update(OutboxMessage).where(OutboxMessage.id == item.id).values(
                state="sent", sent_at=utcnow(), claimed_until=None, attempts=item.attempts + 1))
            existing = await s.scalar(select(ChatMessageRef).where(
                ChatMessageRef.transport == item.transport, ChatMessageRef.key == item.key))
            if existing is None:
                s.add(ChatMessageRef(transport=item.transport, key=item.key, channel=ref.channel,
                                     ts=ref.ts, thread_ts=ref.thread_ts))
            elif (existing.channel, existing.ts, existing.thread_ts) != (ref.channel, ref.ts, ref.thread_ts):
                # the message was posted again (e.g. the old one was deleted): later edits go to the new one
                existing.channel, existing.ts, existing.thread_ts = ref.channel, ref.ts, ref.thread_ts

    async def mark_failed(self, item: OutboxItem, *, error: str, retry_in_s: float,
                          give_up: bool = False) -> None:
        async with self._db.session() as s:
            await s.execute(update(OutboxMessage).where(OutboxMessage.id == item.id).values(
                state="failed" if give_up else "pending", attempts=item.attempts + 1,
                last_error=error[:2000], claimed_until=None,
                next_attempt_at=utcnow() + timedelta(seconds=max(0.0, retry_in_s))))

    async def ref_for(self, transport: str, key: str) -> MessageRef | None:
        async with self._db.sessions() as s:
            row = await s.scalar(select(ChatMessageRef).where(
                ChatMessageRef.transport == transport, ChatMessageRef.key == key))
            return None if row is None else MessageRef(row.transport, row.channel, row.ts, row.thread_ts)

    async def key_for_ref(self, transport: str, channel: str, ts: str) -> str | None:
        async with self._db.sessions() as s:
            key: str | None = await s.scalar(select(ChatMessageRef.key).where(and_(
                ChatMessageRef.transport == transport, ChatMessageRef.channel == channel,
                ChatMessageRef.ts == ts)))
            return key

    async def depth(self, transport: str | None = None) -> int:
        async with self._db.sessions() as s:
            stmt = select(func.count()).select_from(OutboxMessage).where(OutboxMessage.state == "pending")
            if transport:
                stmt = stmt.where(OutboxMessage.transport == transport)
            return int(await s.scalar(stmt) or 0)


def _item(r: OutboxMessage) -> OutboxItem:
    return OutboxItem(id=r.id, transport=r.transport, key=r.key, version=r.version, channel=r.channel,
                      thread_of=r.thread_of, payload=dict(r.payload), attempts=r.attempts,
                      idempotency_key=r.idempotency_key)
