"""The simulated host's real systemd journal: every entry mirrored into journald's own file format.

When `systemd-journal-remote` is installed (Debian: `apt-get install systemd-journal-remote`), each
`simhost.journal.JournalWriter` keeps one long-running ``systemd-journal-remote -o DIR/journal/real/
system.journal -`` and feeds it the journal export format (``KEY=value`` lines, binary-safe
``KEY\\n<u64 LE length><bytes>\\n`` for values with newlines or control bytes, a blank line after each
entry). systemd writes the file and assigns the real ``__CURSOR``/seqnum, so the sim's ``journalctl``
on PATH becomes systemd's own ``/usr/bin/journalctl --directory=DIR/journal/real`` (see
`simhost.tools.install`): ``-u``, ``-o json``, ``-f``, ``--after-cursor``, ``--cursor-file``, ``-n``,
``--since``, ``-k`` behave as on a host. The JSON-lines journal (`simhost.journal`) stays the sim's own
record (``systemctl status`` and the sim tests read it) and is the fallback ``journalctl`` where
systemd-journal-remote is absent or ``SIMHOST_JOURNAL=python`` is set.

Rotation is journald's: the active file is closed, renamed to the archived name
``system@<seqnum id>-<head seqnum>-<head realtime>.journal`` (so ``journalctl --vacuum-files`` /
``--vacuum-size`` can delete it) and a new active file is started. Entries go to the pipe from a
thread, so a slow systemd-journal-remote never blocks the simulated host's event loop (a blocking
write there delayed the reading of the service's stdout and reordered its lines against systemd's).
Stdlib only, and light to import (`os.posix_spawn`, no `subprocess`): the sim's Python ``journalctl``
imports this module through `simhost.journal` and must start fast.
"""

from __future__ import annotations

import os
import struct
import threading
import time
from collections import deque
from collections.abc import Mapping
from pathlib import Path

REMOTE = Path("/lib/systemd/systemd-journal-remote")
JOURNALCTL = Path("/usr/bin/journalctl")
REAL_DIR = "journal/real"
ACTIVE = "system.journal"
_KEEP_DUNDER = ("__REALTIME_TIMESTAMP", "__MONOTONIC_TIMESTAMP")
# journal file header (src/libsystemd/sd-journal/journal-def.h): seqnum_id at 72, then u64 fields
_SEQNUM_ID_OFF, _TAIL_SEQNUM_OFF, _HEAD_SEQNUM_OFF, _HEAD_REALTIME_OFF = 72, 160, 168, 184


def backend() -> str:
    """``journald`` when the real journal is written and read, else ``python`` (the sim's own)."""
    if os.environ.get("SIMHOST_JOURNAL", "").lower() == "python":
        return "python"
    return "journald" if REMOTE.exists() and JOURNALCTL.exists() else "python"


def real_dir(root: Path) -> Path:
    return root / REAL_DIR


def _valid_field(name: str) -> bool:
    if not name or len(name) > 64 or name[0].isdigit():
        return False
    return all(c.isupper() or c.isdigit() or c == "_" for c in name if c.isascii()) and name.isascii()


def export_record(entry: Mapping[str, str]) -> bytes:
    """One entry in the journal export format (binary form for values that are not one clean line)."""
    out = bytearray()
    for key, value in entry.items():
        if key.startswith("__") and key not in _KEEP_DUNDER:
            continue
        if not _valid_field(key):
            continue
        raw = value.encode("utf-8", "surrogateescape")
        if b"\n" in raw or any(b < 32 and b != 9 for b in raw):
            out += key.encode() + b"\n" + struct.pack("<Q", len(raw)) + raw + b"\n"
        else:
            out += key.encode() + b"=" + raw + b"\n"
    out += b"\n"
    return bytes(out)


def _header(path: Path) -> tuple[str, int, int, int]:
    """(seqnum id, tail seqnum, head seqnum, head realtime) of a journal file."""
    with open(path, "rb") as fh:
        data = fh.read(200)
    if len(data) < 200:
        return "", 0, 0, 0
    seqnum_id = data[_SEQNUM_ID_OFF:_SEQNUM_ID_OFF + 16].hex()
    tail, head = struct.unpack_from("<QQ", data, _TAIL_SEQNUM_OFF)
    (head_rt,) = struct.unpack_from("<Q", data, _HEAD_REALTIME_OFF)
    return seqnum_id, tail, head, head_rt


class RealJournal:
    """One ``systemd-journal-remote`` writing ``DIR/journal/real/system.journal`` from a pipe."""

    def __init__(self, root: Path) -> None:
        self.dir = real_dir(root)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.active = self.dir / ACTIVE
        self._pid: int | None = None
        self._fd: int | None = None
        self._written = 0
        self._base = 0
        self._pending: deque[bytes] = deque()
        self._queued = 0
        self._sent = 0
        self._closing = False
        self._cond = threading.Condition()
        self._start()
        self._pump_thread = threading.Thread(target=self._pump, name="journal-remote-pipe", daemon=True)
        self._pump_thread.start()

    def _start(self) -> None:
        self._base = _header(self.active)[1] if self.active.exists() else 0
        self._written = 0
        read_end, write_end = os.pipe()
        os.set_inheritable(read_end, True)
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            self._pid = os.posix_spawn(
                str(REMOTE), [str(REMOTE), "-o", str(self.active), "--compress=no", "-"], dict(os.environ),
                file_actions=[(os.POSIX_SPAWN_DUP2, read_end, 0), (os.POSIX_SPAWN_DUP2, devnull, 1),
                              (os.POSIX_SPAWN_DUP2, devnull, 2), (os.POSIX_SPAWN_CLOSE, write_end)],
                setsid=True)
        finally:
            os.close(read_end)
            os.close(devnull)
        with self._cond:
            self._fd = write_end

    def write(self, entry: Mapping[str, str]) -> None:
        """Queue one entry for the pipe (never blocks on systemd-journal-remote)."""
        data = export_record(entry)
        with self._cond:
            self._pending.append(data)
            self._queued += 1
            self._written += 1
            self._cond.notify_all()

    def _pump(self) -> None:
        while True:
            with self._cond:
                while not self._pending and not self._closing:
                    self._cond.wait()
                if not self._pending:
                    return
                count = len(self._pending)
                data = memoryview(b"".join(self._pending))
                self._pending.clear()
                fd = self._fd
            try:
                while data and fd is not None:
                    data = data[os.write(fd, data):]
            except OSError:
                pass  # systemd-journal-remote is gone: what it did not take is lost, as with a dead journald
            with self._cond:
                self._sent += count
                self._cond.notify_all()

    def _drain(self, timeout_s: float = 30.0) -> bool:
        """Wait until every queued entry is in the pipe."""
        with self._cond:
            return self._cond.wait_for(lambda: self._sent >= self._queued, timeout_s)

    def sync(self, timeout_s: float = 10.0) -> bool:
        """Wait until systemd wrote every entry sent so far into the active file."""
        deadline = time.monotonic() + timeout_s
        if not self._drain(timeout_s):
            return False
        while True:
            try:
                if _header(self.active)[1] >= self._base + self._written:
                    return True
            except OSError:
                pass
            if time.monotonic() > deadline:
                return False
            time.sleep(0.005)

    def _stop(self) -> None:
        """Close the pipe: systemd-journal-remote writes what it has, closes the file and exits."""
        self._drain()
        with self._cond:
            fd, pid, self._fd, self._pid = self._fd, self._pid, None, None
        if fd is not None:
            os.close(fd)
        if pid is None:
            return
        deadline = time.monotonic() + 30
        while os.waitpid(pid, os.WNOHANG) == (0, 0):
            if time.monotonic() > deadline:
                os.kill(pid, 9)
                os.waitpid(pid, 0)
                return
            time.sleep(0.005)

    def rotate(self) -> Path | None:
        """journald's rotation: archive the active file under its journald name, start a new one."""
        self._stop()
        archived = None
        if self.active.exists():
            seqnum_id, _tail, head, head_rt = _header(self.active)
            archived = self.dir / f"system@{seqnum_id}-{head:016x}-{head_rt:016x}.journal"
            os.replace(self.active, archived)
        self._start()
        return archived

    def close(self) -> None:
        self._stop()
        with self._cond:
            self._closing = True
            self._cond.notify_all()
        self._pump_thread.join(timeout=30)
