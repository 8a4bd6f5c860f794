"""Test hook: flood the simulated host's journal with a unit's entries, fast, from another process.

`python -m support.journal_flood ROOT UNIT COUNT [--pid N] [--rate N] [--rotate-every N]` appends COUNT
stdout entries
(`MESSAGE=flood <i>`) for UNIT to ROOT's journal with the sim's `JournalWriter` (so cursors and
sequence numbers are journald's shape) and prints the last sequence number. Running it as its own
process keeps the writer off the event loop (and the GIL) of the test that follows the journal.
``--rotate-every N`` rotates the real journal file (journald's rotation, `simhost.journal_real`)
after every N entries. Only one writer may append at a time: use it while the simulated host's own
writer is closed.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from simhost.journal import JournalWriter


def flood(root: Path, unit: str, count: int, *, pid: int = 4242, rate: float = 0.0,
          hostname: str = "sim-1", rotate_every: int = 0) -> int:
    """Append `count` entries; `rate` > 0 paces them (entries per second). Returns the last seqnum."""
    writer = JournalWriter(root, hostname)
    started = time.monotonic()
    try:
        for i in range(count):
            writer.append({"_SYSTEMD_UNIT": unit, "_PID": pid, "_COMM": "python3", "PRIORITY": 6,
                           "_TRANSPORT": "stdout", "SYSLOG_IDENTIFIER": "python3", "MESSAGE": f"flood {i}"})
            if rotate_every and i % rotate_every == rotate_every - 1 and i < count - 1:
                writer.rotate()
            if rate > 0 and i % 100 == 99:
                ahead = (i + 1) / rate - (time.monotonic() - started)
                if ahead > 0:
                    time.sleep(ahead)
        writer.sync()
        return writer.seqnum
    finally:
        writer.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="support.journal_flood")
    parser.add_argument("root", type=Path)
    parser.add_argument("unit")
    parser.add_argument("count", type=int)
    parser.add_argument("--pid", type=int, default=4242)
    parser.add_argument("--rate", type=float, default=0.0)
    parser.add_argument("--hostname", default="sim-1")
    parser.add_argument("--rotate-every", type=int, default=0)
    args = parser.parse_args(argv)
    last = flood(args.root, args.unit, args.count, pid=args.pid, rate=args.rate, hostname=args.hostname,
                 rotate_every=args.rotate_every)
    print(last)
    return 0


if __name__ == "__main__":
    sys.exit(main())
