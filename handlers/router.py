"""The router: the one entry point from every transport, and the one place errors become user text.

`Router.dispatch(msg)` runs ordered steps: rate limit, *parse* (text → command and its
declaration), *authorise* (the sender's role against the role the command declares),
*confirm* (does the job it submits wait for a confirmation: `Policy.confirm` names it),
*handle* (its handler, given a `HandlerContext`, never the router) and *audit* (accepted or
refused, always). Expected errors (`PitcrewError`) answer with their message; anything else
answers with a short reference id that is in the log, never a traceback.
"""

from __future__ import annotations

import logging
import uuid
from typing import Any

from handlers import grammar
from handlers.auth import Policy, RateLimiter, audit_actor, require
from handlers.commands import Command
from handlers.context import HandlerContext, resolve_host
from handlers.contract import ChatMessage, Reply
from handlers.help import help_text
from handlers.ports import Domain
from handlers.registry import spec_of
from handlers.spec import CommandSpec
from services.errors import NotAuthorized, PitcrewError, RateLimited, UserInputError
from services.store import AuditActor

__all__ = ["Domain", "Router"]

log = logging.getLogger(__name__)


class Router:
    """Parse, authorise, confirm, handle, audit; turn every error into text."""

    def __init__(self, domain: Domain, policy: Policy) -> None:
        self.domain = domain
        self.policy = policy
        self.limiter = RateLimiter(policy.commands_per_minute, shared=domain.seen)

    def resolve_host(self, msg: ChatMessage, host: str | None) -> str:
        """The host a command is about: named, or the only one this channel may use."""
        return resolve_host(self.domain.host_names, self.policy, msg, host)

    def _authorise(self, msg: ChatMessage, spec: CommandSpec[Any]) -> str:
        return require(msg.actor, spec.name, spec.role, self.policy)

    def _confirm(self, spec: CommandSpec[Any]) -> bool:
        return spec.confirm is not None and spec.confirm in self.policy.confirm

    async def dispatch(self, msg: ChatMessage) -> Reply:
        actor = audit_actor(msg)
        cmd: Command | None = None
        outcome, note = "ok", ""
        try:
            await self.limiter.check_shared(msg.actor.user_id)
            cmd = grammar.parse(msg.text)
            spec = spec_of(cmd)
            role = self._authorise(msg, spec)
            ctx = HandlerContext(domain=self.domain, policy=self.policy, role=role, confirm=self._confirm(spec),
                                 help=help_text)
            reply: Reply = await spec.handler(ctx, msg, cmd)
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
