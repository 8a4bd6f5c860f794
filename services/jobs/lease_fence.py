"""A job's hold on its host: the `Fence` every host action of the job passes (the job's lease must still carry
its token, by the database's clock), and whether a lease holder found at start was a process that is gone."""

from __future__ import annotations

import logging
import os
import socket
import time

from services.errors import LeaseLost
from services.store import Leases

log = logging.getLogger("services.jobs.runner")


class Fence:
    """The guard of one job's host actions: the job's lease must still carry its token (database clock)."""

    def __init__(self, leases: Leases, host: str, holder: str, token: str) -> None:
        self.leases = leases
        self.host = host
        self.holder = holder
        self.token = token
        self.lost = ""
        self.confirmed_at = time.monotonic()  # local time of the last renew/check that the database accepted

    @property
    def margin_s(self) -> float:
        return self.leases.ttl_s / 3

    @property
    def heartbeat_s(self) -> float:
        """How often the job's heartbeat renews the lease: six times a TTL."""
        return max(self.leases.ttl_s / 6, 0.05)

    def expired_locally(self) -> bool:
        """Not confirmed for so long that the lease may have lapsed in the database (its link is down)."""
        return time.monotonic() - self.confirmed_at > self.leases.ttl_s - self.margin_s

    def lose(self, why: str) -> None:
        if not self.lost:
            log.error("job lease on %s lost: %s; the job stops before its next host action", self.host, why)
            self.lost = why

    async def __call__(self) -> None:
        if self.lost:
            raise LeaseLost(f"this bot no longer holds {self.host} ({self.lost})")
        t0 = time.monotonic()
        ok = await self.leases.check(f"host:{self.host}", self.holder, self.token, margin_s=self.margin_s)
        if not ok:
            self.lose(await self.why_not_held())
            raise LeaseLost(f"this bot no longer holds {self.host} ({self.lost})")
        self.confirmed_at = t0

    async def why_not_held(self) -> str:
        """Why the lease no longer protects the job, as the database has it: another holder (or token) took it, it is
        gone, or it lapses within the margin — the heartbeat last confirmed it N s ago (a heartbeat that came that
        late is a database link down, or this process's event loop kept from running)."""
        since = time.monotonic() - self.confirmed_at
        try:
            info = await self.leases.get(f"host:{self.host}")
        except Exception:  # the reason is best effort; the lease is lost either way
            return f"the lease lapsed or was taken over (last confirmed {since:.0f} s ago; it could not be read)"
        if info is None:
            return f"the lease is gone from the database (last confirmed {since:.0f} s ago)"
        if info.holder != self.holder or info.token != self.token:
            return f"the lease was taken over by {info.holder} (last confirmed {since:.0f} s ago)"
        return (f"the lease lapses within its {self.margin_s:.2g} s margin: last confirmed {since:.1f} s ago, "
                f"renewed every {self.heartbeat_s:.2g} s")


def holder_dead(holder: str) -> bool:
    """True when a lease holder (``hostname:pid:token``) was a process on this machine that is gone,
    or an earlier process with our own pid (a restarted container)."""
    parts = holder.split(":")
    if len(parts) != 3 or parts[0] != socket.gethostname() or not parts[1].isdigit():
        return False
    pid = int(parts[1])
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False
    return False
