"""Alembic environment: always runs on a connection handed in by `services.store.db` (async-safe)."""

from __future__ import annotations

from alembic import context

from services.store import Base

target_metadata = Base.metadata


def run_migrations() -> None:
    connection = context.config.attributes.get("connection")
    if connection is None:
        raise RuntimeError("run migrations through `pitcrew migrate` (services.store.db.Database.migrate)")
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


run_migrations()
