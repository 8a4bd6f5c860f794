"""The fake vLLM's EngineCore process: a forked child that writes the engine's log lines under its own pid.

vLLM V1 runs the engine in its own process (`VLLM::EngineCore`, comm `VLLM::EngineCor`, log prefix
`(EngineCore_DP0 pid=N)`). The API server hands each line to the child through a pipe
(length-prefixed) and waits for its acknowledgement, so the journal sees the line from the child's
pid, in order. The child dies with its parent (PR_SET_PDEATHSIG) and on SIGTERM/SIGKILL; when it is
gone the parent writes the line itself.
"""

from __future__ import annotations

import os
import select
import signal
import struct

from simhost import procs

TITLE = "VLLM::EngineCore"
_LEN = struct.Struct("!I")


class Core:
    def __init__(self) -> None:
        self.pid = 0
        self._wfd = -1
        self._ackfd = -1

    def fork(self) -> int:
        """Fork the EngineCore child (before any event loop or thread exists)."""
        rfd, wfd = os.pipe()
        ack_r, ack_w = os.pipe()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - runs in the child
            os.close(wfd)
            os.close(ack_r)
            _child(rfd, ack_w)
        os.close(rfd)
        os.close(ack_w)
        self.pid, self._wfd, self._ackfd = pid, wfd, ack_r
        return pid

    def write(self, data: bytes) -> bool:
        if self._wfd < 0:
            return False
        try:
            os.write(self._wfd, _LEN.pack(len(data)) + data)
            ready, _, _ = select.select([self._ackfd], [], [], 2.0)
            if ready and os.read(self._ackfd, 1):
                return True
        except OSError:
            pass
        self.close()
        return False

    def close(self) -> None:
        for fd in (self._wfd, self._ackfd):
            if fd >= 0:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self._wfd = self._ackfd = -1

    def kill(self) -> None:
        self.close()
        if self.pid:
            procs.kill(self.pid, signal.SIGKILL)


def _read_exact(fd: int, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = os.read(fd, n - len(data))
        if not chunk:
            return b""
        data += chunk
    return data


def _child(rfd: int, ackfd: int) -> None:  # pragma: no cover - runs in the child
    procs.set_comm(TITLE)
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGUSR1, signal.SIGUSR2, signal.SIGPIPE):
        signal.signal(sig, signal.SIG_DFL)
    try:
        while True:
            head = _read_exact(rfd, _LEN.size)
            if not head:
                break
            view = memoryview(_read_exact(rfd, _LEN.unpack(head)[0]))
            while view:
                view = view[os.write(1, view):]
            os.write(ackfd, b".")
    finally:
        os._exit(0)
