"""Parsing a systemd unit file the way systemd 252 does, for the directives the sim supports.

Owns: the line grammar (sections, `#`/`;` comments, backslash continuations, later assignments
override, an empty assignment resets a list), timespans (`parse_sec`, `format_timespan`),
`ExecStart=` word splitting with systemd's quoting and prefixes, and the warnings systemd logs
for what it does not accept (`Unknown key 'X' in section [Y], ignoring.`, `Failed to parse
... value, ignoring: ...`: the texts of systemd 252.38, checked against it in
`tests/simhost/test_simhost_manager_contract.py`). Supported: [Unit] Description, Documentation, After, Before, Wants,
Requires, StartLimitIntervalSec, StartLimitBurst; [Service] Type (simple/exec), ExecStart,
Restart, RestartSec, TimeoutStopSec, TimeoutStartSec, TimeoutSec, Environment, WorkingDirectory,
SyslogIdentifier, User, Group, KillMode, KillSignal (ignored), LimitNOFILE, LimitMEMLOCK, MemoryMax (a real
memory cgroup, `simhost.cgroup`);
[Install] WantedBy, RequiredBy, Alias. Everything else gets systemd's "Unknown key" warning.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

USEC = 1
MSEC = 1000
SEC = 1_000_000
_UNITS = {
    "us": 1, "usec": 1, "µs": 1, "ms": MSEC, "msec": MSEC,
    "s": SEC, "sec": SEC, "second": SEC, "seconds": SEC,
    "m": 60 * SEC, "min": 60 * SEC, "minute": 60 * SEC, "minutes": 60 * SEC,
    "h": 3600 * SEC, "hr": 3600 * SEC, "hour": 3600 * SEC, "hours": 3600 * SEC,
    "d": 86400 * SEC, "day": 86400 * SEC, "days": 86400 * SEC,
    "w": 7 * 86400 * SEC, "week": 7 * 86400 * SEC, "weeks": 7 * 86400 * SEC,
}
INFINITY = -1

SUPPORTED = {
    "Unit": {"Description", "Documentation", "After", "Before", "Wants", "Requires",
             "StartLimitIntervalSec", "StartLimitBurst"},
    "Service": {"Type", "ExecStart", "Restart", "RestartSec", "TimeoutStopSec", "TimeoutStartSec",
                "TimeoutSec", "Environment", "WorkingDirectory", "SyslogIdentifier", "User", "Group",
                "KillMode", "KillSignal", "LimitNOFILE", "LimitMEMLOCK", "MemoryMax"},
    "Install": {"WantedBy", "RequiredBy", "Alias"},
}
RESTART_VALUES = {"no", "always", "on-success", "on-failure", "on-abnormal", "on-abort", "on-watchdog"}


def parse_sec(value: str) -> int:
    """systemd `parse_sec()`: `90`, `1min 30s`, `500ms`, `infinity`; returns µs or raises ValueError."""
    text = value.strip()
    if text == "infinity":
        return INFINITY
    if not text:
        raise ValueError(value)
    total = 0
    pos = 0
    pattern = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([a-zµ]*)")
    while pos < len(text):
        match = pattern.match(text, pos)
        if not match or match.end() == pos:
            raise ValueError(value)
        number, unit = match.group(1), match.group(2) or "s"
        if unit not in _UNITS:
            raise ValueError(value)
        total += int(float(number) * _UNITS[unit])
        pos = match.end()
    return total


def format_timespan(usec: int, accuracy: int = MSEC) -> str:
    """systemd `format_timespan()` (`src/basic/time-util.c`): `1min 2.345s`, `1min 30s`, `100ms`."""
    if usec == INFINITY:
        return "infinity"
    if usec <= 0:
        return "0"
    table = [("y", 31557600 * SEC), ("month", 2629800 * SEC), ("w", 604800 * SEC), ("d", 86400 * SEC),
             ("h", 3600 * SEC), ("min", 60 * SEC), ("s", SEC), ("ms", MSEC), ("us", 1)]
    parts: list[str] = []
    t = usec
    for name, size in table:
        if t <= 0 or (t < accuracy and parts):
            break
        if t < size:
            continue
        whole, rest = divmod(t, size)
        if t < 60 * SEC and rest > 0:
            digits = len(str(size)) - 1 - (len(str(accuracy)) - 1)
            if digits > 0:
                frac = rest // accuracy if accuracy > 1 else rest
                parts.append(f"{whole}.{frac:0{digits}d}{name}")
                t = 0
                break
        parts.append(f"{whole}{name}")
        t = rest
    return " ".join(parts) if parts else "0"


def split_exec(value: str) -> list[str]:
    """ExecStart= words: systemd's quoting (`"..."`, `'...'`, backslash escapes); prefixes dropped."""
    text = value.strip()
    while text and text[0] in "-@:+!":
        text = text[1:]
    return shlex.split(text, posix=True)


def _unquote_env(value: str) -> dict[str, str]:
    env: dict[str, str] = {}
    for word in shlex.split(value, posix=True):
        if "=" in word:
            key, _, val = word.partition("=")
            env[key] = val
    return env


@dataclass
class Unit:
    """The settings systemd would load from the file, plus the warnings it logged while parsing."""

    name: str
    path: Path
    description: str = ""
    exec_start: list[str] = field(default_factory=list)
    exec_start_raw: str = ""
    restart: str = "no"
    restart_usec: int = 100 * MSEC
    timeout_stop_usec: int = 90 * SEC
    timeout_start_usec: int = 90 * SEC
    start_limit_interval_usec: int = 10 * SEC
    start_limit_burst: int = 5
    environment: dict[str, str] = field(default_factory=dict)
    working_directory: str = ""
    syslog_identifier: str = ""
    service_type: str = "simple"
    memory_max: int | None = None  # MemoryMax= in bytes (-1: infinity), None when unset
    warnings: list[str] = field(default_factory=list)
    load_error: str = ""

    @property
    def ident(self) -> str:
        """Debian's `combined` status format: `<unit> - <Description>`."""
        return f"{self.name} - {self.description}" if self.description else self.name


def _logical_lines(text: str) -> list[tuple[int, str]]:
    lines: list[tuple[int, str]] = []
    buf = ""
    start = 0
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not buf and (not line or line[0] in "#;"):
            continue
        if buf and line and line[0] in "#;":
            continue  # comments inside a continuation are skipped (systemd 252 behaviour)
        if not buf:
            start = number
        if line.endswith("\\"):
            buf += line[:-1] + " "
            continue
        buf += line
        lines.append((start, buf))
        buf = ""
    if buf:
        lines.append((start, buf))
    return lines


def parse_unit(path: Path, name: str | None = None) -> Unit:
    unit = Unit(name=name or path.name, path=path)
    try:
        text = path.read_text()
    except OSError:
        unit.load_error = "not-found"
        return unit
    section = ""
    exec_lines: list[str] = []
    for number, line in _logical_lines(text):
        where = f"{path}:{number}"
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1]
            if section not in SUPPORTED:
                unit.warnings.append(f"{where}: Unknown section '{section}'. Ignoring.")
            continue
        if "=" not in line:
            unit.warnings.append(f"{where}: Missing '=', ignoring line.")
            continue
        key, _, value = line.partition("=")
        key, value = key.strip(), value.strip()
        if section not in SUPPORTED:
            continue
        if key not in SUPPORTED[section]:
            unit.warnings.append(f"{where}: Unknown key '{key}' in section [{section}], ignoring.")
            continue
        _apply(unit, key, value, where, exec_lines)
    if not exec_lines:
        unit.warnings.append(f"{unit.name}: Service has no ExecStart=, ExecStop=, or SuccessAction=. Refusing.")
        unit.load_error = "bad-setting"
    elif len(exec_lines) > 1 and unit.service_type != "oneshot":
        unit.warnings.append(f"{unit.name}: Service has more than one ExecStart= setting, which is only "
                             "allowed for Type=oneshot services. Refusing.")
        unit.load_error = "bad-setting"
    else:
        unit.exec_start_raw = exec_lines[0]
        try:
            unit.exec_start = split_exec(exec_lines[0])
        except ValueError:
            unit.warnings.append(f"{unit.name}: Invalid command line, ignoring: {exec_lines[0]}")
            unit.load_error = "bad-setting"
    return unit


def _apply(unit: Unit, key: str, value: str, where: str, exec_lines: list[str]) -> None:
    def sec(label: str = "time") -> int | None:
        try:
            return parse_sec(value)
        except ValueError:
            unit.warnings.append(f"{where}: Failed to parse {label} value, ignoring: {value}")
            return None

    if key == "Description":
        unit.description = value
    elif key == "ExecStart":
        if value:
            exec_lines.append(value)
        else:
            exec_lines.clear()
    elif key == "Restart":
        if value in RESTART_VALUES:
            unit.restart = value
        else:
            unit.warnings.append(f"{where}: Failed to parse service restart specifier, ignoring: {value}")
    elif key == "RestartSec":
        got = sec()
        if got is not None:
            unit.restart_usec = got
    elif key in ("TimeoutStopSec", "TimeoutStartSec", "TimeoutSec"):
        got = sec()
        if got is not None:
            got = INFINITY if got == 0 else got
            if key in ("TimeoutStopSec", "TimeoutSec"):
                unit.timeout_stop_usec = got
            if key in ("TimeoutStartSec", "TimeoutSec"):
                unit.timeout_start_usec = got
    elif key == "StartLimitIntervalSec":
        got = sec()
        if got is not None:
            unit.start_limit_interval_usec = got
    elif key == "StartLimitBurst":
        try:
            unit.start_limit_burst = int(value)
        except ValueError:
            unit.warnings.append(f"{where}: Failed to parse unsigned integer value, ignoring: {value}")
    elif key == "Environment":
        if not value:
            unit.environment.clear()
        else:
            try:
                unit.environment.update(_unquote_env(value))
            except ValueError:
                unit.warnings.append(f"{where}: Invalid environment assignment, ignoring: {value}")
    elif key == "WorkingDirectory":
        unit.working_directory = value.lstrip("-")
    elif key == "SyslogIdentifier":
        unit.syslog_identifier = value
    elif key == "MemoryMax":
        from simhost.cgroup import parse_bytes

        got_bytes = parse_bytes(value) if value else None
        if value and got_bytes is None:
            unit.warnings.append(f"{where}: Invalid memory limit '{value}', ignoring: Invalid argument")
        else:
            unit.memory_max = got_bytes
    elif key == "Type":
        if value in ("simple", "exec"):
            unit.service_type = value
        else:
            unit.warnings.append(f"{where}: Failed to parse service type, ignoring: {value}")
