"""Socket Mode end to end against the fake Slack's websocket, `run_slack` from settings (HTTP mode
and /healthz), the missing-token message, the OAuth guard, and the manifest's coverage."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import aiohttp
import pytest
from support.fake_slack import FakeSlack

from bot.settings import ConfigError, SlackSettings
from bot.slack import SlackBot
from bot.slack_client import build_web_client
from bot.slack_serve import run_slack
from handlers.contract import ChatMessage, Reply
from services.store.db import Database
from services.store.outbox import OutboxStore

MANIFEST = Path(__file__).resolve().parents[3] / "slack" / "manifest.yaml"


async def test_socket_mode_slash_command_is_acked_and_answered(sqlite_db: Database, fake: FakeSlack) -> None:
    seen: list[ChatMessage] = []

    async def dispatch(msg: ChatMessage) -> Reply:
        seen.append(msg)
        return Reply(text=f"socket says {msg.text}")

    client = build_web_client(fake.token, base_url=fake.base_url, timeout_s=5)
    bot = SlackBot(client=client, dispatch=dispatch, store=OutboxStore(sqlite_db))
    await bot.start()
    try:
        await bot.start_socket_mode("xapp-fake-token")
        await fake.wait_for(lambda f: bool(f.sockets), timeout=5)
        t0 = time.monotonic()
        env = await fake.socket_send("slash_commands", {
            "team_id": "T0001", "channel_id": "C1", "user_id": "U1", "user_name": "alice",
            "command": "/pitcrew", "text": "status", "trigger_id": "sock-1", "api_app_id": "A1",
            "response_url": "http://127.0.0.1:9/r"})
        await fake.wait_for(lambda f: any(a.get("envelope_id") == env for a in f.socket_acks), timeout=3)
        assert time.monotonic() - t0 < 3.0
        await fake.wait_for(lambda f: any("socket says status" in m.text for m in f.messages), timeout=5)
        env2 = await fake.socket_send("events_api", {
            "team_id": "T0001", "api_app_id": "A1", "type": "event_callback", "event_id": "EvS1",
            "event": {"type": "app_mention", "user": "U2", "channel": "C1", "text": "<@UBOT> history",
                      "ts": f"{time.time():.6f}"}})
        await fake.wait_for(lambda f: any(a.get("envelope_id") == env2 for a in f.socket_acks), timeout=3)
        await fake.wait_for(lambda f: any("socket says history" in m.text for m in f.messages), timeout=5)
        assert [m.text for m in seen] == ["status", "history"]
    finally:
        await bot.aclose()


async def test_run_slack_http_mode_from_settings(sqlite_db: Database, fake: FakeSlack) -> None:
    settings = SlackSettings(mode="http", bot_token=fake.token, signing_secret="s3cret",
                             api_base_url=fake.base_url, http_host="127.0.0.1", http_port=0)
    stop = asyncio.Event()
    ready: list[SlackBot] = []

    async def on_ready(bot: SlackBot) -> None:
        ready.append(bot)

    async def dispatch(msg: ChatMessage) -> Reply:
        return Reply(text="ok")

    task = asyncio.create_task(run_slack(settings, dispatch=dispatch, store=OutboxStore(sqlite_db),
                                         stop=stop, bot_ready=on_ready))
    try:
        for _ in range(100):
            if ready and ready[0].http_port:
                break
            await asyncio.sleep(0.02)
        port = ready[0].http_port
        async with aiohttp.ClientSession() as s, s.get(f"http://127.0.0.1:{port}/healthz") as resp:
            assert resp.status == 200
            assert (await resp.json())["outbox_depth"] == 0
        async with aiohttp.ClientSession() as s, s.post(f"http://127.0.0.1:{port}/slack/events",
                                                        data=b"command=%2Fpitcrew&text=status") as resp:
            assert resp.status == 401  # unsigned
    finally:
        stop.set()
        await asyncio.wait_for(task, 10)


async def test_missing_tokens_say_what_is_needed() -> None:
    with pytest.raises(ConfigError) as err:
        await run_slack(SlackSettings(mode="socket"), dispatch=None, store=None,  # type: ignore[arg-type]
                        stop=asyncio.Event())
    text = str(err.value)
    assert "PITCREW_SLACK__BOT_TOKEN" in text and "PITCREW_SLACK__APP_TOKEN" in text
    assert "manifest.yaml" in text and "pitcrew demo" in text


async def test_oauth_env_does_not_switch_bolt_to_oauth(sqlite_db: Database, fake: FakeSlack,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SLACK_CLIENT_ID", "111.222")
    monkeypatch.setenv("SLACK_CLIENT_SECRET", "shh")

    async def dispatch(msg: ChatMessage) -> Reply:
        return Reply(text="ok")

    bot = SlackBot(client=build_web_client(fake.token, base_url=fake.base_url), dispatch=dispatch,
                   store=OutboxStore(sqlite_db), signing_secret="x")
    assert bot.app.oauth_flow is None
    import os
    assert os.environ["SLACK_CLIENT_ID"] == "111.222"  # restored


def test_manifest_declares_what_the_code_uses() -> None:
    text = MANIFEST.read_text()
    for needed in ("command: /pitcrew", "commands", "app_mentions:read", "chat:write", "channels:history",
                   "groups:history", "im:history", "files:write", "users:read", "- app_mention",
                   "- message.channels", "- message.groups", "- message.im", "is_enabled: true",
                   "socket_mode_enabled: true", "messages_tab_enabled: true"):
        assert needed in text, needed
