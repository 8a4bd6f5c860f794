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
from typing import Any

from bot.app import build_core
from bot.health import HealthServer
from bot.logs import configure_logging
from bot.settings import ConfigError, Settings
from bot.slack import missing_settings_message
from bot.slack_home import HomeTab
from bot.slack_serve import run_slack
from handlers.auth import has_granted_role

log = logging.getLogger(__name__)

NO_ADMIN_MESSAGE = """No one may run anything but read-only commands: policy.roles grants no operator or admin.
Roles fail closed (everyone not listed is a viewer). Grant a role by Slack user id or by Slack user group
handle, in the environment:
  export PITCREW_POLICY__ROLES='{"*": "viewer", "U012ABCDEF": "admin", "gpu-oncall": "operator"}'
or in the config file (--config pitcrew.toml):
  [policy]
  roles = { "*" = "viewer", "U012ABCDEF" = "admin", "gpu-oncall" = "operator" }
A user id is in the person's Slack profile (⋮ -> Copy member ID); a group is its handle without the @.
Roles: viewer < experimenter (try, sweep, bench) < operator (rollback, kill-stale, incidents) < admin."""


async def serve(settings: Settings) -> None:
    missing = settings.slack.missing()
    if missing:
        raise ConfigError(missing_settings_message(missing))
    if not has_granted_role(settings.policy.roles):
        raise ConfigError(NO_ADMIN_MESSAGE)
    configure_logging(json=settings.log_json)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    async with AsyncExitStack() as stack:
        core = await build_core(settings, stack, transport="slack")
        health = HealthServer(core)
        core.router.domain.health = health.summary
        stack.callback(health.lag.stop)

        async def ready(bot: Any) -> None:
            core.extras["delivery_stats"] = bot.stats
            core.extras["slack_pacer"] = getattr(bot.client, "pacer", None)
            status = core.router.domain.status
            if status is not None:
                home = HomeTab(bot.client, fleet=lambda: status.hosts(core.hosts.names()))
                home.attach(bot)
                home.subscribe(core.bus)
                stack.push_async_callback(home.aclose)
            if settings.metrics_port is not None or settings.slack.mode == "socket":
                runner = await health.start(port=settings.metrics_port or settings.slack.http_port)
                stack.push_async_callback(runner.cleanup)

        await run_slack(settings.slack, dispatch=core.router.dispatch, store=core.store, stop=stop,
                        bot_ready=ready, wake=core.wake, holder=core.holder, audit=core.audit)
        log.info("stopping")
