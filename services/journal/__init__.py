"""The journal: parsing `journalctl -o json` entries and the lines in them (systemd's messages, SGLang's
and vLLM's logs), and following a host's journal with persisted, lease-fenced cursors.

The names below are the package's public API: other packages import only these."""

from services.journal.audit import JournalAuditor
from services.journal.entries import JournalEntry, ParseStats, entry_from_obj, iter_entries, parse_entry
from services.journal.fleet import JournalSupervisor
from services.journal.follower import HostContactLost, HostContactRestored, HostRebooted, JournalGap
from services.journal.sglang import Capacity, is_ready_line, parse_capacity, parse_decode
from services.journal.systemd import SystemdEvent, classify
from services.journal.types import parse_show
from services.journal.vllm import CapacityReader, VllmSpecStats, VllmThroughput, parse_vllm_spec, parse_vllm_throughput

__all__ = [
    "Capacity",
    "CapacityReader",
    "HostContactLost",
    "HostContactRestored",
    "HostRebooted",
    "JournalAuditor",
    "JournalEntry",
    "JournalGap",
    "JournalSupervisor",
    "ParseStats",
    "SystemdEvent",
    "VllmSpecStats",
    "VllmThroughput",
    "classify",
    "entry_from_obj",
    "is_ready_line",
    "iter_entries",
    "parse_capacity",
    "parse_decode",
    "parse_entry",
    "parse_show",
    "parse_vllm_spec",
    "parse_vllm_throughput",
]
