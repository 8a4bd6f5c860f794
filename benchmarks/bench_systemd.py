"""Boot and teardown of a simulated host under systemd 252 itself, against the sim's supervisor in the same run.

For each of N rounds, per backend (alternating, so both see the same machine load):

* boot     = `SimHost.__aenter__` start -> the engine unit `active` (`systemctl is-active`, over the host's own
             tools): for real systemd the namespace, overlay, setup, PID 1, journald, D-Bus, sshd and the unit's
             start; for the supervisor its control socket, asyncssh server and spawn
* ready    = -> the engine serves `/health` (the fake server's own load, ~105 s x time scale, included)
* teardown = `__aexit__` (real: PID 1 killed, every process reaped, cgroups and overlay removed)
* left     = processes, cgroups and mounts of a test host still on the machine after teardown (must be 0)

Goals (issue 23): boot <= 5 s, teardown <= 2 s with nothing left.

    .venv/bin/python benchmarks/bench_systemd.py [--rounds 10] [--time-scale 0.01]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

GOAL_BOOT_S = 5.0
GOAL_TEARDOWN_S = 2.0


def leftovers() -> int:
    from simhost.systemd.namespace import CGROUP_PREFIX

    n = 0
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            n += CGROUP_PREFIX in Path(f"/proc/{pid}/cgroup").read_text()
        except OSError:
            continue
    for hierarchy in Path("/sys/fs/cgroup").iterdir():
        n += sum(1 for p in hierarchy.rglob(f"{CGROUP_PREFIX}*") if p.is_dir())
    n += sum("pitcrew-sim" in line for line in Path("/proc/self/mountinfo").read_text().splitlines())
    return n


async def is_active(sim: object) -> bool:
    real = getattr(sim, "real", None)
    if real is not None:
        _, out = await real.systemctl("is-active", real.unit)
        return out.strip() == "active"
    sup = getattr(sim, "supervisor", None)
    return sup is not None and sup.active_state == "active"


async def one(backend: str, scale: float, tmp: Path) -> dict[str, float]:
    from simhost.host import SimHost

    sim = SimHost(tmp / f"{backend}-{time.monotonic_ns()}", time_scale=scale, systemd=backend)
    t0 = time.monotonic()
    await sim.__aenter__()
    try:
        while not await is_active(sim):
            await asyncio.sleep(0.01)
        boot = time.monotonic() - t0
        await sim.wait_ready(60)
        ready = time.monotonic() - t0
    finally:
        t1 = time.monotonic()
        await sim.__aexit__(None, None, None)
        teardown = time.monotonic() - t1
    return {"boot_s": boot, "ready_s": ready, "teardown_s": teardown, "left": float(leftovers())}


async def run(rounds: int, scale: float) -> dict[str, list[dict[str, float]]]:
    out: dict[str, list[dict[str, float]]] = {"python": [], "real": []}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(rounds):
            for backend in ("real", "python"):
                out[backend].append(await one(backend, scale, Path(tmp)))
    return out


def main() -> int:
    from simhost.systemd import unavailable

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--time-scale", type=float, default=0.01)
    args = ap.parse_args()
    if (why := unavailable()) is not None:
        print(f"real systemd cannot be booted here: {why}")
        return 2
    res = asyncio.run(run(args.rounds, args.time_scale))
    print(f"simulated host boot and teardown, {args.rounds} rounds each, time scale {args.time_scale} "
          "(median / max, seconds)")
    print(f"{'service manager':<22} {'boot':>13} {'ready':>13} {'teardown':>13} {'left':>5}")
    for backend, name in (("real", "systemd 252 itself"), ("python", "the sim's supervisor")):
        rows = res[backend]

        def cell(key: str, rows: list[dict[str, float]] = rows) -> str:
            vals = [r[key] for r in rows]
            return f"{statistics.median(vals):5.2f} / {max(vals):5.2f}"

        print(f"{name:<22} {cell('boot_s'):>13} {cell('ready_s'):>13} {cell('teardown_s'):>13} "
              f"{int(sum(r['left'] for r in rows)):>5}")
    real = res["real"]
    boot, down = max(r["boot_s"] for r in real), max(r["teardown_s"] for r in real)
    left = sum(r["left"] for r in real)
    ok = boot <= GOAL_BOOT_S and down <= GOAL_TEARDOWN_S and left == 0
    print(f"real systemd: boot max {boot:.2f} s (goal <= {GOAL_BOOT_S:g} s), teardown max {down:.2f} s "
          f"(goal <= {GOAL_TEARDOWN_S:g} s), {int(left)} left behind: {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
