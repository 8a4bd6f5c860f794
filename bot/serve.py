"""`pitcrew serve`: the Slack app around the core, with a health and metrics endpoint.

Socket Mode by default (needs the app token), HTTP mode with `PITCREW_SLACK__MODE=http`. With no
Slack tokens it says exactly what is missing and how to get it, and points to `pitcrew demo`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from contextlib import AsyncExitStack

from bot.app import build_core
from bot.health import HealthServer
from bot.settings import ConfigError, Settings

log = logging.getLogger(__name__)


async def serve(settings: Settings) -> None:
    from bot.slack import SlackBot, build_web_client, missing_settings_message

    missing = settings.slack.missing()
    if missing:
        raise ConfigError(missing_settings_message(missing))
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    async with AsyncExitStack() as stack:
        core = await build_core(settings, stack, transport="slack")
        slack = settings.slack
        assert slack.bot_token is not None
        client = build_web_client(slack.bot_token.get_secret_value(), base_url=slack.api_base_url)
        secret = slack.signing_secret.get_secret_value() if slack.signing_secret else None
        bot = SlackBot(client=client, dispatch=core.router.dispatch, store=core.store,
                       signing_secret=secret if slack.mode == "http" else None, command=slack.command,
                       wake=core.wake, holder=core.holder)
        await bot.start()
        stack.push_async_callback(bot.aclose)
        core.extras["delivery_stats"] = bot.stats
        health = HealthServer(core)
        core.router.domain.health = health.summary
        if slack.mode == "http":
            port = await bot.serve_http(slack.http_host, slack.http_port)
            log.info("Slack HTTP mode on %s:%d", slack.http_host, port)
        else:
            assert slack.app_token is not None
            await bot.start_socket_mode(slack.app_token.get_secret_value())
            log.info("Slack Socket Mode connected")
        if settings.metrics_port is not None or slack.mode == "socket":
            runner = await health.start(port=settings.metrics_port or slack.http_port)
            stack.push_async_callback(runner.cleanup)
        await stop.wait()
        log.info("stopping")



