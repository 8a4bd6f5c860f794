"""Running the Slack transport from settings: `run_slack()` for `pitcrew serve`, and the message
that says exactly which tokens are missing and how to get them."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from bot.settings import ConfigError, SlackSettings
from bot.slack import Dispatch, SlackBot, missing_settings_message
from bot.slack_client import build_web_client
from services.store import AuditLog, OutboxStore

log = logging.getLogger(__name__)


async def run_slack(slack: SlackSettings, *, dispatch: Dispatch, store: OutboxStore, stop: asyncio.Event,
                    bot_ready: Callable[[SlackBot], Awaitable[None]] | None = None,
                    wake: asyncio.Event | None = None, holder: str | None = None,
                    audit: AuditLog | None = None) -> None:
    """Run the Slack transport from settings until ``stop`` is set (Socket Mode or HTTP mode).

    ``bot_ready`` is called once the bot is built and started, e.g. to hand ``bot.outbox`` to the
    job runner and incident notifier so their messages wake the delivery loop at once.
    """
    missing = slack.missing()
    if missing:
        raise ConfigError(missing_settings_message(missing))
    assert slack.bot_token is not None
    client = build_web_client(slack.bot_token.get_secret_value(), base_url=slack.api_base_url)
    secret = slack.signing_secret.get_secret_value() if slack.signing_secret else None
    bot = SlackBot(client=client, dispatch=dispatch, store=store,
                   signing_secret=secret if slack.mode == "http" else None, command=slack.command,
                   wake=wake, holder=holder, audit=audit)
    await bot.start()
    try:
        if bot_ready is not None:
            await bot_ready(bot)
        if slack.mode == "http":
            port = await bot.serve_http(slack.http_host, slack.http_port)
            log.info("Slack HTTP mode on %s:%d (POST /slack/events, GET /healthz)", slack.http_host, port)
        else:
            assert slack.app_token is not None
            await bot.start_socket_mode(slack.app_token.get_secret_value())
            log.info("Slack Socket Mode connected")
        await stop.wait()
    finally:
        await bot.aclose()
