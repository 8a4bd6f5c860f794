"""Alert latency: from the journal entry that completes the restart-loop condition to the chat outbox.

One simulated host (the sim's SSH server, `journalctl`, `nvidia-smi`, journal writer; see
`bench_fleet.py`) gets N restart loops one after the other (two failed starts each: SGLang's `Not
enough memory` start-up failure and systemd's exit messages). The bot side is the production path
over real SSH: `JournalSupervisor` → `JournalFollower` (`journalctl -f -o json`) → `IncidentMonitor`
(loop detection, side evidence over SSH, diagnosis, database) → `IncidentNotifier` → a database outbox.
Between loops the incident is resolved and the loop window passes, so every loop is a new alert.

Printed: p50/p95/max of (outbox time − `__REALTIME_TIMESTAMP` of the completing entry), and where the
time goes: journal delivery (entry written → handled by the monitor), the side-evidence probes over
SSH, and the rest (diagnosis, database, outbox). For reference, Prometheus + Alertmanager with their
defaults (scrape 15 s or 1 min, `for:` clause, `group_wait` 30 s) need 30 s or more.

    .venv/bin/python benchmarks/bench_alert_latency.py [--loops 30]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_fleet

import services.incidents.monitor as incidents


def instrument() -> dict[str, list[float]]:
    """Wrap the monitor's failure handler and evidence probes to time them (benchmark only)."""
    times: dict[str, list[float]] = {"delivery": [], "evidence": []}
    gather = incidents.gather_side_evidence
    on_failure = incidents.IncidentMonitor._on_failure

    async def timed_gather(*a: Any, **k: Any) -> Any:
        t = time.monotonic()
        try:
            return await gather(*a, **k)
        finally:
            times["evidence"].append(time.monotonic() - t)

    async def timed_on_failure(self: Any, host: str, unit: str, track: Any, ev: Any, inv: str) -> None:
        if ev.kind == "main_exited":
            times["delivery"].append(time.time() - ev.realtime_us / 1e6)
        await on_failure(self, host, unit, track, ev, inv)

    incidents.gather_side_evidence = timed_gather  # type: ignore[assignment]
    incidents.IncidentMonitor._on_failure = timed_on_failure  # type: ignore[method-assign]
    return times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--loops", type=int, default=30)
    args = ap.parse_args()
    times = instrument()
    r = asyncio.run(bench_fleet.measure(1, args.loops, 0.0, sequential=True, window_s=1.0))
    ms = 1000.0
    print(f"alert latency over {r['alerts']} loops (one host over SSH, time from the completing journal entry "
          "to the outbox)")
    print(f"  p50 {r['p50_s'] * ms:.0f} ms   p95 {r['p95_s'] * ms:.0f} ms   max {r['max_s'] * ms:.0f} ms   "
          "(goal p95 < 1000 ms; Prometheus + Alertmanager defaults: >= 30000 ms)")
    d, e = times["delivery"], times["evidence"]
    if d and e:
        dm, em = statistics.median(d), statistics.median(e)
        rest = max(0.0, r["p50_s"] - em - dm)
        print(f"  of which: journal delivery p50 {dm * ms:.0f} ms, side-evidence probes over SSH p50 "
              f"{em * ms:.0f} ms (p95 {bench_fleet.pct(e, 0.95) * ms:.0f} ms), rest (diagnosis, database, "
              f"outbox) ~{rest * ms:.0f} ms")
    print(f"  bot RSS {r['rss_mib']:.0f} MiB; {r['entries']} journal entries, {r['bad_lines']} bad lines")


if __name__ == "__main__":
    main()
