"""The suite's xdist groups and its phases: test files whose tests must run on one xdist worker, one after the other,
and the tests that run beside phase 1 (`wallclock`) or after it (`serial`) (`tests/conftest.py` applies the groups
through xdist's scheduler hook and the marks at collection)."""

from __future__ import annotations

# Test files whose tests share an expensive session fixture and must run on one xdist worker, one after the other:
# `make test`'s `--dist loadgroup` sends each group to a single worker (and, being the largest work units, first).
# Declared here by path rather than with xdist's `xdist_group` mark: xdist 3.8 tags a grouped test by rewriting
# `item._nodeid`, which pytest 9 no longer reads (the node id lives in `item._id`), so the mark silently did
# nothing: the real-vLLM tests were spread over all four workers and each worker started both servers.
# A group ending in "[" is split by the test's parameter: one work unit per version of the real vLLM (each worker starts
# one server: the two versions' starts ran one after the other on one worker, 3-5 minutes, the tail of phase 1).
XDIST_GROUPS = {"tests/simhost/test_real_vllm.py": "real-vllm["}

# Two kinds of tests do not run among phase 1's (scripts/test-phases.sh runs them, `make test` runs that):
#
# `wallclock` — whole-bot scenarios on real time: lease TTLs of 2-3 s against heartbeats, the unit sampled every
#   200 ms, a server that never answers. Among phase 1's tests at normal priority (load 8-15 on 2 cores) their
#   heartbeats came late; they run at the same time as phase 1 but at normal priority while phase 1 runs under
#   SCHED_IDLE, so they get a core whenever they want one. Mostly waiting, in the two work units of LEASE_UNITS.
#
# `serial` — the tests that assert a figure (time or a rate against a ground truth), alone after phase 1: even under
#   SCHED_IDLE phase 1 bent them (session 9, one run in two: the truth server's rate read 4 % low, the simulated
#   server's 8 %, the sweep's plateau call lost; caches and loopback softirqs are shared whatever the priority):
#   - MEASUREMENTS, one test at a time in each of their work units:
#     - PACED: the tests that wait on a paced server or clock (a truth server's token schedule, Slack's pacing
#       intervals, the App Home debounce) and use little CPU (~5 CPU-s in ~54 s of wall time, the serial phase's
#       longest unit while it was one): two units of ~27 s (PACED_UNITS, the times of session 9 in the comments);
#     - the rest ("measurements"): the ones that load the CPU themselves (200 commands/s, the benchmark child's CPU,
#       the simulated server's rates at C=64);
#   - the sweeps (SWEEP_UNITS, a worker each): their verdicts ride on differences of a few % between measured steps,
#     and at phase 1's load a step read slow enough to move the plateau call (found without reruns, session 7). Beside
#     the measurements they run at WALL_CLOCK_NICE.
PACED_UNITS = {
    "measurements-paced-1": ("tests/bench/test_bench_window.py",  # 22 s
                             "tests/bench/test_bench_failures.py",  # 3 s
                             "tests/bench/test_bench_result.py"),  # 1 s
    "measurements-paced-2": ("tests/bench/test_bench_definitions.py",  # 11 s
                             "tests/bot/slack/test_slack_home.py",  # 7 s
                             "tests/bot/slack/test_slack_pacing.py",  # 6 s
                             "tests/handlers/router/test_job_notifier.py",  # 1.5 s
                             "tests/bench/test_bench_requests.py"),  # 1 s
}
PACED = tuple(prefix for prefixes in PACED_UNITS.values() for prefix in prefixes)
MEASUREMENTS = (*PACED, "tests/bench/", "tests/simhost/test_simhost_server.py", "tests/simhost/test_simhost_seed.py",
                "tests/bot/slack/test_slack_load.py")
SWEEP_UNITS = {
    "sweep-1": ("tests/experiments/test_failure_and_sweep.py::test_sweep_on_a_noisy_server",),  # 38 s
    "sweep-2": ("tests/experiments/test_failure_and_sweep.py::test_sweep_posts_summary",),  # 32 s
}
LEASE_UNITS = {
    "lease-1": ("tests/reliability/test_rel_rolling.py",  # 39-43 s
                "tests/reliability/test_rel_server_faults.py",  # 9-12 s
                "tests/reliability/test_rel_abuse.py"),  # 4 s
    "lease-2": ("tests/reliability/test_rel_fencing.py",  # 18-20 s
                "tests/reliability/test_rel_orphans.py"),  # 20-26 s
}
SWEEPS = tuple(prefix for prefixes in SWEEP_UNITS.values() for prefix in prefixes)
LEASES = tuple(prefix for prefixes in LEASE_UNITS.values() for prefix in prefixes)
# every named work unit, each with the prefixes of the node ids it takes (a file path is a prefix of its tests' ids)
UNITS = {**PACED_UNITS, **SWEEP_UNITS, **LEASE_UNITS}
MEASUREMENT_GROUP = "measurements"
# Beside the measurements, the sweeps (and every process they start: hosts, servers, bots) run at this niceness, so
# that a measurement waking up is not kept waiting behind them: a 1 ms ticker read 5-22 ms stalls for a 2.3 ms one
# while whole-bot scenarios shared the cores with it (session 8, once in five runs).
WALL_CLOCK_NICE = 10


def is_serial(nodeid: str) -> bool:
    """Whether the test `nodeid` (its path relative to the repository, `::`, its name) is `serial`: alone, after."""
    return nodeid.startswith(MEASUREMENTS + SWEEPS)


def is_wallclock(nodeid: str) -> bool:
    """Whether the test `nodeid` is `wallclock`: beside phase 1, at normal priority."""
    return nodeid.startswith(LEASES)


def serial_nice(nodeid: str) -> int | None:
    """The niceness the test `nodeid` runs at: 0 for a measurement, WALL_CLOCK_NICE for a sweep beside them, None
    (as it is) for any other test."""
    if not is_serial(nodeid):
        return None
    return 0 if nodeid.startswith(MEASUREMENTS) else WALL_CLOCK_NICE


def phase_files(marker: str) -> tuple[str, ...] | None:
    """The test files (and folders) that hold the tests of `-m serial` or `-m wallclock` (every other file has none),
    or None for another marker expression."""
    prefixes = {"serial": MEASUREMENTS + SWEEPS, "wallclock": LEASES}.get(marker)
    return None if prefixes is None else tuple(prefix.split("::", 1)[0] for prefix in prefixes)


def xdist_scope(nodeid: str) -> str:
    """The work unit of a test under `--dist loadgroup`: its group's name, else the test itself."""
    unit = next((unit for unit, prefixes in UNITS.items() if nodeid.startswith(prefixes)), None)
    if unit is not None:
        return unit
    if nodeid.startswith(MEASUREMENTS):
        return MEASUREMENT_GROUP
    path = nodeid.split("::", 1)[0]
    group = next((group for p, group in XDIST_GROUPS.items() if path == p), None)
    if group is None:
        return nodeid
    if group.endswith("["):  # by the test's parameter: `test_x[0.32]` -> `real-vllm[0.32]`
        return group + nodeid.rpartition("[")[2] if nodeid.endswith("]") else group + "]"
    return group
