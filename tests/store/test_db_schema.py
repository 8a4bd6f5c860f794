"""The schema: migrations create it on both engines, agree with the models, and are idempotent."""

from __future__ import annotations

from datetime import UTC, datetime

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import inspect, select

from services.store.db import Database
from services.store.models import Base, Job, JournalCursor, Lease


async def test_migrations_create_every_table(db: Database) -> None:
    async with db.engine.connect() as conn:
        names = await conn.run_sync(lambda c: set(inspect(c).get_table_names()))
    assert set(Base.metadata.tables) <= names
    assert "alembic_version" in names


async def test_models_and_migrations_agree(db: Database) -> None:
    def diff(conn):  # type: ignore[no-untyped-def]
        ctx = MigrationContext.configure(conn, opts={"compare_type": True})
        return compare_metadata(ctx, Base.metadata)

    async with db.engine.connect() as conn:
        changes = await conn.run_sync(diff)
    assert changes == []


async def test_migrate_twice_changes_nothing(db: Database) -> None:
    async with db.session() as s:
        s.add(JournalCursor(host="gpu-1", unit="sglang.service", cursor="s=1;i=2"))
    await db.migrate()
    async with db.session() as s:
        rows = (await s.execute(select(JournalCursor))).scalars().all()
    assert [r.cursor for r in rows] == ["s=1;i=2"]


async def test_datetimes_come_back_aware_utc(db: Database) -> None:
    when = datetime(2026, 3, 9, 14, 2, 3, 123000, tzinfo=UTC)
    async with db.session() as s:
        s.add(Lease(name="host:gpu-1", holder="bot-a", expires_at=when))
    async with db.session() as s:
        lease = (await s.execute(select(Lease))).scalar_one()
    assert lease.expires_at == when
    assert lease.expires_at.tzinfo is not None


async def test_json_columns_round_trip(db: Database) -> None:
    params = {"changes": {"--speculative-num-steps": "10"}, "levels": [1, 4, 16], "nested": {"a": None}}
    async with db.session() as s:
        job = Job(kind="try", host="gpu-1", state="queued", requested_by="U1", params=params)
        s.add(job)
    async with db.session() as s:
        got = (await s.execute(select(Job))).scalar_one()
    assert got.params == params
    assert got.id >= 1


async def test_a_second_process_on_one_sqlite_file_is_refused(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import subprocess
    import sys

    import pytest

    from services.errors import Conflict

    url = f"sqlite+aiosqlite:///{tmp_path / 'one.db'}"
    first = Database(url)
    first.lock_single_process()
    try:
        with pytest.raises(Conflict, match="another pitcrew process is already using"):
            Database(url).lock_single_process()
        code = ("import sys; from services.store.db import Database\n"
                "try:\n    Database(sys.argv[1]).lock_single_process()\n"
                "except Exception as e:\n    print(e); sys.exit(3)\n")
        p = subprocess.run([sys.executable, "-c", code, url], capture_output=True, text=True, timeout=30)
        assert p.returncode == 3 and "use PostgreSQL for several replicas" in p.stdout
    finally:
        await first.close()
    second = Database(url)
    second.lock_single_process()  # free again once the first one closed
    await second.close()
