"""How long the `pitcrew` command takes to start: `pitcrew --help` and `pitcrew bench --help` against
`python -c pass` (the interpreter's own start) in the same run, wall time, median of several runs each.

Goal: both under 0.3 s on this machine (the CLI imports a command's dependencies only when that command runs:
bot/cli.py). Runs are interleaved (pass, --help, bench --help, pass, ...) so a burst of load on the shared
machine hits all three alike.

    .venv/bin/python benchmarks/bench_cli_start.py [--runs 9] [--pitcrew PATH]

`--pitcrew PATH` times another install's `pitcrew` (e.g. main's, for the figure before a change); its
interpreter is the one next to it.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

GOAL_S = 0.3


def wall(argv: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=9)
    ap.add_argument("--pitcrew", default=str(Path(sys.executable).with_name("pitcrew")))
    a = ap.parse_args()
    pitcrew = Path(a.pitcrew)
    python = str(pitcrew.with_name("python"))
    cases = {"python -c pass": [python, "-c", "pass"], "pitcrew --help": [str(pitcrew), "--help"],
             "pitcrew bench --help": [str(pitcrew), "bench", "--help"]}
    times: dict[str, list[float]] = {name: [] for name in cases}
    for argv in cases.values():
        wall(argv)  # once unmeasured: the page cache and the .pyc files
    for _ in range(a.runs):
        for name, argv in cases.items():
            times[name].append(wall(argv))
    base = statistics.median(times["python -c pass"])
    print(f"{pitcrew}  runs: {a.runs}, load average {os.getloadavg()[0]:.2f}; goal: under {GOAL_S} s")
    print("| command | median s | min s | max s | over `python -c pass` s | |")
    print("|---|---|---|---|---|---|")
    ok = True
    for name, ts in times.items():
        med = statistics.median(ts)
        verdict = "" if name == "python -c pass" else ("ok" if med < GOAL_S else "MISSED")
        ok = ok and verdict != "MISSED"
        print(f"| `{name}` | {med:.3f} | {min(ts):.3f} | {max(ts):.3f} | {med - base:+.3f} | {verdict} |")
    print("both within the goal" if ok else "goal MISSED")


if __name__ == "__main__":
    main()
