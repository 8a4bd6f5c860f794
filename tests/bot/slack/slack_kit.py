"""Helpers for the Slack tests: Slack's v0 request signature and a harness around a running bot."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import time
import urllib.parse
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from support.fake_slack import FakeSlack

from bot.slack import SlackBot
from handlers.contract import ChatMessage
from services.store.outbox import OutboxStore

SECRET = "8f742231b10e8888abcd99yyyzzz85a5"


def sign(body: str, ts: int, secret: str = SECRET) -> str:
    base = f"v0:{ts}:{body}".encode()
    return "v0=" + hmac.new(secret.encode(), base, hashlib.sha256).hexdigest()


@dataclass
class Harness:
    """A running bot (HTTP mode) with the fake Slack and a recording dispatch."""

    bot: SlackBot
    fake: FakeSlack
    port: int
    store: OutboxStore
    seen: list[ChatMessage] = field(default_factory=list)
    session: aiohttp.ClientSession | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/slack/events"

    async def wait_ref(self, key: str, within_s: float = 5.0) -> None:
        """Wait until the outbox recorded where ``key`` was posted."""
        deadline = time.monotonic() + within_s
        while await self.store.ref_for("slack", key) is None:
            assert time.monotonic() < deadline, f"{key} never recorded"
            await asyncio.sleep(0.02)

    async def post(self, body: str, content_type: str, *, ts: int | None = None,
                   signature: str | None = None) -> tuple[int, str, float]:
        ts = int(time.time()) if ts is None else ts
        headers = {"Content-Type": content_type, "X-Slack-Request-Timestamp": str(ts),
                   "X-Slack-Signature": signature or sign(body, ts)}
        assert self.session is not None
        t0 = time.perf_counter()
        async with self.session.post(self.url, data=body.encode(), headers=headers) as resp:
            text = await resp.text()
            return resp.status, text, time.perf_counter() - t0

    async def slash(self, text: str, *, user: str = "U1", name: str = "alice", channel: str = "C1",
                    trigger: str = "trig-1", response_url: str = "http://127.0.0.1:9/resp",
                    **kw: Any) -> tuple[int, str, float]:
        body = urllib.parse.urlencode({
            "token": "legacy", "team_id": "T0001", "team_domain": "fake", "channel_id": channel,
            "channel_name": "gpu-ops", "user_id": user, "user_name": name, "command": "/pitcrew",
            "text": text, "api_app_id": "A1", "response_url": response_url,
            "trigger_id": trigger})
        return await self.post(body, "application/x-www-form-urlencoded", **kw)

    async def event(self, event: dict[str, Any], *, event_id: str = "Ev1",
                    **kw: Any) -> tuple[int, str, float]:
        body = json.dumps({"token": "legacy", "team_id": "T0001", "api_app_id": "A1", "event": event,
                           "type": "event_callback", "event_id": event_id, "event_time": int(time.time())})
        return await self.post(body, "application/json", **kw)

    async def click(self, message: dict[str, Any], action: dict[str, Any], *, user: str = "U2",
                    channel: str = "C1", **kw: Any) -> tuple[int, str, float]:
        payload = {"type": "block_actions", "team": {"id": "T0001", "domain": "fake"},
                   "user": {"id": user, "username": "bob", "team_id": "T0001"},
                   "api_app_id": "A1", "trigger_id": f"click-{time.time_ns()}",
                   "container": {"type": "message", "message_ts": message["ts"], "channel_id": channel,
                                 "is_ephemeral": False},
                   "channel": {"id": channel, "name": "gpu-ops"}, "message": message,
                   "actions": [action], "response_url": "http://127.0.0.1:9/resp"}
        body = urllib.parse.urlencode({"payload": json.dumps(payload)})
        return await self.post(body, "application/x-www-form-urlencoded", **kw)
