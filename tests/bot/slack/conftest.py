"""Fixtures for the Slack transport tests: a fake Slack Web API, a SQLite outbox, and a running
bot in HTTP mode on a loopback port (see slack_kit.Harness)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable

import aiohttp
import pytest
from slack_kit import SECRET, Harness
from support.fake_slack import FakeSlack

from bot.slack import SlackBot
from bot.slack_client import build_web_client
from handlers.contract import ChatMessage, Reply
from services.store.db import Database
from services.store.outbox import OutboxStore


@pytest.fixture
async def fake() -> AsyncIterator[FakeSlack]:
    f = FakeSlack()
    f.add_user("U1", "alice")
    f.add_user("U2", "bob")
    f.add_channel("C1", "gpu-ops")
    await f.start()
    try:
        yield f
    finally:
        await f.stop()


Dispatcher = Callable[[ChatMessage], Awaitable[Reply]]


@pytest.fixture
async def make_harness(sqlite_db: Database,
                       fake: FakeSlack) -> AsyncIterator[Callable[..., Awaitable[Harness]]]:
    made: list[Harness] = []

    async def make(dispatch: Callable[[Harness, ChatMessage], Awaitable[Reply]], *,
                   timeout_s: float = 5.0) -> Harness:
        store = OutboxStore(sqlite_db)
        client = build_web_client(fake.token, base_url=fake.base_url, timeout_s=timeout_s)
        holder: list[Harness] = []

        async def wrapped(msg: ChatMessage) -> Reply:
            holder[0].seen.append(msg)
            return await dispatch(holder[0], msg)

        bot = SlackBot(client=client, dispatch=wrapped, store=store, signing_secret=SECRET)
        await bot.start()
        port = await bot.serve_http("127.0.0.1", 0)
        h = Harness(bot=bot, fake=fake, port=port, store=store, session=aiohttp.ClientSession())
        holder.append(h)
        made.append(h)
        return h

    yield make
    for h in made:
        if h.session is not None:
            await h.session.close()
        await h.bot.aclose(drain_s=5)
        await asyncio.sleep(0)
