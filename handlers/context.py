"""What a command handler is given: `HandlerContext` — the services, the policy and this call's decisions.

The router builds one per command after its authorise and confirm steps; handlers never see the
router. Owns host resolution (a named host, or the only one the channel may drive).
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from dataclasses import dataclass

from handlers.auth import Policy, check_channel_host
from handlers.contract import ChatMessage
from handlers.ports import Domain
from services.errors import NotAuthorized, UserInputError

__all__ = ["HandlerContext", "resolve_host"]


@dataclass(frozen=True)
class HandlerContext:
    """One command's call: the services, the policy, the caller's role and the router's decisions."""

    domain: Domain
    policy: Policy
    role: str  # the caller's role (already checked against the command's)
    confirm: bool  # a job this command submits waits for a confirmation (policy.confirm names the command)
    help: Callable[[str | None], str]  # help text for a topic (None: every command)

    def resolve_host(self, msg: ChatMessage, host: str | None) -> str:
        return resolve_host(self.domain.host_names, self.policy, msg, host)


def resolve_host(names: list[str], policy: Policy, msg: ChatMessage, host: str | None) -> str:
    """The host a command is about: named, or the only one this channel may use."""
    if host is not None:
        if host not in names:
            close = difflib.get_close_matches(host, names, n=1, cutoff=0.6)
            hint = close[0] if close else None
            raise UserInputError(f"unknown host {host!r}" + (f"; did you mean {hint}?" if hint else
                                                             f"; known hosts: {', '.join(names) or 'none'}"))
        check_channel_host(msg.channel, host, policy)
        return host
    allowed = [h for h in names if h in policy.channel_hosts.get(msg.channel, names)]
    if len(allowed) == 1:
        return allowed[0]
    if not allowed:
        raise NotAuthorized("no host may be driven from this channel")
    raise UserInputError(f"which host? add `on <host>` — one of {', '.join(allowed)}")
