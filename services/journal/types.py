"""Value types and events of journal following: unit state, contact loss/restoration, follower status.

Kept apart from `services.journal.follower` (the follower itself) so that views and metrics can import them
without the follower's machinery; `services.journal.follower` re-exports them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

STATE_PROPERTIES = ("NRestarts", "ActiveState", "SubState", "Result", "MainPID", "ExecMainStatus",
                    "ExecMainCode", "InvocationID")


@dataclass(frozen=True)
class UnitState:
    """`systemctl show` of a unit (property → value as printed)."""

    properties: Mapping[str, str]
    read_at: datetime

    def get(self, key: str, default: str = "") -> str:
        return self.properties.get(key, default)

    @property
    def n_restarts(self) -> int:
        return _int(self.get("NRestarts"))

    @property
    def main_pid(self) -> int:
        return _int(self.get("MainPID"))

    @property
    def active_state(self) -> str:
        return self.get("ActiveState")

    @property
    def sub_state(self) -> str:
        return self.get("SubState")

    @property
    def running(self) -> bool:
        return self.active_state == "active" and self.sub_state in ("running", "")


@dataclass(frozen=True)
class UnitStateRead:
    """Event: the unit's systemd state was read (on connect and after a unit state change)."""

    host: str
    unit: str
    state: UnitState


@dataclass(frozen=True)
class HostContactLost:
    """Event: pitcrew could not reach the host's journal for a while."""

    host: str
    since: datetime
    error: str


@dataclass(frozen=True)
class HostContactRestored:
    """Event: the host answers again after `HostContactLost`."""

    host: str
    since: datetime
    restored_at: datetime


@dataclass(frozen=True)
class HostRebooted:
    """Event: the unit's journal continues in a new boot (`_BOOT_ID` changed, monotonic clock reset)."""

    host: str
    unit: str
    previous_boot: str
    boot: str
    last_before: datetime | None
    first_after: datetime


@dataclass(frozen=True)
class JournalGap:
    """Event: part of the unit's journal could not be read, so a diagnosis of [since, until] is partial.

    ``reason``: ``vacuumed`` (the stored cursor's entry no longer exists: journal files were deleted
    while pitcrew was not reading) or ``rate-limited`` (journald's ``Suppressed N messages``;
    ``dropped`` is N)."""

    host: str
    unit: str
    since: datetime | None
    until: datetime
    reason: str
    dropped: int | None = None
    partial: bool = True

    @property
    def seconds(self) -> float | None:
        return None if self.since is None else max(0.0, (self.until - self.since).total_seconds())


@dataclass(frozen=True)
class FollowerStatus:
    """A snapshot of one follower's counters (for status lines and metrics)."""

    host: str
    unit: str
    connected: bool
    entries: int
    bad_lines: int
    handler_errors: int
    reconnects: int
    cursor: str | None
    last_entry_realtime_us: int | None
    lost_since: datetime | None
    gaps: int = 0
    suppressed: int = 0
    reboots: int = 0
    cursor_rejected: int = 0

    def lag_s(self, now: datetime | None = None) -> float | None:
        """Seconds between now and the newest processed entry's journal time."""
        if self.last_entry_realtime_us is None:
            return None
        ref = (now or datetime.now(UTC)).timestamp()
        return max(0.0, ref - self.last_entry_realtime_us / 1e6)


@dataclass
class FollowerCounters:
    entries: int = 0
    bad_lines: int = 0
    handler_errors: int = 0
    reconnects: int = 0
    last_realtime_us: int | None = None
    stored_entries: int = 0
    gaps: int = 0
    suppressed: int = 0
    reboots: int = 0
    cursor_rejected: int = 0
    extra: dict[str, Any] = field(default_factory=dict)


def parse_show(text: str) -> dict[str, str]:
    """`Key=Value` lines of `systemctl show` (any order) as a dict."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep and key and key.strip() == key:
            out[key] = value
    return out


def cursor_field(cursor: str, key: str) -> str | None:
    """One ``key=value`` part of a journald cursor (``b`` boot id, ``t`` realtime hex...), or None."""
    prefix = key + "="
    for part in cursor.split(";"):
        if part.startswith(prefix):
            return part[len(prefix):]
    return None


def cursor_realtime_us(cursor: str) -> int | None:
    """The entry's realtime (µs) written in a journald cursor (``t=<hex>``), or None."""
    value = cursor_field(cursor, "t")
    try:
        return int(value, 16) if value else None
    except ValueError:
        return None


def _int(value: str) -> int:
    try:
        return int(value)
    except ValueError:
        return 0
