"""With the database unreachable, a command gets a clear answer (not a reference id) and nothing crashes."""

from __future__ import annotations

from router_kit import make_router, msg

from handlers.auth import Policy
from services.store.db import Database

ADMIN = Policy(roles={"*": "admin"})  # roles fail closed; these tests act as an admin


async def test_database_down_gives_a_clear_answer() -> None:
    db = Database("postgresql+asyncpg://postgres@127.0.0.1:1/test")  # nothing listens on port 1
    try:
        router, outbox, _ = await make_router(db, ADMIN)
        reply = await router.dispatch(msg("queue"))
        assert "database is not answering" in reply.text
        assert "reference" not in reply.text and outbox.sent == []
    finally:
        await db.close()
