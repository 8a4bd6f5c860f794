"""The journal: parsing `journalctl -o json` entries and systemd's messages in them (what an engine's own lines
mean is `services.engines`), and following a host's journal with persisted, lease-fenced cursors.

The names below are the package's public API: other packages import only these."""

from services.journal.audit import JournalAuditor
from services.journal.entries import JournalEntry, ParseStats, entry_from_obj, iter_entries, parse_entry
from services.journal.fleet import JournalSupervisor
from services.journal.follower import HostContactLost, HostContactRestored, HostRebooted, JournalGap
from services.journal.systemd import SystemdEvent, classify
from services.journal.types import parse_show

__all__ = [
    "HostContactLost",
    "HostContactRestored",
    "HostRebooted",
    "JournalAuditor",
    "JournalEntry",
    "JournalGap",
    "JournalSupervisor",
    "ParseStats",
    "SystemdEvent",
    "classify",
    "entry_from_obj",
    "iter_entries",
    "parse_entry",
    "parse_show",
]
