"""Outbox ordering/idempotency and database leases, on both engines."""

from __future__ import annotations

import asyncio

from services.store.db import Database
from services.store.leases import Leases
from services.store.outbox import MessageRef, OutboxStore


async def test_versions_deliver_in_order_and_threads_wait_for_parent(db: Database) -> None:
    box = OutboxStore(db)
    a1 = await box.enqueue(transport="slack", key="job:1", channel="C1", payload={"text": "queued"})
    a2 = await box.enqueue(transport="slack", key="job:1", channel="C1", payload={"text": "running"})
    t1 = await box.enqueue(transport="slack", key="job:1:table", channel="C1", payload={"text": "t"},
                           thread_of="job:1")
    assert (a1.version, a2.version) == (1, 2)
    assert a1.idempotency_key != a2.idempotency_key
    first = await box.claim(transport="slack", holder="w1")
    assert [i.id for i in first] == [a1.id]  # newer version and the thread reply wait
    assert await box.claim(transport="slack", holder="w2") == []  # claimed items are not handed out twice
    await box.mark_sent(first[0], MessageRef("slack", "C1", "111.1"))
    second = await box.claim(transport="slack", holder="w1")
    assert sorted(i.id for i in second) == sorted([a2.id, t1.id])
    assert await box.ref_for("slack", "job:1") == MessageRef("slack", "C1", "111.1")
    assert await box.key_for_ref("slack", "C1", "111.1") == "job:1"


async def test_failed_item_is_retried_later_not_lost(db: Database) -> None:
    box = OutboxStore(db)
    item = await box.enqueue(transport="slack", key="incident:1", channel="C1", payload={"text": "x"})
    (claimed,) = await box.claim(transport="slack", holder="w1")
    await box.mark_failed(claimed, error="ratelimited", retry_in_s=0.2)
    assert await box.claim(transport="slack", holder="w1") == []
    assert await box.depth("slack") == 1
    await asyncio.sleep(0.3)
    (again,) = await box.claim(transport="slack", holder="w1")
    assert again.id == item.id and again.attempts == 1


async def test_lease_is_exclusive_and_lapses_without_heartbeat(db: Database) -> None:
    leases = Leases(db, ttl_s=0.3)
    assert await leases.acquire("host:gpu-1", "bot-a", job_id=7)
    assert not await leases.acquire("host:gpu-1", "bot-b")
    assert await leases.renew("host:gpu-1", "bot-a")
    assert not await leases.renew("host:gpu-1", "bot-b")
    await asyncio.sleep(0.4)
    assert await leases.acquire("host:gpu-1", "bot-b")
    assert not await leases.renew("host:gpu-1", "bot-a")
    info = await leases.get("host:gpu-1")
    assert info is not None and info.holder == "bot-b"
    await leases.release("host:gpu-1", "bot-b")
    assert await leases.get("host:gpu-1") is None


async def test_concurrent_acquires_have_one_winner(db: Database) -> None:
    leases = Leases(db, ttl_s=30)
    results = await asyncio.gather(*(leases.acquire("host:gpu-9", f"bot-{i}") for i in range(10)))
    assert sum(results) == 1


async def test_edits_of_a_posted_message_coalesce_to_the_newest(db: Database) -> None:
    box = OutboxStore(db)
    await box.enqueue(transport="slack", key="job:5", channel="C1", payload={"text": "v1"})
    (first,) = await box.claim(transport="slack", holder="w1")
    await box.mark_sent(first, MessageRef("slack", "C1", "5.5"))
    for i in range(2, 7):
        await box.enqueue(transport="slack", key="job:5", channel="C1", payload={"text": f"v{i}"})
    got = await box.claim(transport="slack", holder="w1")
    assert [i.payload["text"] for i in got] == ["v6"]
    assert await box.depth("slack") == 1


async def test_a_message_posted_again_moves_its_ref(db: Database) -> None:
    box = OutboxStore(db)
    await box.enqueue(transport="slack", key="job:6", channel="C1", payload={"text": "v1"})
    (first,) = await box.claim(transport="slack", holder="w1")
    await box.mark_sent(first, MessageRef("slack", "C1", "1.0"))
    await box.enqueue(transport="slack", key="job:6", channel="C1", payload={"text": "v2"})
    (second,) = await box.claim(transport="slack", holder="w1")
    await box.mark_sent(second, MessageRef("slack", "C1", "2.0"))  # the old message was gone: posted anew
    assert await box.ref_for("slack", "job:6") == MessageRef("slack", "C1", "2.0")


async def test_a_claim_with_nothing_due_takes_no_write_transaction(db: Database) -> None:
    """An idle delivery loop polls `claim` five times a second: with nothing due (an item waiting out its retry
    delay, one already sent) it reads and writes nothing; once the item is due the claim hands it out."""
    from sqlalchemy import event

    box = OutboxStore(db)
    sent = await box.enqueue(transport="slack", key="job:1", channel="C1", payload={"text": "sent"})
    (claimed,) = await box.claim(transport="slack", holder="w1")
    await box.mark_sent(claimed, MessageRef("slack", "C1", "1.1"))
    waiting = await box.enqueue(transport="slack", key="job:2", channel="C1", payload={"text": "later"})
    (claimed,) = await box.claim(transport="slack", holder="w1")
    await box.mark_failed(claimed, error="ratelimited", retry_in_s=0.5)
    statements: list[str] = []

    def seen(_conn, _cursor, statement: str, *_args) -> None:  # type: ignore[no-untyped-def]
        statements.append(statement.split(None, 1)[0].upper())

    event.listen(db.engine.sync_engine, "before_cursor_execute", seen)
    try:
        for _ in range(3):
            assert await box.claim(transport="slack", holder="w2") == []
        assert statements and set(statements) == {"SELECT"}, statements
        await asyncio.sleep(0.6)
        statements.clear()
        (again,) = await box.claim(transport="slack", holder="w2")
    finally:
        event.remove(db.engine.sync_engine, "before_cursor_execute", seen)
    assert again.id == waiting.id and again.id != sent.id
    assert {"UPDATE", "BEGIN"} & set(statements)  # the due item is claimed in a write transaction
