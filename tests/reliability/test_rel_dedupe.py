"""Cross-replica dedupe (issue 13): two bot processes' Slack listeners on one PostgreSQL database. A Slack
event retried with the same event_id, and an interaction delivered twice, sent alternately to the two
replicas, are answered once; the per-user rate limit holds across replicas; seen keys expire."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import time
import urllib.parse
from collections.abc import AsyncIterator

import aiohttp
import pytest
from rel_kit import PG_URL, drop_pg_database, make_pg_database
from support.fake_slack import FakeSlack

from bot.slack import SlackBot
from bot.slack_client import build_web_client
from handlers.auth import RateLimiter
from handlers.contract import ChatMessage, Reply
from services.errors import RateLimited
from services.store import SeenKeys
from services.store.db import Database
from services.store.outbox import OutboxStore

SECRET = "8f742231b10e8888abcd99yyyzzz85a5"


@pytest.fixture
async def pg() -> AsyncIterator[Database]:
    if not PG_URL:
        pytest.skip("set PITCREW_TEST_PG_URL (two replicas need PostgreSQL)")
    url = await make_pg_database()
    db = Database(url)
    await db.migrate()
    try:
        yield db
    finally:
        await db.close()
        await drop_pg_database(url)


async def _post(session: aiohttp.ClientSession, port: int, body: str, content_type: str) -> int:
    ts = int(time.time())
    sig = "v0=" + hmac.new(SECRET.encode(), f"v0:{ts}:{body}".encode(), hashlib.sha256).hexdigest()
    async with session.post(f"http://127.0.0.1:{port}/slack/events", data=body.encode(),
                            headers={"Content-Type": content_type, "X-Slack-Request-Timestamp": str(ts),
                                     "X-Slack-Signature": sig}) as r:
        return r.status


async def test_replayed_events_sent_alternately_to_two_replicas_are_answered_once(pg: Database) -> None:
    fake = FakeSlack()
    fake.add_user("U1", "alice")
    fake.add_channel("C1", "gpu-ops")
    await fake.start()
    seen: list[tuple[int, str]] = []
    bots: list[SlackBot] = []
    ports: list[int] = []
    session = aiohttp.ClientSession()
    try:
        for i in range(2):  # two replicas: own Bolt app, own process-local memory, one database
            db = Database(pg.url)

            async def dispatch(msg: ChatMessage, i: int = i) -> Reply:
                seen.append((i, msg.text))
                return Reply(text=f"ok {msg.text}")

            bot = SlackBot(client=build_web_client(fake.token, base_url=fake.base_url, timeout_s=5),
                           dispatch=dispatch, store=OutboxStore(db), signing_secret=SECRET)
            await bot.start()
            ports.append(await bot.serve_http("127.0.0.1", 0))
            bots.append(bot)
        mention = {"type": "app_mention", "channel": "C1", "user": "U1", "text": "<@UBOT> status",
                   "ts": f"{time.time():.6f}"}
        for n in range(6):  # Slack's retries of one event, alternating between the replicas
            body = json.dumps({"token": "t", "team_id": "T0001", "api_app_id": "A1", "event": mention,
                               "type": "event_callback", "event_id": "EvReplayed", "event_time": int(time.time())})
            assert await _post(session, ports[n % 2], body, "application/json") == 200
        # a button clicked once but delivered to both replicas (same trigger id)
        message = {"ts": "1.1", "text": "Job 1", "blocks": []}
        payload = {"type": "block_actions", "team": {"id": "T0001"}, "user": {"id": "U1", "username": "alice"},
                   "api_app_id": "A1", "trigger_id": "trig-replayed",
                   "container": {"type": "message", "message_ts": "1.1", "channel_id": "C1"},
                   "channel": {"id": "C1"}, "message": message, "response_url": "http://127.0.0.1:9/r",
                   "actions": [{"action_id": "pitcrew_cmd:0", "value": "queue", "text": {"text": "Queue"}}]}
        body = urllib.parse.urlencode({"payload": json.dumps(payload)})
        for n in range(4):
            assert await _post(session, ports[n % 2], body, "application/x-www-form-urlencoded") == 200
        # a different event is answered as usual
        other = json.dumps({"token": "t", "team_id": "T0001", "api_app_id": "A1", "event": {**mention, "text":
                            "<@UBOT> queue", "ts": f"{time.time():.6f}"}, "type": "event_callback",
                            "event_id": "EvOther", "event_time": int(time.time())})
        assert await _post(session, ports[1], other, "application/json") == 200
        async with asyncio.timeout(10):
            while len(seen) < 3:  # noqa: ASYNC110
                await asyncio.sleep(0.05)
        await asyncio.sleep(1.0)  # any duplicate would have arrived by now
    finally:
        await session.close()
        for bot in bots:
            await bot.aclose(drain_s=2)
            await bot.store.db.close()
        await fake.stop()
    assert sorted(t for _, t in seen) == ["queue", "queue", "status"], seen


async def test_rate_limit_is_shared_by_replicas_and_windows_expire(pg: Database) -> None:
    dbs = [Database(pg.url) for _ in range(2)]
    limiters = [RateLimiter(3, shared=SeenKeys(db, holder=f"r{i}")) for i, db in enumerate(dbs)]
    try:
        for n in range(3):
            await limiters[n % 2].check_shared("U7")
        with pytest.raises(RateLimited, match="at most 3 commands a minute"):
            await limiters[1].check_shared("U7")
        with pytest.raises(RateLimited):
            await limiters[0].check_shared("U7")
        await limiters[0].check_shared("U8")  # another user has their own count
    finally:
        for db in dbs:
            await db.close()


async def test_seen_keys_expire_by_the_database_clock(pg: Database) -> None:
    keys = [SeenKeys(pg, holder="a"), SeenKeys(pg, holder="b")]
    assert await keys[0].first("slack:Ev1", 0.5)
    assert not await keys[1].first("slack:Ev1", 0.5)
    await asyncio.sleep(0.7)
    assert await keys[1].first("slack:Ev1", 0.5)  # expired: a new delivery is a new event
    w1 = await keys[0].count("rate:U1", 0.5)
    w2 = await keys[1].count("rate:U1", 0.5)
    assert (w1.count, w2.count) == (1, 2) and w1.ends_at == w2.ends_at
    await asyncio.sleep(0.7)
    assert (await keys[0].count("rate:U1", 0.5)).count == 1
    await asyncio.sleep(0.7)
    assert await keys[0].purge() >= 2
