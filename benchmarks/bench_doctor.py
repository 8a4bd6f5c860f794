"""`pitcrew doctor` against 10 hosts at once: the wall time of one run against the 10 s goal (issue 27).

Boots N simulated GPU hosts (systemd 252 itself when this machine can boot it, else the sim's supervisor:
`simhost.systemd.unavailable()` says why), waits until every engine serves, then times:

* run      = one doctor run over all N hosts as the CLI makes it: a fresh host pool and a fresh engine-flag cache
             (SSH connect + key check, unit, engine `--help`, sudo -n -l, journal, nvidia-smi, disk, /health on
             every host, hosts in parallel), `--rounds` times;
* cli      = the whole `pitcrew --config X doctor` process once (interpreter start and imports included);
* cpu      = the CPU time of the doctor's own process in a run (SSH crypto, parsing): the rest is the hosts';
* findings = how many ✓ / ⚠ / ✗ lines the runs printed (a good fleet is all ✓ on systemd 252).

    .venv/bin/python benchmarks/bench_doctor.py [--hosts 10] [--rounds 3] [--systemd auto|real|python]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

GOAL_S = 10.0


async def boot(stack: AsyncExitStack, tmp: Path, n: int, backend: str, scale: float) -> list[Any]:
    from simhost.host import SimHost

    sims = []
    for i in range(n):  # one at a time: boots compete for the same two cores
        sim = await stack.enter_async_context(SimHost(tmp / f"h{i}", name=f"gpu-{i + 1:02d}", time_scale=scale,
                                                      systemd=backend))
        sims.append(sim)
    await asyncio.gather(*(s.wait_ready(120) for s in sims))
    return sims


async def one_run(entries: list[dict[str, Any]]) -> Any:
    from bot.app import host_specs
    from bot.settings import load_settings
    from services.doctor import Doctor
    from services.hosts import HostPool

    async with HostPool.from_specs(host_specs(load_settings(None, hosts=entries))) as pool:
        return await Doctor(pool).run()


def toml(entries: list[dict[str, Any]]) -> str:
    return "".join("[[hosts]]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in e.items()) for e in entries)


async def main(n: int, rounds: int, backend: str, scale: float) -> int:
    from bot.demo import host_entry
    from simhost.systemd import unavailable

    why = unavailable()
    if backend == "auto":
        backend = "real" if why is None else "python"
    elif backend == "real" and why is not None:
        print(f"real systemd cannot be booted here: {why}")
        return 2
    with tempfile.TemporaryDirectory(prefix="bench-doctor-") as tmp_s:
        tmp = Path(tmp_s)
        async with AsyncExitStack() as stack:
            t0 = time.monotonic()
            sims = await boot(stack, tmp, n, backend, scale)
            print(f"{n} hosts on {'systemd 252 itself' if backend == 'real' else 'the sim supervisor'} "
                  f"booted and serving in {time.monotonic() - t0:.1f} s")
            entries = [host_entry(s.info) for s in sims]
            runs, marks = [], {"ok": 0, "warn": 0, "fail": 0}
            by_check: dict[str, list[float]] = {}
            cpu: list[float] = []
            for r in range(rounds):
                load1 = Path("/proc/loadavg").read_text().split()[0]
                cpu0 = time.process_time()
                report = await one_run(entries)
                cpu.append(time.process_time() - cpu0)
                runs.append(report.seconds)
                slowest = max(report.hosts, key=lambda h: h.seconds)
                for h in report.hosts:
                    for f in h.findings:
                        marks[f.status] += 1
                        by_check.setdefault(f.check, []).append(f.seconds)
                print(f"  run {r + 1}: {report.seconds:.2f} s (slowest host {slowest.name} {slowest.seconds:.2f} s), "
                      f"exit {report.exit_code}, doctor's own CPU {cpu[-1]:.2f} s, load {load1}")
                if r == 0 and not report.ok:
                    print(report.text())
            config = tmp / "pitcrew.toml"
            config.write_text(toml(entries))
            t1 = time.monotonic()
            proc = await asyncio.to_thread(subprocess.run, [sys.executable, "-m", "bot", "--config", str(config),
                                                            "doctor"], cwd=ROOT, capture_output=True, text=True)
            cli = time.monotonic() - t1
    med, worst = statistics.median(runs), max(runs)
    print(f"doctor over {n} hosts: median {med:.2f} s, max {worst:.2f} s over {rounds} runs "
          f"(goal <= {GOAL_S:.0f} s: {'met' if worst <= GOAL_S else 'NOT met'})")
    print(f"whole CLI process (`pitcrew --config X doctor`): {cli:.2f} s, exit {proc.returncode}")
    print(f"findings over all runs: {marks['ok']} ✓, {marks['warn']} ⚠, {marks['fail']} ✗")
    print("per check, seconds (median / max over hosts and runs): " + ", ".join(
        f"{c} {statistics.median(v):.2f}/{max(v):.2f}" for c, v in by_check.items()))
    load = Path("/proc/loadavg").read_text().split()[:3]
    print(f"machine load average (1, 5, 15 min): {' '.join(load)} on {os.cpu_count()} cores")
    return 0 if worst <= GOAL_S else 1


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hosts", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--systemd", choices=["auto", "real", "python"], default="auto")
    ap.add_argument("--time-scale", type=float, default=0.01)
    a = ap.parse_args()
    sys.exit(asyncio.run(main(a.hosts, a.rounds, a.systemd, a.time_scale)))
