"""The fake server's scheduler processes: one forked child per TP rank, like SGLang's.

Each child renames itself `sglang::scheduler_TPn` (comm `sglang::schedul`), dies with its parent
(PR_SET_PDEATHSIG) and on SIGTERM (no handler, as SGLang's schedulers), holds its GPU's memory
in the ledger (written by the parent) and writes the lines SGLang's scheduler of that rank would
write: the parent hands it each line through a pipe (length-prefixed) and waits for the child's
acknowledgement, so the journal sees the line from the scheduler's own pid and in order. When a
child is gone the parent writes the line itself.
"""

from __future__ import annotations

import os
import select
import signal
import struct
from dataclasses import dataclass

from simhost import procs

_LEN = struct.Struct("!I")


@dataclass
class Relay:
    pid: int
    wfd: int
    ackfd: int


RELAYS: dict[int, Relay] = {}


def title(rank: int, tp: int) -> str:
    return f"sglang::scheduler_TP{rank}" if tp > 1 else "sglang::scheduler"


def _read_exact(fd: int, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = os.read(fd, n - len(data))
        if not chunk:
            return b""
        data += chunk
    return data


def _child(rank: int, tp: int, rfd: int, ackfd: int) -> None:
    procs.set_comm(title(rank, tp))
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGUSR1, signal.SIGUSR2, signal.SIGPIPE):
        signal.signal(sig, signal.SIG_DFL)
    try:
        while True:
            head = _read_exact(rfd, _LEN.size)
            if not head:
                break
            data = _read_exact(rfd, _LEN.unpack(head)[0])
            view = memoryview(data)
            while view:
                view = view[os.write(1, view):]
            os.write(ackfd, b".")
    finally:
        os._exit(0)


def fork_ranks(tp: int) -> list[int]:
    """Fork the scheduler children (before any event loop or thread exists)."""
    pids = []
    for rank in range(tp):
        rfd, wfd = os.pipe()
        ack_r, ack_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(wfd)
            os.close(ack_r)
            for other in RELAYS.values():
                os.close(other.wfd)
                os.close(other.ackfd)
            _child(rank, tp, rfd, ack_w)
        os.close(rfd)
        os.close(ack_w)
        RELAYS[rank] = Relay(pid, wfd, ack_r)
        pids.append(pid)
    return pids


def write_as(rank: int, data: bytes) -> bool:
    """Have rank's scheduler write `data` to the service's stdout; False if it cannot."""
    relay = RELAYS.get(rank)
    if relay is None:
        return False
    try:
        os.write(relay.wfd, _LEN.pack(len(data)) + data)
        ready, _, _ = select.select([relay.ackfd], [], [], 2.0)
        if ready and os.read(relay.ackfd, 1):
            return True
    except OSError:
        pass
    drop(rank)
    return False


def drop(rank: int) -> None:
    relay = RELAYS.pop(rank, None)
    if relay is not None:
        for fd in (relay.wfd, relay.ackfd):
            try:
                os.close(fd)
            except OSError:
                pass
