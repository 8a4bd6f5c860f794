"""Authorization: roles from policy, the role check, channel → host limits, rate limits.

Roles are ordered viewer < experimenter < operator < admin. A user's role is the highest of the
roles given to their user id and their groups, else the default (``*``), else viewer. The role
each command needs is declared with the command (`handlers.spec.command`).
"""

from __future__ import annotations

import time
from collections import defaultdict, deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from handlers.contract import Actor, ChatMessage
from services.errors import NotAuthorized, PitcrewError, RateLimited
from services.store import AuditActor, SeenKeys

Role = Literal["viewer", "experimenter", "operator", "admin"]
ROLES: tuple[Role, ...] = ("viewer", "experimenter", "operator", "admin")


@dataclass(frozen=True)
class Policy:
    """The authorization and confirmation policy, as plain values."""

    roles: Mapping[str, str] = field(default_factory=lambda: {"*": "viewer"})  # fail closed
    channel_hosts: Mapping[str, Sequence[str]] = field(default_factory=dict)
    confirm: frozenset[str] = frozenset({"try", "sweep", "tune", "rollback", "kill-stale"})
    commands_per_minute: int = 30
    status_ephemeral: bool = False  # `status` answers only the asker


def has_granted_role(roles: Mapping[str, str], needed: str = "operator") -> bool:
    """Whether anyone (a user, a group, or the ``*`` default) holds ``needed`` or a higher role."""
    return any(r in ROLES and at_least(r, needed) for r in roles.values())


def role_of(actor: Actor, policy: Policy) -> str:
    found = [policy.roles[k] for k in (actor.user_id, *actor.groups) if k in policy.roles]
    if not found:
        return policy.roles.get("*", "viewer")
    return max(found, key=ROLES.index)


def at_least(role: str, needed: str) -> bool:
    return ROLES.index(role) >= ROLES.index(needed)


def require(actor: Actor, command: str, needed: str, policy: Policy) -> str:
    """The actor's role, or `NotAuthorized` naming the role `command` needs."""
    role = role_of(actor, policy)
    if not at_least(role, needed):
        raise NotAuthorized(f"`{command}` needs the {needed} role; you are {role}. Ask an admin to grant it.")
    return role


def check_channel_host(channel: str, host: str, policy: Policy) -> None:
    allowed = policy.channel_hosts.get(channel)
    if allowed is not None and host not in allowed:
        raise NotAuthorized(f"{host} cannot be driven from this channel (allowed here: "
                            f"{', '.join(allowed) or 'none'})")


class RateLimiter:
    """At most `per_minute` commands per user a minute. With `shared` (the database's `SeenKeys`) the count is
    one per-user window shared by every bot process; without it, or while the database does not answer, a
    sliding 60-second window in this process."""

    def __init__(self, per_minute: int, *, shared: SeenKeys | None = None) -> None:
        self.per_minute = per_minute
        self.shared = shared
        self._seen: dict[str, deque[float]] = defaultdict(deque)

    async def check_shared(self, user_id: str) -> None:
        """The limit across processes (falls back to this process's count when the database is away)."""
        if self.shared is None:
            self.check(user_id)
            return
        try:
            w = await self.shared.count(f"rate:{user_id}", 60.0)
        except PitcrewError:
            self.check(user_id)
            return
        if w.count > self.per_minute:
            wait = max((w.ends_at - w.now).total_seconds(), 1.0)
            raise RateLimited(f"slow down: at most {self.per_minute} commands a minute; try again in {wait:.0f} s")

    def check(self, user_id: str, now: float | None = None) -> None:
        now = time.monotonic() if now is None else now
        q = self._seen[user_id]
        while q and now - q[0] > 60.0:
            q.popleft()
        if len(q) >= self.per_minute:
            wait = 60.0 - (now - q[0])
            raise RateLimited(f"slow down: at most {self.per_minute} commands a minute; try again in {wait:.0f} s")
        q.append(now)
        for user in [u for u, seen in self._seen.items() if not seen]:  # forget idle users
            del self._seen[user]


def audit_actor(msg: ChatMessage) -> AuditActor:
    """Who the audit log names for a chat message: the person, their transport and the channel."""
    return AuditActor(msg.actor.user_id, msg.actor.name, msg.actor.transport, msg.channel)
