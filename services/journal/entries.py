"""Parsing of `journalctl -o json` lines into `JournalEntry` values (no I/O, no policy).

Owns the decoding rules of FORMATS c.4: every value is a string; `MESSAGE` may be a string, a JSON
array of byte values (any control character other than newline/tab, invalid UTF-8) or `null` (field of
4096 bytes or more without `--all`). Lines that are not JSON objects (`-- cursor: ...` from
`--show-cursor`, `-o json-seq` record separators, garbage, truncated lines) and objects without a
`__CURSOR` are bad lines: `parse_entry` returns None and `iter_entries` counts them in `ParseStats`.

Byte-array messages are decoded as UTF-8 with replacement, ANSI escape sequences (vLLM's coloured
prefix) are removed, and when the text holds carriage returns (tqdm progress bars write `\\r` and
refresh in place, and a cuda-graph capture bar is one entry with its whole history) only the last
non-empty `\\r`-segment is kept: that is what a terminal would have shown.

Field choice for `unit`/`invocation_id`: systemd's own messages about a unit are logged by PID 1 with
`_SYSTEMD_UNIT=init.scope` and `UNIT=<unit>`/`INVOCATION_ID=<invocation>`, so the explicit `UNIT` /
`INVOCATION_ID` win over the trusted `_SYSTEMD_UNIT` / `_SYSTEMD_INVOCATION_ID` fields.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import msgspec
import orjson

# Extra fields kept in `JournalEntry.fields` (everything else is dropped to keep entries small).
KEPT_FIELDS: tuple[str, ...] = (
    "MESSAGE_ID",
    "EXIT_CODE",
    "EXIT_STATUS",
    "UNIT_RESULT",
    "N_RESTARTS",
    "JOB_TYPE",
    "N_DROPPED",
    "OBJECT_SYSTEMD_UNIT",
    "COREDUMP_SIGNAL_NAME",
)

_EMPTY_FIELDS: Mapping[str, str] = MappingProxyType({})
_ANSI_RE = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[@-Z\\-_]")
_intern = sys.intern


@dataclass(frozen=True, slots=True)
class JournalEntry:
    """One journal record, reduced to what pitcrew reads."""

    cursor: str
    realtime_us: int
    monotonic_us: int | None
    pid: int | None
    unit: str | None
    invocation_id: str | None
    priority: int | None
    identifier: str | None
    message: str
    transport: str | None
    fields: Mapping[str, str] = field(default_factory=lambda: _EMPTY_FIELDS)


# Building ~1M entries per second is the ingest hot path: the generated frozen `__init__` costs twice
# what setting the slots through their descriptors does, so the parser uses this equivalent builder.
_SETTERS = tuple(
    JournalEntry.__dict__[name].__set__
    for name in (
        "cursor", "realtime_us", "monotonic_us", "pid", "unit", "invocation_id",
        "priority", "identifier", "message", "transport", "fields",
    )
)


def _make_entry(
    cursor: str, realtime_us: int, monotonic_us: int | None, pid: int | None, unit: str | None,
    invocation_id: str | None, priority: int | None, identifier: str | None, message: str,
    transport: str | None, extra: Mapping[str, str],
) -> JournalEntry:
    s0, s1, s2, s3, s4, s5, s6, s7, s8, s9, s10 = _SETTERS
    entry: JournalEntry = object.__new__(JournalEntry)
    s0(entry, cursor)
    s1(entry, realtime_us)
    s2(entry, monotonic_us)
    s3(entry, pid)
    s4(entry, unit)
    s5(entry, invocation_id)
    s6(entry, priority)
    s7(entry, identifier)
    s8(entry, message)
    s9(entry, transport)
    s10(entry, extra)
    return entry


class _Raw(
    msgspec.Struct,
    gc=False,
    rename={
        "cursor": "__CURSOR", "realtime": "__REALTIME_TIMESTAMP", "monotonic": "__MONOTONIC_TIMESTAMP",
        "pid": "_PID", "sd_unit": "_SYSTEMD_UNIT", "unit": "UNIT", "sd_inv": "_SYSTEMD_INVOCATION_ID",
        "inv": "INVOCATION_ID", "priority": "PRIORITY", "ident": "SYSLOG_IDENTIFIER", "message": "MESSAGE",
        "transport": "_TRANSPORT", "message_id": "MESSAGE_ID", "exit_code": "EXIT_CODE",
        "exit_status": "EXIT_STATUS", "unit_result": "UNIT_RESULT", "n_restarts": "N_RESTARTS",
        "job_type": "JOB_TYPE", "n_dropped": "N_DROPPED", "object_unit": "OBJECT_SYSTEMD_UNIT",
        "coredump_signal": "COREDUMP_SIGNAL_NAME",
    },
):
    """The journal fields pitcrew reads; unknown fields are skipped by the decoder without allocation."""

    cursor: str | None = None
    realtime: int = 0
    monotonic: int | None = None
    pid: int | None = None
    sd_unit: str | None = None
    unit: str | None = None
    sd_inv: str | None = None
    inv: str | None = None
    priority: int | None = None
    ident: str | None = None
    message: str | list[int] | None = None
    transport: str | None = None
    message_id: str | None = None
    exit_code: str | None = None
    exit_status: str | None = None
    unit_result: str | None = None
    n_restarts: str | None = None
    job_type: str | None = None
    n_dropped: str | None = None
    object_unit: str | None = None
    coredump_signal: str | None = None


_decoder = msgspec.json.Decoder(_Raw, strict=False)


def _extra_fields(raw: _Raw) -> Mapping[str, str]:
    pairs = (
        ("MESSAGE_ID", raw.message_id), ("EXIT_CODE", raw.exit_code), ("EXIT_STATUS", raw.exit_status),
        ("UNIT_RESULT", raw.unit_result), ("N_RESTARTS", raw.n_restarts), ("JOB_TYPE", raw.job_type),
        ("N_DROPPED", raw.n_dropped), ("OBJECT_SYSTEMD_UNIT", raw.object_unit),
        ("COREDUMP_SIGNAL_NAME", raw.coredump_signal),
    )
    kept = {k: v for k, v in pairs if v is not None}
    return MappingProxyType(kept) if kept else _EMPTY_FIELDS


def _from_raw(raw: _Raw) -> JournalEntry | None:
    cursor = raw.cursor
    if not cursor:
        return None
    msg = raw.message
    unit = raw.unit or raw.sd_unit
    inv = raw.inv or raw.sd_inv
    ident = raw.ident
    transport = raw.transport
    extra = _EMPTY_FIELDS
    if raw.message_id is not None or raw.exit_code is not None or raw.job_type is not None \
            or raw.n_dropped is not None or raw.unit_result is not None:
        extra = _extra_fields(raw)
    return _make_entry(
        cursor,
        raw.realtime,
        raw.monotonic,
        raw.pid,
        _intern(unit) if unit is not None else None,
        _intern(inv) if inv is not None else None,
        raw.priority,
        _intern(ident) if ident is not None else None,
        msg if type(msg) is str else decode_message(msg),
        _intern(transport) if transport is not None else None,
        extra,
    )


@dataclass(slots=True)
class ParseStats:
    """Counters of one ingest: good entries and bad (skipped) lines."""

    lines: int = 0
    entries: int = 0
    bad_lines: int = 0


def _to_int(value: Any) -> int | None:
    if value is None:
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def decode_message(value: Any) -> str:
    """Turn a `MESSAGE` value (string, byte array or null) into text."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    if isinstance(value, list):
        try:
            raw = bytes(value)
        except (TypeError, ValueError):
            raw = bytes(b & 0xFF for b in value if isinstance(b, int))
        text = raw.decode("utf-8", "replace")
        if "\x1b" in text:
            text = _ANSI_RE.sub("", text)
        if "\r" in text:
            text = text.rstrip("\r")
            if "\r" in text:
                segments = [s for s in text.split("\r") if s.strip()]
                text = segments[-1] if segments else ""
        return text
    return str(value)


def entry_from_obj(obj: Any) -> JournalEntry | None:
    """Build an entry from an already decoded JSON object (None when it is not a journal record)."""
    if type(obj) is not dict:
        return None
    cursor = obj.get("__CURSOR")
    if type(cursor) is not str or not cursor:
        return None
    get = obj.get
    msg = get("MESSAGE")
    message = msg if type(msg) is str else decode_message(msg)
    try:
        realtime_us = int(get("__REALTIME_TIMESTAMP", 0))
    except (TypeError, ValueError):
        realtime_us = 0
    mono = get("__MONOTONIC_TIMESTAMP")
    pid = get("_PID")
    prio = get("PRIORITY")
    unit = get("UNIT") or get("_SYSTEMD_UNIT")
    inv = get("INVOCATION_ID") or get("_SYSTEMD_INVOCATION_ID")
    ident = get("SYSLOG_IDENTIFIER")
    transport = get("_TRANSPORT")
    extra: Mapping[str, str] = _EMPTY_FIELDS
    if "MESSAGE_ID" in obj or "EXIT_CODE" in obj or "N_DROPPED" in obj or "JOB_TYPE" in obj:
        kept = {k: str(obj[k]) for k in KEPT_FIELDS if k in obj and obj[k] is not None}
        if kept:
            extra = MappingProxyType(kept)
    return _make_entry(
        cursor,
        realtime_us,
        _to_int(mono) if mono is not None else None,
        _to_int(pid) if pid is not None else None,
        _intern(unit) if type(unit) is str else None,
        _intern(inv) if type(inv) is str else None,
        _to_int(prio) if prio is not None else None,
        _intern(ident) if type(ident) is str else None,
        message,
        _intern(transport) if type(transport) is str else None,
        extra,
    )


def parse_entry(line: bytes | str) -> JournalEntry | None:
    """Parse one `journalctl -o json` line; None for anything that is not a journal record."""
    if not line:
        return None
    try:
        return _from_raw(_decoder.decode(line))
    except (msgspec.DecodeError, TypeError, ValueError):
        pass  # not the common shape (odd types, json-seq, garbage): take the tolerant path below
    try:
        obj = orjson.loads(line)
    except (orjson.JSONDecodeError, TypeError, ValueError):
        # json-seq records start with RS (0x1e); the decoder rejects it, so retry once without it.
        stripped: bytes | str = (
            line.lstrip(b"\x1e \t") if isinstance(line, bytes) else line.lstrip("\x1e \t")
        )
        if stripped is line or not stripped or stripped[:1] not in (b"{", "{"):
            return None
        try:
            obj = orjson.loads(stripped)
        except (orjson.JSONDecodeError, TypeError, ValueError):
            return None
    return entry_from_obj(obj)


def iter_entries(lines: Iterable[bytes | str], stats: ParseStats | None = None) -> Iterator[JournalEntry]:
    """Yield the entries of `lines`, skipping (and counting) the bad ones; never raises on content.

    `stats` is updated when the iterator is exhausted or closed (the loop keeps its counters local).
    """
    st = stats if stats is not None else ParseStats()
    decode = _decoder.decode
    from_raw = _from_raw
    n = good = bad = 0
    try:
        for line in lines:
            n += 1
            try:  # the common shape, inlined: this loop is the ingest hot path
                entry = from_raw(decode(line))
            except (msgspec.DecodeError, TypeError, ValueError):
                entry = parse_entry(line)
            if entry is None:
                if line.strip():
                    bad += 1
                else:
                    n -= 1
                continue
            good += 1
            yield entry
    finally:
        st.lines += n
        st.entries += good
        st.bad_lines += bad
