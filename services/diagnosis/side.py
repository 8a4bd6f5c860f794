"""The evidence model besides the journal: what the bot gathers over SSH at the moment of an incident
(or `pitcrew diagnose --extra` reads from a file) — nvidia-smi apps, processes, listeners, pitcrew's own
recorded actions — and `RanBefore`, what a killed invocation had been doing."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Any

from services.errors import UserInputError
from services.journal import JournalEntry, entry_from_obj

_EMPTY: Mapping[str, str] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class Action:
    """One of pitcrew's own recorded actions (audit log)."""

    at: datetime
    who: str
    action: str  # deploy | start | stop | restart | rollback | kill | benchmark
    detail: str = ""


@dataclass(frozen=True, slots=True)
class GpuApp:
    """A process holding GPU memory (`nvidia-smi --query-compute-apps=pid,process_name,used_memory`)."""

    pid: int
    process_name: str
    used_memory_mib: int | None


@dataclass(frozen=True, slots=True)
class ProcessInfo:
    """`ps` facts about a pid."""

    pid: int
    ppid: int | None = None
    user: str | None = None
    cgroup: str | None = None
    cmdline: str | None = None
    started: str | None = None


@dataclass(frozen=True, slots=True)
class Listener:
    """A listening socket (`ss -ltnp`)."""

    local: str
    pid: int | None = None
    process: str | None = None
    user: str | None = None


def int_or_none(value: Any) -> int | None:
    if value is None or isinstance(value, bool):
        return None
    try:
        return int(str(value).strip().split()[0])
    except (ValueError, IndexError):
        return None


def parse_time(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        dt = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    return dt if dt.tzinfo else dt.replace(tzinfo=UTC)


def _objs(data: Mapping[str, Any], key: str) -> list[Mapping[str, Any]]:
    value = data.get(key)
    return [v for v in value if isinstance(v, Mapping)] if isinstance(value, list) else []


@dataclass(frozen=True, slots=True)
class SideEvidence:
    """Evidence from outside the unit's journal; every part is optional."""

    systemctl_show: Mapping[str, str] = field(default_factory=lambda: _EMPTY)
    nvidia_smi_apps: tuple[GpuApp, ...] = ()
    nvidia_smi_gpu: tuple[str, ...] = ()
    kernel_journal: tuple[JournalEntry, ...] = ()
    actions: tuple[Action, ...] = ()
    unit_file: str | None = None
    process_info: tuple[ProcessInfo, ...] = ()
    ss_listen: tuple[Listener, ...] = ()

    @classmethod
    def from_json(cls, data: Any) -> SideEvidence:
        """Build from the `--extra` JSON object; unknown keys and malformed items are ignored."""
        if not isinstance(data, Mapping):
            raise UserInputError("side evidence must be one JSON object")
        show_raw = data.get("systemctl_show")
        show = {str(k): str(v) for k, v in show_raw.items()} if isinstance(show_raw, Mapping) else {}
        apps = []
        for o in _objs(data, "nvidia_smi_apps"):
            pid = int_or_none(o.get("pid"))
            if pid is not None:
                apps.append(GpuApp(pid, str(o.get("process_name") or ""), int_or_none(o.get("used_memory"))))
        gpu_raw = data.get("nvidia_smi_gpu")
        gpu = (
            [str(x) for x in gpu_raw if isinstance(x, str | int)]
            if isinstance(gpu_raw, list)
            else str(gpu_raw).splitlines()
            if isinstance(gpu_raw, str)
            else []
        )
        kernel = []
        for i, o in enumerate(_objs(data, "kernel_journal")):
            obj = dict(o)
            obj.setdefault("__CURSOR", f"kernel-{i}")
            obj.setdefault("_TRANSPORT", "kernel")
            entry = entry_from_obj(obj)
            if entry is not None:
                kernel.append(entry)
        actions = []
        for o in _objs(data, "actions"):
            at = parse_time(o.get("at"))
            if at is not None and o.get("action"):
                actions.append(
                    Action(at, str(o.get("who") or "pitcrew"), str(o["action"]), str(o.get("detail") or ""))
                )
        procs = []
        for o in _objs(data, "process_info"):
            pid = int_or_none(o.get("pid"))
            if pid is not None:
                procs.append(
                    ProcessInfo(
                        pid,
                        int_or_none(o.get("ppid")),
                        _opt(o.get("user")),
                        _opt(o.get("cgroup")),
                        _opt(o.get("cmdline")),
                        _opt(o.get("started")),
                    )
                )
        listeners = [
            Listener(
                str(o.get("local") or ""),
                int_or_none(o.get("pid")),
                _opt(o.get("process")),
                _opt(o.get("user")),
            )
            for o in _objs(data, "ss_listen")
        ]
        unit_file = data.get("unit_file")
        return cls(
            MappingProxyType(show),
            tuple(apps),
            tuple(gpu),
            tuple(kernel),
            tuple(sorted(actions, key=lambda a: a.at)),
            unit_file if isinstance(unit_file, str) else None,
            tuple(procs),
            tuple(listeners),
        )


def _opt(value: Any) -> str | None:
    return None if value is None else str(value)


# --- result types -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RanBefore:
    """What the unit achieved before it died, from its `Decode batch` lines."""

    accept_len: float | None
    gen_throughput_tok_s: float | None
    gen_throughput_min: float | None = None
    gen_throughput_max: float | None = None
    decode_lines: int = 0

    def describe(self) -> str:
        """`it ran at 270-293 tok/s, accept len 5.50` style text."""
        parts = []
        lo, hi = self.gen_throughput_min, self.gen_throughput_max
        if lo is not None and hi is not None and round(lo) != round(hi):
            parts.append(f"{lo:.0f}-{hi:.0f} tok/s")
        elif self.gen_throughput_tok_s is not None:
            parts.append(f"{self.gen_throughput_tok_s:.0f} tok/s")
        if self.accept_len is not None:
            parts.append(f"accept len {self.accept_len:.2f}")
        return "it ran at " + ", ".join(parts) if parts else "it was serving"




def format_time(us: int) -> str:
    """`14:02:11 UTC` for a journal timestamp."""
    return datetime.fromtimestamp(us / 1e6, UTC).strftime("%H:%M:%S UTC")
