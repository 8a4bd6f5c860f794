"""A watchdog for a frozen test process: when no Python code of the process runs for `after_s` seconds, faulthandler
(a C thread, no GIL needed) writes every thread's stack to `DIR/<pid>.txt`.

Why: twice in session 13 a phase-1 test waited ~30 s or more on something that should take milliseconds (a journal
follower's final SQLite flush past a 10 s wait; a test held to its 120 s timeout, its report then lost to CPython's AST
bug). Both fit a freeze of the whole process — a thread blocked in C holding the GIL, as the SQLite cursor finalizer
of docs/RELIABILITY.md once did — better than slowness, but nothing showed where it stood. A Python thread re-arms the
timer every second; a thread that holds the GIL stops it, and the dump names the frozen frame. A process starved of
CPU that long is dumped too: the dump is evidence, never a failure. `scripts/test-phases.sh` sets DIR
(PITCREW_FREEZE_DIR) and prints what was written."""

from __future__ import annotations

import faulthandler
import os
import threading
import time
from pathlib import Path
from typing import TextIO

_out: list[TextIO] = []  # the open file, kept for faulthandler's fd; empty until `start`


def start(directory: Path, after_s: float = 20.0) -> None:
    """Arm the watchdog for this process (once): stacks go to `directory/<pid>.txt`."""
    if _out:
        return
    directory.mkdir(parents=True, exist_ok=True)
    out = (directory / f"{os.getpid()}.txt").open("a", encoding="utf-8")
    _out.append(out)
    period = min(1.0, after_s / 4)

    def rearm() -> None:
        while True:
            faulthandler.dump_traceback_later(after_s, repeat=False, file=out)
            time.sleep(period)

    threading.Thread(target=rearm, name="freeze-watch", daemon=True).start()
