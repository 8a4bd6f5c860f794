"""The simulated host's journal: an append-only file of journald entries, one JSON object a line.

Owns the on-disk store (`DIR/journal/system.journal.jsonl`), the cursor shape of journald
(`s=<seqnum id>;i=<seqnum>;b=<boot id>;m=<monotonic>;t=<realtime>;x=<xor hash>`, hex without
padding), the `journalctl -u` match rules of systemd 252 (`src/shared/logs-show.c`) and the
per-entry output conversions (`MESSAGE` as a byte array when it holds control characters, `null`
when it is 4096 bytes or more without `--all`). Stdlib only: the `journalctl` tool imports it and
must start fast. One writer (the supervisor, in the SimHost process); any number of readers.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

from simhost import journal_real

JOURNAL_FILE = "journal/system.journal.jsonl"
IDS_FILE = "journal/ids.json"
COREDUMP_MESSAGE_ID = "fc2e22bc6ee647b6b90729ab34a250b1"  # systemd-coredump's "Process N (comm) dumped core."
DATA_FIELD_MAX = 4096  # journalctl prints null for fields this long without --all (logs-show.c)


def journal_path(root: Path) -> Path:
    return root / JOURNAL_FILE


def load_ids(root: Path) -> dict[str, str]:
    """Boot id, machine id, seqnum id and hostname of the simulated host (created on first use)."""
    path = root / IDS_FILE
    try:
        data: dict[str, str] = json.loads(path.read_text())
        return data
    except (OSError, ValueError):
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {"boot_id": os.urandom(16).hex(), "machine_id": os.urandom(16).hex(),
            "seqnum_id": os.urandom(16).hex(), "hostname": "sim-gpu-1"}
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data))
    os.replace(tmp, path)
    return data


def make_cursor(seqnum_id: str, seqnum: int, boot_id: str, mono_us: int, real_us: int, xor: int) -> str:
    return f"s={seqnum_id};i={seqnum:x};b={boot_id};m={mono_us:x};t={real_us:x};x={xor:x}"


def cursor_seqnum(cursor: str) -> int | None:
    """The sequence number inside a cursor (None when the cursor is not in journald's shape)."""
    for part in cursor.split(";"):
        if part.startswith("i="):
            try:
                return int(part[2:], 16)
            except ValueError:
                return None
    return None


def clean_line(line: str) -> str | None:
    """journald's stdout stream rule: strip trailing ` \\t\\r`, keep leading, drop empty lines."""
    stripped = line.rstrip(" \t\r\n")
    if not stripped:
        return None if not line.strip("\r\n") else line.rstrip("\r\n")
    return stripped


class JournalWriter:
    """Appends entries; every value is stored as a string, the trust fields come from the caller.

    With the real backend (`simhost.journal_real.backend()` is ``journald``) each entry is also
    written into a real journal file by systemd-journal-remote. `rotate`, `reboot`, ``clock_offset_s``
    (a wall clock jump) and `suppressed` reproduce journald events for the follower's tests."""

    def __init__(self, root: Path, hostname: str, *, real: bool | None = None) -> None:
        self.root = root
        self.path = journal_path(root)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        ids = load_ids(root)
        ids["hostname"] = hostname
        (root / IDS_FILE).write_text(json.dumps(ids))
        self.boot_id = ids["boot_id"]
        self.machine_id = ids["machine_id"]
        self.seqnum_id = ids["seqnum_id"]
        self.hostname = hostname
        self.seqnum = self._last_seqnum()
        self.clock_offset_s = 0.0
        self._mono_base_ns = int(ids.get("mono_base_ns", "0"))
        self._fh = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 - long-lived append handle
        use_real = journal_real.backend() == "journald" if real is None else real
        self.real: journal_real.RealJournal | None = journal_real.RealJournal(root) if use_real else None

    def _last_seqnum(self) -> int:
        last = 0
        try:
            with open(self.path, "rb") as fh:
                for raw in fh:
                    try:
                        last = max(last, int(json.loads(raw)["__SEQNUM"]))
                    except (ValueError, KeyError):
                        continue
        except OSError:
            return 0
        return last

    def append(self, fields: Mapping[str, object]) -> dict[str, str]:
        self.seqnum += 1
        real_us = time.time_ns() // 1000 + int(self.clock_offset_s * 1e6)
        mono_us = (time.monotonic_ns() - self._mono_base_ns) // 1000
        entry = {k: str(v) for k, v in fields.items() if v is not None}
        entry.setdefault("_BOOT_ID", self.boot_id)
        entry.setdefault("_MACHINE_ID", self.machine_id)
        entry.setdefault("_HOSTNAME", self.hostname)
        digest = hashlib.blake2b(repr(sorted(entry.items())).encode("utf-8", "surrogateescape"),
                                 digest_size=8).digest()
        xor = int.from_bytes(digest, "big")
        entry["__CURSOR"] = make_cursor(self.seqnum_id, self.seqnum, self.boot_id, mono_us, real_us, xor)
        entry["__REALTIME_TIMESTAMP"] = str(real_us)
        entry["__MONOTONIC_TIMESTAMP"] = str(mono_us)
        entry["__SEQNUM"] = str(self.seqnum)
        entry["__SEQNUM_ID"] = self.seqnum_id
        self._fh.write(json.dumps(entry) + "\n")
        self._fh.flush()
        if self.real is not None:
            self.real.write(entry)
        return entry

    def sync(self) -> None:
        """Wait until the real journal holds every entry appended so far (no-op without it)."""
        if self.real is not None and not self.real.sync():
            raise RuntimeError("systemd-journal-remote did not write the entries within 10 s")

    def rotate(self) -> None:
        """journald's file rotation (real backend only: the JSON-lines file is one file)."""
        if self.real is not None:
            self.real.rotate()

    def reboot(self) -> str:
        """A new boot: new `_BOOT_ID`, the monotonic clock starts again at zero. Returns the boot id."""
        ids = load_ids(self.root)
        self.boot_id = ids["boot_id"] = os.urandom(16).hex()
        self._mono_base_ns = time.monotonic_ns()
        ids["mono_base_ns"] = str(self._mono_base_ns)
        (self.root / IDS_FILE).write_text(json.dumps(ids))
        return self.boot_id

    def suppressed(self, unit: str, dropped: int) -> dict[str, str]:
        """journald's rate-limit report about `unit` (`journald-server.c`, MESSAGE_ID a596d6fe...)."""
        return self.append({"_PID": os.getpid(), "_UID": 0, "_GID": 0, "_COMM": "systemd-journal",
                            "_TRANSPORT": "driver", "PRIORITY": 6, "SYSLOG_IDENTIFIER": "systemd-journald",
                            "MESSAGE_ID": "a596d6fe7bfa4994828e72309e95d61e", "N_DROPPED": dropped,
                            "OBJECT_SYSTEMD_UNIT": unit, "_SYSTEMD_UNIT": "systemd-journald.service",
                            "MESSAGE": f"Suppressed {dropped} messages from {unit}"})

    def close(self) -> None:
        self._fh.close()
        if self.real is not None:
            self.real.close()


def unit_matches(entry: Mapping[str, str], unit: str) -> bool:
    """`journalctl -u UNIT` (systemd 252 add_matches_for_unit; checked against systemd's journalctl in
    tests/incidents/test_incidents_journal_real.py)."""
    if entry.get("_SYSTEMD_UNIT") == unit:
        return True
    if entry.get("_PID") == "1" and entry.get("UNIT") == unit:
        return True
    if entry.get("_UID") != "0":
        return False
    if entry.get("OBJECT_SYSTEMD_UNIT") == unit:
        return True
    return entry.get("MESSAGE_ID") == COREDUMP_MESSAGE_ID and entry.get("COREDUMP_UNIT") == unit


def read_entries(path: Path, offset: int = 0) -> tuple[list[dict[str, str]], int]:
    """Complete lines from `offset`; returns entries and the offset after the last complete line."""
    try:
        with open(path, "rb") as fh:
            fh.seek(offset)
            data = fh.read()
    except OSError:
        return [], offset
    end = data.rfind(b"\n")
    if end < 0:
        return [], offset
    entries = []
    for raw in data[: end + 1].splitlines():
        try:
            entries.append(json.loads(raw))
        except ValueError:
            continue
    return entries, offset + end + 1


def iter_all(path: Path) -> Iterator[dict[str, str]]:
    entries, _ = read_entries(path)
    yield from entries


def _needs_bytes(value: str) -> bool:
    for ch in value:
        code = ord(ch)
        if (code < 32 and ch not in "\n\t") or code == 127 or 0xDC80 <= code <= 0xDCFF:
            return True
    return False


def export_value(value: str, show_all: bool) -> object:
    """A field as `journalctl -o json` prints it: string, byte array, or null when too long."""
    raw = value.encode("utf-8", "surrogateescape")
    if not show_all and len(raw) + len("MESSAGE=") >= DATA_FIELD_MAX:
        return None
    if _needs_bytes(value):
        return list(raw)
    return value


def to_json_line(entry: Mapping[str, str], show_all: bool = False, fields: set[str] | None = None) -> str:
    out: dict[str, object] = {}
    for key, value in entry.items():
        if key in ("__SEQNUM", "__SEQNUM_ID"):
            continue  # printed from systemd 254 on; the sim emulates 252
        if fields is not None and not key.startswith("__") and key not in fields:
            continue
        out[key] = export_value(value, show_all)
    return json.dumps(out, ensure_ascii=False, separators=(",", ":"))


def _ident(entry: Mapping[str, str]) -> str:
    ident = entry.get("SYSLOG_IDENTIFIER") or entry.get("_COMM") or "unknown"
    pid = entry.get("_PID")
    return f"{ident}[{pid}]" if pid and entry.get("_TRANSPORT") != "kernel" else ident


def short_line(entry: Mapping[str, str], iso: bool = False, show_all: bool = False) -> str:
    """`-o short` (`Nov 29 22:23:01 host ident[pid]: msg`) and `-o short-iso`."""
    real = int(entry.get("__REALTIME_TIMESTAMP", "0")) / 1e6
    if iso:
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(real))
        stamp = stamp[:-2] + ":" + stamp[-2:]
    else:
        stamp = time.strftime("%b %d %H:%M:%S", time.localtime(real))
    msg = message_text(entry, show_all)
    return f"{stamp} {entry.get('_HOSTNAME', 'localhost')} {_ident(entry)}: {msg}"


def message_text(entry: Mapping[str, str], show_all: bool = False) -> str:
    msg = entry.get("MESSAGE", "")
    raw = msg.encode("utf-8", "surrogateescape")
    if not show_all and _needs_bytes(msg):
        return f"[{len(raw)}B blob data]"
    return msg


def read_backwards(path: Path, done: Callable[[list[dict[str, str]]], bool],
                   block: int = 1 << 18) -> tuple[list[dict[str, str]], int]:
    """Entries from the end of the file backwards (returned in file order) until `done(entries)`
    says enough — so `-n N` and `--after-cursor` on a large journal do not parse all of it.
    Also returns the file size read up to (the offset to follow from)."""
    try:
        fh = open(path, "rb")  # noqa: SIM115 - closed below
    except OSError:
        return [], 0
    with fh:
        end = fh.seek(0, os.SEEK_END)
        data = b""
        pos = end
        # the last line may be incomplete (being written): stop at the last newline
        entries: list[dict[str, str]] = []
        tail_cut = None
        while pos > 0:
            step = min(block, pos)
            pos -= step
            fh.seek(pos)
            data = fh.read(step) + data
            if tail_cut is None:
                cut = data.rfind(b"\n")
                if cut < 0:
                    continue
                tail_cut = end - (len(data) - cut - 1)
                data = data[: cut + 1]
            first_nl = data.find(b"\n") if pos > 0 else -1
            chunk, data = (data[first_nl + 1:], data[: first_nl + 1]) if pos > 0 else (data, b"")
            fresh = []
            for raw in chunk.splitlines():
                try:
                    fresh.append(json.loads(raw))
                except ValueError:
                    continue
            entries = fresh + entries
            if done(entries):
                break
        return entries, tail_cut if tail_cut is not None else 0
