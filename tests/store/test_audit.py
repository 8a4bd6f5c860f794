"""The audit log is append-only: record and query, nothing else, and writes join the caller's transaction."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from services.store.audit import AuditActor, AuditLog, AuditQuery
from services.store.db import Database
from services.store.models import Job

ALICE = AuditActor(id="U1", name="alice", transport="slack", channel="C1")


async def test_record_and_query_filters(db: Database) -> None:
    audit = AuditLog(db)
    await audit.record(None, actor=ALICE, action="try", host="gpu-1", command_text="try 10 steps",
                       intent={"kind": "try", "changes": {"steps": "10"}}, detail={"job": 1})
    await audit.record(None, actor=ALICE, action="status", host="gpu-2", command_text="status gpu-2")
    got = await audit.query(AuditQuery(host="gpu-1"))
    assert [(r.action, r.host, r.command_text) for r in got] == [("try", "gpu-1", "try 10 steps")]
    assert got[0].intent == {"kind": "try", "changes": {"steps": "10"}}
    assert got[0].actor_name == "alice" and got[0].channel == "C1"
    assert got[0].at.tzinfo is not None
    future = datetime.now(UTC) + timedelta(days=1)
    assert await audit.query(AuditQuery(since=future)) == []
    assert len(await audit.query()) == 2


async def test_api_offers_no_update_or_delete(db: Database) -> None:
    audit = AuditLog(db)
    public = {n for n in dir(audit) if not n.startswith("_")}
    assert public == {"record", "query"}
    await audit.record(None, actor=ALICE, action="rollback", host="gpu-1")
    (rec,) = await audit.query()
    with pytest.raises(AttributeError):
        rec.action = "nothing"  # type: ignore[misc]
    assert (await audit.query())[0].action == "rollback"


async def test_audit_write_commits_with_the_change_or_not_at_all(db: Database) -> None:
    audit = AuditLog(db)

    class Boom(Exception):
        pass

    with pytest.raises(Boom):
        async with db.session() as s:
            s.add(Job(kind="try", host="gpu-1", state="queued", requested_by="U1"))
            await audit.record(s, actor=ALICE, action="try", host="gpu-1")
            raise Boom
    assert await audit.query() == []
    async with db.session() as s:
        s.add(Job(kind="try", host="gpu-1", state="queued", requested_by="U1"))
        await audit.record(s, actor=ALICE, action="try", host="gpu-1")
    assert len(await audit.query()) == 1


async def test_secrets_never_reach_the_audit_table(db: Database) -> None:
    audit = AuditLog(db)
    await audit.record(None, actor=ALICE, action="note", command_text="use xoxb-1234567890-abcdefghijk",
                       detail={"line": "Authorization: Bearer sk-abcdefghijklmnopqrstuvwx"})
    (rec,) = await audit.query()
    assert "xoxb-1234567890" not in rec.command_text
    assert "sk-abcdefghijklmnop" not in str(rec.detail)
