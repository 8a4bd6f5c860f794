"""The evidence model besides the journal: what the bot gathers over SSH at the moment of an incident
(or `pitcrew diagnose --extra` reads from a file) — nvidia-smi apps, processes, listeners, pitcrew's own
recorded actions — and `RanBefore`, what a killed invocation had been doing."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Annotated, Any, TypeVar

from pydantic import BaseModel, BeforeValidator, ConfigDict, ValidationError

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

    @property
    def exited(self) -> bool:
        """`ps` shows an exited process not yet reaped (`[name] <defunct>`): its CUDA context, and its GPU memory,
        are gone, though `nvidia-smi` may have listed it a moment before."""
        return is_defunct(self.cmdline)


def is_defunct(cmdline: str | None) -> bool:
    """Whether a `ps` command line is a zombie's (`[name] <defunct>`)."""
    return (cmdline or "").rstrip().endswith("<defunct>")


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


def _opt(value: Any) -> str | None:
    return None if value is None else str(value)


# --- the `--extra` document, validated by pydantic: a malformed item is dropped, never the whole document ------

_Int = Annotated[int | None, BeforeValidator(int_or_none)]
_Str = Annotated[str | None, BeforeValidator(_opt)]
_Text = Annotated[str, BeforeValidator(lambda v: str(v or ""))]
_Time = Annotated[datetime | None, BeforeValidator(parse_time)]
_LENIENT = ConfigDict(extra="ignore", frozen=True)


class _AppIn(BaseModel):
    model_config = _LENIENT
    pid: _Int = None
    process_name: _Text = ""
    used_memory: _Int = None


class _ActionIn(BaseModel):
    model_config = _LENIENT
    at: _Time = None
    who: Annotated[str, BeforeValidator(lambda v: str(v or "pitcrew"))] = "pitcrew"
    action: _Text = ""
    detail: _Text = ""


class _ProcessIn(BaseModel):
    model_config = _LENIENT
    pid: _Int = None
    ppid: _Int = None
    user: _Str = None
    cgroup: _Str = None
    cmdline: _Str = None
    started: _Str = None


class _ListenerIn(BaseModel):
    model_config = _LENIENT
    local: _Text = ""
    pid: _Int = None
    process: _Str = None
    user: _Str = None


M = TypeVar("M", bound=BaseModel)


def _items(data: Mapping[str, Any], key: str, model: type[M]) -> list[M]:
    """The items of list ``key`` that validate as ``model``; anything else is skipped."""
    value = data.get(key)
    out: list[M] = []
    for item in value if isinstance(value, list) else ():
        with contextlib.suppress(ValidationError):
            out.append(model.model_validate(item))
    return out


def _gpu_lines(raw: Any) -> list[str]:
    if isinstance(raw, list):
        return [str(x) for x in raw if isinstance(x, str | int)]
    return str(raw).splitlines() if isinstance(raw, str) else []


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
    # why the host's probes could not be read (the gatherer's `errors`): the causes they decide cannot be named
    errors: tuple[str, ...] = ()

    @classmethod
    def from_json(cls, data: Any) -> SideEvidence:
        """Build from the `--extra` JSON object; unknown keys and malformed items are ignored."""
        if not isinstance(data, Mapping):
            raise UserInputError("side evidence must be one JSON object")
        show_raw = data.get("systemctl_show")
        show = {str(k): str(v) for k, v in show_raw.items()} if isinstance(show_raw, Mapping) else {}
        apps = [GpuApp(a.pid, a.process_name, a.used_memory)
                for a in _items(data, "nvidia_smi_apps", _AppIn) if a.pid is not None]
        kernel = []
        raw_kernel = data.get("kernel_journal")
        kernel_objs = [o for o in raw_kernel if isinstance(o, Mapping)] if isinstance(raw_kernel, list) else []
        for i, o in enumerate(kernel_objs):
            obj = dict(o)
            obj.setdefault("__CURSOR", f"kernel-{i}")
            obj.setdefault("_TRANSPORT", "kernel")
            entry = entry_from_obj(obj)
            if entry is not None:
                kernel.append(entry)
        actions = [Action(a.at, a.who, a.action, a.detail)
                   for a in _items(data, "actions", _ActionIn) if a.at is not None and a.action]
        procs = [ProcessInfo(p.pid, p.ppid, p.user, p.cgroup, p.cmdline, p.started)
                 for p in _items(data, "process_info", _ProcessIn) if p.pid is not None]
        listeners = [Listener(s.local, s.pid, s.process, s.user) for s in _items(data, "ss_listen", _ListenerIn)]
        unit_file = data.get("unit_file")
        raw_errors = data.get("errors")
        errors = tuple(str(e) for e in raw_errors if e) if isinstance(raw_errors, list) else ()
        return cls(
            MappingProxyType(show),
            tuple(apps),
            tuple(_gpu_lines(data.get("nvidia_smi_gpu"))),
            tuple(kernel),
            tuple(sorted(actions, key=lambda a: a.at)),
            unit_file if isinstance(unit_file, str) else None,
            tuple(procs),
            tuple(listeners),
            errors,
        )


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
