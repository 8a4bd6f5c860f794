"""Classification of systemd's own journal messages about a unit (systemd 252 and 257 texts).

`classify(entry, unit)` turns one manager message (PID 1, `SYSLOG_IDENTIFIER=systemd`, `UNIT=<unit>`)
or journald's rate-limit notice into a `SystemdEvent`, with the numbers the message carries (exit
code and status, signal, result, restart counter, pid). Texts follow FORMATS c.1: `log_unit_*`
messages start with `<unit>: `; job messages (`Started`, `Stopping`, `Stopped`, `Failed to start`)
name the unit's ident (`<unit> - <Description>` on Debian, or the Description alone), so they are
attributed through the entry's `UNIT` field. Everything else returns None.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from services.journal.entries import JournalEntry

EventKind = Literal[
    "started", "stopping", "stopped", "main_exited", "failed_result", "deactivated", "consumed",
    "scheduled_restart", "start_limit_hit", "stop_timeout", "killing", "failed_to_start", "oom_kill",
    "leftover_process", "suppressed",
]

# Signal numbers → names as systemd prints them after `status=N/`.
SIGNALS: dict[int, str] = {
    1: "HUP", 2: "INT", 3: "QUIT", 4: "ILL", 5: "TRAP", 6: "ABRT", 7: "BUS", 8: "FPE", 9: "KILL",
    10: "USR1", 11: "SEGV", 12: "USR2", 13: "PIPE", 14: "ALRM", 15: "TERM",
}


@dataclass(frozen=True, slots=True)
class SystemdEvent:
    """One classified systemd message about a unit."""

    kind: EventKind
    unit: str
    realtime_us: int
    cursor: str
    message: str
    invocation_id: str | None = None
    exit_code: str | None = None  # exited | killed | dumped
    exit_status: int | None = None  # exit code, or signal number when killed/dumped
    status_name: str | None = None  # FAILURE, INVALIDARGUMENT, KILL, SEGV...
    signal: str | None = None  # KILL, SEGV, TERM... (killed/dumped, or the signal of a `killing`)
    result: str | None = None  # exit-code, signal, core-dump, timeout, oom-kill, start-limit-hit...
    restart_counter: int | None = None
    pid: int | None = None  # the process named by `killing` / `leftover_process`
    comm: str | None = None
    state: str | None = None  # stop_timeout: stop-sigterm, final-sigterm...
    job_type: str | None = None
    dropped: int | None = None  # suppressed: number of messages journald dropped

    @property
    def clean_exit(self) -> bool:
        """A main-process exit that systemd counts as success (exit 0, or SIGTERM/SIGINT/SIGHUP/SIGPIPE)."""
        if self.kind != "main_exited":
            return False
        if self.exit_code == "exited":
            return self.exit_status == 0
        return self.exit_code == "killed" and self.signal in {"TERM", "INT", "HUP", "PIPE"}


_UNIT_MSG = re.compile(r"^(?P<unit>[^\s:]+): (?P<rest>.*)$", re.DOTALL)
_MAIN_EXITED = re.compile(r"^Main process exited, code=(\w+), status=(\d+)(?:/([\w/]+))?")
_FAILED_RESULT = re.compile(r"^Failed with result '([\w-]+)'\.")
_SCHEDULED = re.compile(
    r"^Scheduled restart job(?: immediately on client request)?, restart counter is at (\d+)\."
)
_STOP_TIMEOUT = re.compile(r"^State '([\w-]+)' timed out\. (Killing|Skipping SIGKILL|Terminating|Aborting)")
_KILLING = re.compile(r"^Killing process (\d+) \((.*?)\) with signal SIG(\w+)\.")
_LEFTOVER = re.compile(
    r"^(?:Found left-over process (\d+) \((.*?)\) in control group while starting unit"
    r"|Unit process (\d+) \((.*?)\) remains running after unit stopped)"
)
_CONSUMED = re.compile(r"^Consumed (.+?) CPU time")
_JOB = re.compile(r"^(Started|Stopping|Stopped|Failed to start|Starting) (.+?)(?:\.\.\.|\.)$", re.DOTALL)
_SUPPRESSED = re.compile(r"^Suppressed (\d+) messages from (\S+)")

_JOB_KINDS: dict[str, EventKind] = {
    "Started": "started", "Stopping": "stopping", "Stopped": "stopped", "Failed to start": "failed_to_start",
}


def _is_manager(entry: JournalEntry) -> bool:
    if entry.pid == 1 or entry.identifier == "systemd":
        return True
    return entry.pid is None and entry.identifier is None


def _int(text: str | None) -> int | None:
    if text is None:
        return None
    try:
        return int(text)
    except ValueError:
        return None


def classify(entry: JournalEntry, unit: str) -> SystemdEvent | None:
    """Classify `entry` as a systemd event about `unit`, or None when it is not one."""
    msg = entry.message
    if not msg:
        return None
    first = msg[0]
    if first == "S" and msg.startswith("Suppressed "):
        m = _SUPPRESSED.match(msg)
        if m and (m.group(2) == unit or entry.fields.get("OBJECT_SYSTEMD_UNIT") == unit):
            return SystemdEvent("suppressed", unit, entry.realtime_us, entry.cursor, msg,
                                entry.invocation_id, dropped=int(m.group(1)))
        return None
    if not _is_manager(entry):
        return None
    base = {"unit": unit, "realtime_us": entry.realtime_us, "cursor": entry.cursor, "message": msg,
            "invocation_id": entry.invocation_id}
    if msg.startswith(unit) and msg[len(unit):len(unit) + 2] == ": ":
        return _classify_unit_message(msg[len(unit) + 2:], entry, base)
    m = _JOB.match(msg)
    if m is None:
        return None
    verb, ident = m.group(1), m.group(2)
    kind = _JOB_KINDS.get(verb)
    if kind is None:
        return None
    if entry.unit != unit and not (ident == unit or ident.startswith(unit + " - ")):
        return None
    return SystemdEvent(kind, job_type=entry.fields.get("JOB_TYPE"), **base)  # type: ignore[arg-type]


def _classify_unit_message(rest: str, entry: JournalEntry, base: dict[str, object]) -> SystemdEvent | None:
    kw = base
    if rest.startswith("Main process exited"):
        m = _MAIN_EXITED.match(rest)
        if not m:
            return None
        code, status, name = m.group(1), int(m.group(2)), m.group(3)
        signal = (name or SIGNALS.get(status)) if code in {"killed", "dumped"} else None
        return SystemdEvent("main_exited", exit_code=code, exit_status=status, status_name=name,
                            signal=signal, **kw)  # type: ignore[arg-type]
    if rest.startswith("Failed with result"):
        m = _FAILED_RESULT.match(rest)
        result = m.group(1) if m else entry.fields.get("UNIT_RESULT")
        return SystemdEvent("failed_result", result=result, **kw)  # type: ignore[arg-type]
    if rest.startswith("Deactivated successfully"):
        return SystemdEvent("deactivated", result="success", **kw)  # type: ignore[arg-type]
    if rest.startswith("Scheduled restart job"):
        m = _SCHEDULED.match(rest)
        counter = int(m.group(1)) if m else _int(entry.fields.get("N_RESTARTS"))
        return SystemdEvent("scheduled_restart", restart_counter=counter, **kw)  # type: ignore[arg-type]
    if rest.startswith("Start request repeated too quickly"):
        return SystemdEvent("start_limit_hit", **kw)  # type: ignore[arg-type]
    if rest.startswith("State '"):
        m = _STOP_TIMEOUT.match(rest)
        if not m:
            return None
        return SystemdEvent("stop_timeout", state=m.group(1), **kw)  # type: ignore[arg-type]
    if rest.startswith("Killing process"):
        m = _KILLING.match(rest)
        if not m:
            return None
        return SystemdEvent("killing", pid=int(m.group(1)), comm=m.group(2), signal=m.group(3),
                            **kw)  # type: ignore[arg-type]
    if rest.startswith("Consumed "):
        return SystemdEvent("consumed", **kw) if _CONSUMED.match(rest) else None  # type: ignore[arg-type]
    if rest.startswith("A process of this unit has been killed by the OOM killer"):
        return SystemdEvent("oom_kill", **kw)  # type: ignore[arg-type]
    if rest.startswith(("Found left-over process", "Unit process")):
        m = _LEFTOVER.match(rest)
        if not m:
            return None
        pid = m.group(1) or m.group(3)
        comm = m.group(2) if m.group(1) else m.group(4)
        return SystemdEvent("leftover_process", pid=int(pid), comm=comm, **kw)  # type: ignore[arg-type]
    return None
