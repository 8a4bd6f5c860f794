"""The suite's xdist groups and its phases: test files whose tests must run on one xdist worker, one after the other,
and the tests that run beside phase 1 (`wallclock`) or after it (`serial`) (`tests/conftest.py` applies the groups
through xdist's scheduler hook and the marks at collection)."""

from __future__ import annotations

from services.jobs import LEASE_TTL_S

# Test files whose tests share an expensive session fixture and must run on one xdist worker, one after the other:
# `make test`'s `--dist loadgroup` sends each group to a single worker (and, being the largest work units, first).
# Declared here by path rather than with xdist's `xdist_group` mark: xdist 3.8 tags a grouped test by rewriting
# `item._nodeid`, which pytest 9 no longer reads (the node id lives in `item._id`), so the mark silently did
# nothing: the real-vLLM tests were spread over all four workers and each worker started both servers.
# A group ending in "[" is split by the test's parameter: one work unit per version of the real vLLM (each worker starts
# one server: the two versions' starts ran one after the other on one worker, 3-5 minutes, the tail of phase 1).
XDIST_GROUPS = {"tests/simhost/test_real_vllm.py": "real-vllm["}

# Four kinds of tests do not run among phase 1's (scripts/test-phases.sh runs them, `make test` runs that):
#
# `wallclock` — tests on real time that mostly wait: whole-bot scenarios with lease TTLs of 2-3 s against heartbeats,
#   the unit sampled every 200 ms, a server that never answers; Slack's 429 bursts and their Retry-After waits.
#   Among phase 1's tests at normal priority (load 8-15 on 2 cores) their heartbeats came late; they run at the same
#   time as phase 1 but at normal priority while phase 1 runs under SCHED_IDLE, so they get a core whenever they want
#   one. In the work units of WALLCLOCK_UNITS. (The Slack faults, ~55 s of waiting on ~3 CPU-s, held a phase-1
#   worker, and with other waiting tests beside them left the cores 25-70 % idle for ~40 s: session 11's timeline.)
#   With them, at LOW_NICE (below them, above phase 1), the tests whose answers need a core in time but which use one
#   for minutes: the tunes' throughput comparisons and the overlap scenario's twenty concurrent previews.
#
# `serial` — the tests that assert a figure (time or a rate against a ground truth), alone after phase 1: even under
#   SCHED_IDLE phase 1 bent them (session 9, one run in two: the truth server's rate read 4 % low, the simulated
#   server's 8 %, the sweep's plateau call lost; caches and loopback softirqs are shared whatever the priority):
#   - MEASUREMENTS, one test at a time in each of their work units:
#     - PACED: the tests that wait on a paced server or clock (a truth server's token schedule, Slack's pacing
#       intervals, the App Home debounce) and use little CPU (~5 CPU-s in ~54 s of wall time, the serial phase's
#       longest unit while it was one): two units of ~27 s (PACED_UNITS, the times of session 9 in the comments);
#     - the rest ("measurements"): the benchmark child's CPU, the simulated server's rates at C=64 (the one that
#       loads both cores itself is `alone`, below);
#
# `sweep` — the two sweeps (SWEEP_UNITS, a worker each), by themselves after the serial phase: their plateau call rides
#   on ~2.4 % between two measured steps (the sim's steps 4 and 5: 277 and 282 tok/s, with no repeats a band of
#   ±4.2 %), so a step that reads ~2.4 % slow lets 5 win. At phase 1's load a step read that slow (session 7), beside
#   phase 1 under SCHED_IDLE one run in two (session 9), and beside the serial phase's measurements at nice 10 about
#   one run in eight (sessions 13 and 14: a 35 ms stall of a 1.4 s step is enough). ~22 s of wall time on their own
#   since they sweep steps 3..5 (1..5 took ~38 s: steps 1 and 2 decode slowest).
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
MEASUREMENTS = (*PACED, "tests/bench/", "tests/simhost/test_simhost_server.py", "tests/simhost/test_simhost_seed.py")
SWEEP_UNITS = {
    "sweep-1": ("tests/experiments/test_failure_and_sweep.py::test_sweep_on_a_noisy_server",),  # 19 s
    "sweep-2": ("tests/experiments/test_failure_and_sweep.py::test_sweep_posts_summary",),  # 16 s
}
WALLCLOCK_UNITS = {
    "wallclock-1": ("tests/reliability/test_rel_rolling.py",  # 39-43 s
                    "tests/reliability/test_rel_server_faults.py",  # 9-12 s
                    "tests/reliability/test_rel_abuse.py"),  # 4 s
    "wallclock-2": ("tests/reliability/test_rel_fencing.py",  # 18-20 s
                    "tests/reliability/test_rel_orphans.py",  # 20-26 s
                    "tests/bot/slack/test_slack_faults.py"),  # 50-55 s (a 429 burst 31-35 s, 5xx 12-14 s)
    # the tunes on the simulated engines, at LOW_NICE: their answers are comparisons of real-time throughput against
    # a noise band measured from two or three runs, and under phase 1's SCHED_IDLE every normal-priority process took
    # their cores whenever it woke (session 11's CI and session 12's first run: a start run 7.8 % off the other made
    # spec tokens 3 tie with 4; a pick read measurably below the start and was never confirmed). At the lowest
    # niceness they stay out of the lease scenarios' way (at nice 10 a survivor's heartbeat went unconfirmed for its
    # 2 s TTL once, session 12) and still come before phase 1's SCHED_IDLE.
    "wallclock-tune": ("tests/experiments/test_tune_job.py",  # ~3 min: three whole tunes, two previews
                       "tests/experiments/test_tune_vllm.py"),  # ~1 min
    # twenty users' `try` at once, at LOW_NICE: their twenty previews (~80 SSH execs through the connection's 8
    # channels, each under a 4-20 s deadline) are a burst of ~3 CPU-s that has to finish within seconds, and in phase 1
    # it did not: session 12's CI run, started first by LONGEST_FIRST while the wall-clock side's workers started at
    # normal priority, answered "`systemctl` ... did not finish within 15s" (42 s for the burst under SCHED_IDLE
    # beside a compile at normal priority, 3.7 s beside it at normal priority). ~50 CPU-s in ~57 s alone.
    "wallclock-overlap": ("tests/reliability/test_rel_overlap.py",),
}
# the wall-clock units that run below the others' priority (at LOW_NICE), above phase 1's SCHED_IDLE: they use a core
# for minutes (the overlap scenario) or measure throughput against noise (the tunes), and the lease scenarios' 2-3 s
# TTLs come first
WALLCLOCK_LOW = (*WALLCLOCK_UNITS["wallclock-tune"], *WALLCLOCK_UNITS["wallclock-overlap"])
LOW_NICE = 19
# The job lease of a bot under a test at LOW_NICE (tests/experiments' `make_bot`: the tunes). A nice-19 process gets
# ~1.5 % of a core against one at nice 0, and a tune's 30 s lease once lapsed (no renew confirmed for 20 s, the fence's
# margin) while the lease scenarios' bots and PostgreSQL ran at normal priority (session 18). Those tests assert the
# search, not the lease (tests/reliability does): their bot's lease outlasts that starvation.
STARVED_LEASE_S = 120.0
SWEEPS = tuple(prefix for prefixes in SWEEP_UNITS.values() for prefix in prefixes)
WALLCLOCK = tuple(prefix for prefixes in WALLCLOCK_UNITS.values() for prefix in prefixes)
# every named work unit, each with the prefixes of the node ids it takes (a file path is a prefix of its tests' ids)
UNITS = {**PACED_UNITS, **SWEEP_UNITS, **WALLCLOCK_UNITS}
MEASUREMENT_GROUP = "measurements"


# Phase 1 hands its tests out in collection order, one at a time as workers free up (a list scheduler). In path order
# the whole-bot scenarios of tests/reliability came last: they started 280-330 s into a ~6-minute phase 1 and one
# worker ran on alone for ~25 s after the other five had finished (session 11's timeline of `make test`). Longest
# first (LPT) ends the workers together: the files whose longest test takes 10 s or more under phase 1's load (wall
# seconds of that test, session 11) go first, longest first; the rest keep their order after them. For ordering only:
# a stale figure moves a test in the queue, nothing else.
LONGEST_FIRST = {
    "tests/experiments/test_tune_llamacpp_real.py": 84,
    "tests/reliability/test_rel_kill_schedule.py": 48,
    "tests/experiments/test_llamacpp_real.py": 46,
    "tests/demo/test_demo_script.py": 46,
    "tests/experiments/test_preflight.py": 39,
    "tests/demo/test_demo_vllm.py": 39,
    "tests/reliability/test_rel_slack_storm.py": 32,
    "tests/architecture/test_packaging.py": 28,
    "tests/experiments/test_real_systemd_try.py": 21,
    "tests/incidents/test_incidents_live_sim.py": 20,
    "tests/e2e/test_serve_slack_e2e.py": 20,
    "tests/reliability/test_rel_kill.py": 17,
    "tests/doctor/test_doctor_real_systemd.py": 17,
    "tests/simhost/test_simhost_real_systemd.py": 16,
    "tests/reliability/test_rel_sigterm.py": 16,
    "tests/bot/test_deploy_unit.py": 16,
    "tests/experiments/test_try_over_openssh.py": 15,
    "tests/incidents/test_incidents_journal_follower.py": 14,
    "tests/experiments/test_vllm_transcript.py": 13,
    "tests/architecture/test_cli_start.py": 13,
    "tests/reliability/test_rel_two_procs.py": 11,
    "tests/experiments/test_failure_and_sweep.py": 11,
    "tests/experiments/test_charts.py": 11,
    "tests/reliability/test_rel_secrets.py": 10,
}


# `alone` — the measurement that loads both cores itself (200 slash commands/s beside a C=64 benchmark: ~6.4 CPU-s in
#   ~7 s) runs by itself between phase 1 and the serial phase: in the serial phase it bent whichever measurement ran
#   beside it. In path order it ran 17-24 s into the phase, beside the sweeps' steps 3-5, whose plateau call rides on
#   ~2.4 % (session 13: a sweep's step 4 read slow and 5 won); first in its unit (session 13's CPU_FIRST) it ran beside
#   the truth server's first cases (session 13's CI run: the achieved concurrency at C=16 read 6 % over the server's).
#   ~10 s of wall time on its own (one process, one file collected).
ALONE = ("tests/bot/slack/test_slack_load.py",)


def expected_seconds(nodeid: str) -> int:
    """How long the test `nodeid`'s file's longest test takes in phase 1 (`LONGEST_FIRST`), 0 when short."""
    return LONGEST_FIRST.get(nodeid.split("::", 1)[0], 0)


def is_serial(nodeid: str) -> bool:
    """Whether the test `nodeid` (its path relative to the repository, `::`, its name) is `serial`: alone, after."""
    return nodeid.startswith(MEASUREMENTS)


def is_sweep(nodeid: str) -> bool:
    """Whether the test `nodeid` is a `sweep`: by themselves, after the serial phase (`SWEEPS`)."""
    return nodeid.startswith(SWEEPS)


def is_alone(nodeid: str) -> bool:
    """Whether the test `nodeid` is `alone`: by itself, between phase 1 and the serial phase (`ALONE`)."""
    return nodeid.startswith(ALONE)


def is_wallclock(nodeid: str) -> bool:
    """Whether the test `nodeid` is `wallclock`: beside phase 1, at normal priority."""
    return nodeid.startswith(WALLCLOCK)


def serial_nice(nodeid: str) -> int | None:
    """The niceness the test `nodeid` runs at: 0 for a measurement, LOW_NICE for a tune or the overlap scenario beside
    phase 1 (`WALLCLOCK_LOW`), None (as it is) for any other test."""
    if nodeid.startswith(WALLCLOCK_LOW):
        return LOW_NICE
    return 0 if is_serial(nodeid) else None


def lease_ttl_s(nodeid: str) -> float:
    """The job lease TTL of the bot under the test `nodeid`: production's (`services.jobs.LEASE_TTL_S`), or
    `STARVED_LEASE_S` at LOW_NICE."""
    return STARVED_LEASE_S if serial_nice(nodeid) == LOW_NICE else LEASE_TTL_S


def phase_files(marker: str) -> tuple[str, ...] | None:
    """The test files (and folders) that hold the tests of `-m serial`, `-m wallclock`, `-m alone` or `-m sweep` (every
    other file has none), or None for another marker expression."""
    prefixes = {"serial": MEASUREMENTS, "wallclock": WALLCLOCK, "alone": ALONE, "sweep": SWEEPS}.get(marker)
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
