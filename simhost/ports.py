"""The ports of the simulated hosts and of the servers tests start: drawn below the ephemeral range and claimed
machine-wide (the one way to pick a port that something binds later).

A sim host's engine port is written into its unit and bound by the server later, and again at every restart; a real
systemd host's sshd port is written into its config and bound inside the namespace; a test's bot binds its HTTP port
in a child process. A port from ``bind(("127.0.0.1", 0))`` is free only at that moment: another test process (whose
``bind(0)`` draws from the same ephemeral range, 32768-60999 on Linux, as every outgoing connection does) could take
it first; the preflight then saw another test's server listening on the port (session 9, once in nine fresh-clone
runs). So a port is drawn from PORT_RANGE, below the ephemeral range, claimed with an ``O_EXCL`` file naming the
claiming pid in CLAIMS, and released when its owner closes. A claim left by a killed process keeps its port out of the
draw until it is an hour old (then it is removed when drawn), so a live claim is never taken over. A server that binds
its own socket at once (asyncio's ``start_server(..., 0)``) keeps it and needs none of this.
"""

from __future__ import annotations

import os
import random
import socket
import tempfile
import time

PORT_RANGE = (20000, 32000)
CLAIMS = os.path.join(tempfile.gettempdir(), "pitcrew-sim-ports")
_DRAWS = 500
STALE_S = 3600.0


def claim_port(host: str = "127.0.0.1", *, claims: str = CLAIMS) -> int:
    """A port no other claimant holds and nothing listens on; `release_port` gives it back."""
    os.makedirs(claims, exist_ok=True)
    rng = random.SystemRandom()
    for _ in range(_DRAWS):
        port = rng.randrange(*PORT_RANGE)
        path = os.path.join(claims, str(port))
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            _drop_if_stale(path)
            continue
        with os.fdopen(fd, "w") as fh:
            fh.write(f"{os.getpid()}\n")
        if _bindable(host, port):
            return port
        release_port(port, claims=claims)
    raise RuntimeError(f"no free port in {PORT_RANGE[0]}-{PORT_RANGE[1] - 1} after {_DRAWS} draws")


def release_port(port: int, *, claims: str = CLAIMS) -> None:
    _unlink(os.path.join(claims, str(port)))


def _bindable(host: str, port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def _drop_if_stale(path: str) -> None:
    """Remove a claim whose process is gone and which is older than STALE_S (a killed run's)."""
    try:
        age = time.time() - os.stat(path).st_mtime
        with open(path) as fh:
            pid = int(fh.read().strip() or 0)
    except (OSError, ValueError):
        return
    if age < STALE_S or pid <= 0 or os.path.exists(f"/proc/{pid}"):
        return
    _unlink(path)


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
