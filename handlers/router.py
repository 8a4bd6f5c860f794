"""The router: the one entry point from every transport, and the one place errors become user text.

`Router.dispatch(msg)` parses the text, checks the sender's role, the channel's hosts and the rate
limit, records the command in the audit log (accepted or refused), runs its handler, and returns
the `Reply`. Expected errors (`PitcrewError`) answer with their message; anything else answers
with a short reference id that is in the log, never a traceback.
"""

from __future__ import annotations

import asyncio
import difflib
import logging
import uuid
from dataclasses import dataclass
from typing import Any

from handlers import grammar
from handlers.auth import Policy, RateLimiter, audit_actor, check_channel_host, require
from handlers.command_handlers import HANDLERS
from handlers.commands import Command
from handlers.contract import ChatMessage, Outbox, Reply
from services.errors import NotAuthorized, PitcrewError, RateLimited, UserInputError
from services.store import AuditActor, AuditLog

log = logging.getLogger(__name__)


@dataclass
class Domain:
    """The services the command handlers use, built by the composition root."""

    jobs: Any
    experiments: Any
    audit: AuditLog
    results: Any
    revisions: Any
    host_names: list[str]
    outbox: Outbox
    incidents: Any = None
    schedules: Any = None
    health: Any = None  # callable returning the bot's own health figures, or None


class Router:
    """Parse, authorize, audit, dispatch; turn every error into text."""

    def __init__(self, domain: Domain, policy: Policy) -> None:
        self.domain = domain
        self.policy = policy
        self.limiter = RateLimiter(policy.commands_per_minute)
        # host -> (read at, shared read of its unit state): concurrent `status` callers share one SSH read
        self.host_states: dict[str, tuple[float, asyncio.Future[tuple[str, str, str]]]] = {}
        self._handlers = HANDLERS

    def resolve_host(self, msg: ChatMessage, host: str | None) -> str:
        """The host a command is about: named, or the only one this channel may use."""
        names = self.domain.host_names
        if host is not None:
            if host not in names:
                close = difflib.get_close_matches(host, names, n=1, cutoff=0.6)
                hint = close[0] if close else None
                raise UserInputError(f"unknown host {host!r}" + (f"; did you mean {hint}?" if hint else
                                                                 f"; known hosts: {', '.join(names) or 'none'}"))
            check_channel_host(msg.channel, host, self.policy)
            return host
        allowed = [h for h in names if h in self.policy.channel_hosts.get(msg.channel, names)]
        if len(allowed) == 1:
            return allowed[0]
        if not allowed:
            raise NotAuthorized("no host may be driven from this channel")
        raise UserInputError(f"which host? add `on <host>` — one of {', '.join(allowed)}")

    async def dispatch(self, msg: ChatMessage) -> Reply:
        actor = audit_actor(msg)
        cmd: Command | None = None
        outcome, note = "ok", ""
        try:
            self.limiter.check(msg.actor.user_id)
            cmd = grammar.parse(msg.text)
            role = require(msg.actor, cmd, self.policy)
            handler = self._handlers[type(cmd)]
            reply: Reply = await handler(self, msg, cmd, role)
        except (NotAuthorized, RateLimited) as e:
            outcome, note = "refused", str(e)
            reply = Reply(text=f"Not done: {e}", tone="error", ephemeral=True)
        except PitcrewError as e:
            outcome, note = "rejected", str(e)
            reply = Reply(text=str(e), tone="error" if not isinstance(e, UserInputError) else "warning",
                          ephemeral=isinstance(e, UserInputError))
        except Exception:
            ref = uuid.uuid4().hex[:8]
            log.exception("command failed [ref %s]: %r", ref, msg.text[:200])
            outcome, note = "error", f"ref {ref}"
            reply = Reply(text=f"Something went wrong on our side (reference {ref}); the details are in the "
                               "bot's log.", tone="error")
        try:
            await self._audit(actor, msg, cmd, outcome, note)
        except Exception as e:  # the answer stands; the missing audit row is in the log
            log.error("could not audit %r (%s): %s", msg.text[:200], outcome, type(e).__name__)
        return reply

    async def _audit(self, actor: AuditActor, msg: ChatMessage, cmd: Command | None, outcome: str,
                     detail: str = "") -> None:
        intent: dict[str, Any] = {"command": type(cmd).__name__} if cmd else {}
        if cmd is not None:
            intent["canonical"] = grammar.render(cmd)
        await self.domain.audit.record(None, actor=actor, action="command", host=getattr(cmd, "host", None),
                                       command_text=msg.text[:2000].replace("\x00", "\\x00"), intent=intent,
                                       detail={"via_button": msg.via_button, "message": detail[:500]},
                                       outcome=outcome)
