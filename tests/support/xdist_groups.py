"""The suite's xdist groups and its measurement phase: test files whose tests must run on one xdist worker, one
after the other (`tests/conftest.py` applies them through xdist's scheduler hook and marks the `serial` phase)."""

from __future__ import annotations

# Test files whose tests share an expensive session fixture and must run on one xdist worker, one after the other:
# `make test`'s `--dist loadgroup` sends each group to a single worker (and, being the largest work units, first).
# Declared here by path rather than with xdist's `xdist_group` mark: xdist 3.8 tags a grouped test by rewriting
# `item._nodeid`, which pytest 9 no longer reads (the node id lives in `item._id`), so the mark silently did
# nothing: the real-vLLM tests were spread over all four workers and each worker started both servers.
# A group ending in "[" is split by the test's parameter: one work unit per version of the real vLLM (each worker starts
# one server: the two versions' starts ran one after the other on one worker, 3-5 minutes, the tail of phase 1).
XDIST_GROUPS = {"tests/simhost/test_real_vllm.py": "real-vllm["}

# The `serial` phase (`make test` runs it after the rest, on five workers: one a work unit). Its tests assert time or
# rates, so the rest of the suite's CPU must not bend their figures, and they run in one of two ways:
# - MEASUREMENTS: figures against a ground truth (the benchmark against the truth server, the simulated server's
#   token rates, chat acks under load, Slack pacing), in two work units, each one test at a time:
#   - PACED ("measurements-paced"): the tests that wait on a paced server or clock (a truth server's token schedule,
#     Slack's pacing intervals, the App Home debounce) and use little CPU (~5 CPU-s in ~45 s of wall time);
#   - the rest ("measurements"): the ones that load the CPU themselves (200 commands/s, the benchmark child's CPU,
#     the simulated server's rates at C=64). The two units beside each other share the cores as little as the
#     wall-clock scenarios beside them do (session 8: the measurement unit alone was phase 2's critical path, 94 s).
# - WALL_CLOCK: whole-bot scenarios on real time (lease TTLs of 2-3 s against heartbeats, the unit sampled every
#   200 ms, a server that never answers): mostly waiting, they run beside the measurements on three other workers, in
#   the three work units of WALL_CLOCK_UNITS, ~55 s each (the times of session 8, in the comments). As single-test
#   units xdist handed them out two at a time in file order: the rolling upgrade (39 s) started last behind the
#   fencing and orphan scenarios on one worker while the others idled, 89 s against 47-58 s.
PACED = ("tests/bench/test_bench_window.py", "tests/bench/test_bench_definitions.py",
         "tests/bench/test_bench_failures.py", "tests/bench/test_bench_requests.py",
         "tests/bench/test_bench_result.py", "tests/bot/slack/test_slack_pacing.py",
         "tests/bot/slack/test_slack_home.py", "tests/handlers/router/test_job_notifier.py")
MEASUREMENTS = (*PACED, "tests/bench/", "tests/simhost/test_simhost_server.py", "tests/simhost/test_simhost_seed.py",
                "tests/bot/slack/test_slack_load.py")
WALL_CLOCK_UNITS = {
    "wall-clock-1": ("tests/reliability/test_rel_rolling.py",  # 39-43 s
                     "tests/reliability/test_rel_server_faults.py",  # 9-12 s
                     "tests/reliability/test_rel_abuse.py"),  # 4 s
    # the sweeps: their verdicts ride on differences of a few % between measured steps, and at phase 1's load (10-15
    # on 2 cores) a step read slow enough to move the plateau call (found without reruns, session 7)
    "wall-clock-2": ("tests/experiments/test_failure_and_sweep.py::test_sweep_on_a_noisy_server",  # 38 s
                     "tests/reliability/test_rel_fencing.py"),  # 18-20 s
    "wall-clock-3": ("tests/experiments/test_failure_and_sweep.py::test_sweep_posts_summary",  # 32 s
                     "tests/reliability/test_rel_orphans.py"),  # 20-26 s
}
WALL_CLOCK = tuple(prefix for prefixes in WALL_CLOCK_UNITS.values() for prefix in prefixes)
MEASUREMENT_GROUP = "measurements"
PACED_GROUP = "measurements-paced"
# Beside the measurements, the wall-clock scenarios (and every process they start: hosts, servers, bots) run at this
# niceness, so that a measurement waking up is not kept waiting behind them: a 1 ms ticker read 5-22 ms stalls for a
# 2.3 ms one while the five units of phase 2 shared the cores (session 8, once in five runs). Their own waits are on
# TTLs of seconds, and the measurements leave them most of the CPU.
WALL_CLOCK_NICE = 10


def is_serial(nodeid: str) -> bool:
    """Whether the test `nodeid` (its path relative to the repository, `::`, its name) is in the `serial` phase."""
    return nodeid.startswith(MEASUREMENTS + WALL_CLOCK)


def serial_nice(nodeid: str) -> int | None:
    """The niceness the test `nodeid` runs at: 0 for a measurement, WALL_CLOCK_NICE for another serial test, None
    (as it is) outside the serial phase."""
    if not is_serial(nodeid):
        return None
    return 0 if nodeid.startswith(MEASUREMENTS) else WALL_CLOCK_NICE


def serial_files() -> tuple[str, ...]:
    """The test files (and folders) that hold the `serial` phase's tests: every other file has none."""
    return tuple(prefix.split("::", 1)[0] for prefix in MEASUREMENTS + WALL_CLOCK)


def xdist_scope(nodeid: str) -> str:
    """The work unit of a test under `--dist loadgroup`: its group's name, else the test itself."""
    path = nodeid.split("::", 1)[0]
    if path.startswith(PACED):
        return PACED_GROUP
    if path.startswith(MEASUREMENTS):
        return MEASUREMENT_GROUP
    unit = next((unit for unit, prefixes in WALL_CLOCK_UNITS.items() if nodeid.startswith(prefixes)), None)
    if unit is not None:
        return unit
    group = next((group for p, group in XDIST_GROUPS.items() if path == p), None)
    if group is None:
        return nodeid
    if group.endswith("["):  # by the test's parameter: `test_x[0.32]` -> `real-vllm[0.32]`
        return group + nodeid.rpartition("[")[2] if nodeid.endswith("]") else group + "]"
    return group
