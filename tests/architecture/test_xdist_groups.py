"""The suite's xdist groups (`support.xdist_groups.XDIST_GROUPS`): each names a test file that exists, a test of it
is scheduled as the group's work unit, the serial phase's measurements are three work units (two of paced ones and
the rest), the sweeps two others after them, the wall-clock scenarios beside phase 1 four more, the measurement that
loads both cores runs by itself, and no test relies on xdist's own `xdist_group` mark, which pytest 9 ignores."""

from __future__ import annotations

import re
from pathlib import Path

from support.xdist_groups import (
    ALONE,
    LONGEST_FIRST,
    LOW_NICE,
    MEASUREMENT_GROUP,
    MEASUREMENTS,
    PACED,
    PACED_UNITS,
    STARVED_LEASE_S,
    SWEEP_UNITS,
    SWEEPS,
    WALLCLOCK,
    WALLCLOCK_UNITS,
    XDIST_GROUPS,
    expected_seconds,
    is_alone,
    is_serial,
    is_sweep,
    is_wallclock,
    lease_ttl_s,
    phase_files,
    serial_nice,
    xdist_scope,
)

from services.jobs import LEASE_TTL_S

ROOT = Path(__file__).resolve().parents[2]


def test_every_group_names_an_existing_test_file_and_its_tests_share_one_work_unit() -> None:
    assert XDIST_GROUPS
    for path, group in XDIST_GROUPS.items():
        assert (ROOT / path).is_file(), path
        if group.endswith("["):  # one work unit per parameter
            assert xdist_scope(f"{path}::test_a[0.32]") == xdist_scope(f"{path}::test_b[0.32]") == f"{group}0.32]"
            assert xdist_scope(f"{path}::test_b[0.11]") == f"{group}0.11]"
        else:
            assert xdist_scope(f"{path}::test_a[0.32]") == xdist_scope(f"{path}::test_b[0.11]") == group
        assert xdist_scope(f"{path}x::test_a") == f"{path}x::test_a"  # another file: a work unit of its own
    assert xdist_scope("tests/basics/test_x.py::test_y") == "tests/basics/test_x.py::test_y"


def test_no_test_uses_the_xdist_group_mark_that_pytest_9_ignores() -> None:
    users = [str(p.relative_to(ROOT)) for p in (ROOT / "tests").rglob("test_*.py")
             if re.search(r"mark\.xdist_group\b", p.read_text(encoding="utf-8"))]
    assert users == [], f"use tests/conftest.py XDIST_GROUPS instead: {users}"


def test_the_serial_phase_runs_its_measurements_in_three_work_units_and_the_sweeps_after_them() -> None:
    for prefix in MEASUREMENTS + PACED:
        path = prefix.split("::")[0]
        assert (ROOT / path).exists(), path
        node = f"{prefix}{'test_x.py' if prefix.endswith('/') else ''}{'' if '::' in prefix else '::t'}"
        assert is_serial(node) and not is_wallclock(node)
    assert xdist_scope("tests/bench/test_bench_window.py::test_a[N1]") == "measurements-paced-1"
    assert xdist_scope("tests/bot/slack/test_slack_pacing.py::test_b") == "measurements-paced-2"
    assert len(set(PACED)) == sum(map(len, PACED_UNITS.values()))
    assert xdist_scope("tests/bench/test_bench_cpu.py::test_a") == MEASUREMENT_GROUP
    sweeps = "tests/experiments/test_failure_and_sweep.py::test_sweep_"
    units = {xdist_scope(f"{sweeps}posts_summary_chart"), xdist_scope(f"{sweeps}on_a_noisy_server_x")}
    assert units == set(SWEEP_UNITS)
    for prefix in SWEEPS:  # by themselves, after the measurements
        assert is_sweep(prefix) and not is_serial(prefix) and not is_wallclock(prefix) and serial_nice(prefix) is None
    assert is_sweep(f"{sweeps}posts_summary_chart_and_calls_it")
    assert not is_serial("tests/experiments/test_failure_and_sweep.py::test_seed_try_10_steps_fails")
    assert not is_sweep("tests/experiments/test_failure_and_sweep.py::test_seed_try_10_steps_fails")  # phase 1
    assert not is_serial("tests/reliability/test_rel_kill.py")
    assert all(p.endswith(("/", ".py")) or "::" in p for p in MEASUREMENTS + SWEEPS + WALLCLOCK)  # no lookalike paths
    assert phase_files("serial") == MEASUREMENTS
    assert phase_files("sweep") == tuple(p.split("::")[0] for p in SWEEPS)
    assert phase_files("not serial") is None


def test_the_wallclock_tests_run_beside_phase_1_in_their_own_work_units() -> None:
    for prefix in WALLCLOCK:
        assert (ROOT / prefix).is_file(), prefix
        assert is_wallclock(f"{prefix}::t") and not is_serial(f"{prefix}::t")
    assert xdist_scope("tests/reliability/test_rel_rolling.py::test_c") == "wallclock-1"
    assert xdist_scope("tests/reliability/test_rel_orphans.py::test_d") == "wallclock-2"
    assert xdist_scope("tests/bot/slack/test_slack_faults.py::test_burst") == "wallclock-2"
    assert len(set(WALLCLOCK)) == sum(map(len, WALLCLOCK_UNITS.values()))
    assert xdist_scope("tests/reliability/test_rel_overlap.py::test_d[x]") == "wallclock-overlap"
    assert not is_wallclock("tests/reliability/test_rel_kill.py::test_d")  # phase 1
    assert phase_files("wallclock") == WALLCLOCK


def test_the_makefile_gives_each_named_work_unit_of_a_phase_a_worker() -> None:
    """`make test`'s worker counts are the phases' work units: a worker fewer and two units queue one after the other
    (the phase's wall time grows by one of them), one more and it idles."""
    makefile = (ROOT / "Makefile").read_text()
    counts = {m[1]: int(m[2]) for m in re.finditer(r"^(\w+_WORKERS) \?= (\d+)$", makefile, re.M)}
    assert counts["WALLCLOCK_WORKERS"] == len(WALLCLOCK_UNITS)
    assert counts["SERIAL_WORKERS"] == len(PACED_UNITS) + 1  # + the other measurements' unit
    assert counts["SWEEP_WORKERS"] == len(SWEEP_UNITS)
    # in test-phases.sh's order
    assert "$(TEST_WORKERS) $(WALLCLOCK_WORKERS) $(SERIAL_WORKERS) $(SWEEP_WORKERS)" in makefile


def test_the_measurements_run_at_normal_priority_and_the_long_wallclock_units_below_the_lease_scenarios() -> None:
    assert serial_nice("tests/bench/test_bench_lag.py::test_a") == 0
    assert serial_nice("tests/bot/slack/test_slack_pacing.py::test_b") == 0
    assert serial_nice("tests/reliability/test_rel_rolling.py::test_c") is None  # beside phase 1: as it is
    # the tunes and the overlap scenario beside phase 1: below the lease scenarios, above phase 1
    assert serial_nice("tests/experiments/test_tune_vllm.py::test_a") == LOW_NICE == 19
    assert serial_nice("tests/reliability/test_rel_overlap.py::test_d[x]") == LOW_NICE
    assert is_wallclock("tests/experiments/test_tune_job.py::test_b") and xdist_scope(
        "tests/experiments/test_tune_job.py::test_b") == "wallclock-tune"
    assert serial_nice("tests/reliability/test_rel_kill.py::test_d") is None  # phase 1: as it is
    # a bot under a test at that priority holds a lease that outlasts its starvation; every other keeps production's
    assert lease_ttl_s("tests/experiments/test_tune_job.py::test_b") == STARVED_LEASE_S > LEASE_TTL_S
    assert lease_ttl_s("tests/experiments/test_try_transcript.py::test_a[systemd-python]") == LEASE_TTL_S


def test_the_longest_tests_are_named_by_existing_files_and_collected_first() -> None:
    for path, seconds in LONGEST_FIRST.items():
        assert (ROOT / path).is_file(), path
        assert seconds >= 10, path  # shorter files keep their place
    assert list(LONGEST_FIRST.values()) == sorted(LONGEST_FIRST.values(), reverse=True)
    assert expected_seconds("tests/experiments/test_tune_llamacpp_real.py::test_a[x]") == LONGEST_FIRST[
        "tests/experiments/test_tune_llamacpp_real.py"]
    assert not set(LONGEST_FIRST) & set(WALLCLOCK)  # phase 1's order: its own tests
    assert expected_seconds("tests/basics/test_x.py::test_y") == 0


def test_the_measurement_that_loads_both_cores_runs_by_itself() -> None:
    for prefix in ALONE:
        assert (ROOT / prefix).is_file(), prefix
        node = f"{prefix}::t"
        assert is_alone(node) and not is_serial(node) and not is_wallclock(node)
        assert expected_seconds(node) == 0 and serial_nice(node) is None
    assert phase_files("alone") == ALONE
    assert not is_alone("tests/bench/test_bench_window.py::test_a[N1]")
