"""The suite's xdist groups (`support.xdist_groups.XDIST_GROUPS`): each names a test file that exists, a test of it
is scheduled as the group's work unit, the serial phase's measurements are two work units (the paced ones and the
rest) and its wall-clock scenarios three others, and no test relies on xdist's own `xdist_group` mark, which
pytest 9 ignores."""

from __future__ import annotations

import re
from pathlib import Path

from support.xdist_groups import (
    MEASUREMENT_GROUP,
    MEASUREMENTS,
    PACED,
    PACED_GROUP,
    WALL_CLOCK,
    WALL_CLOCK_NICE,
    WALL_CLOCK_UNITS,
    XDIST_GROUPS,
    is_serial,
    serial_nice,
    xdist_scope,
)

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


def test_the_serial_phase_runs_its_measurements_as_two_work_units_and_its_scenarios_beside_them() -> None:
    for prefix in MEASUREMENTS + PACED + WALL_CLOCK:
        path = prefix.split("::")[0]
        assert (ROOT / path).exists(), path
        assert is_serial(f"{prefix}{'test_x.py' if prefix.endswith('/') else ''}{'' if '::' in prefix else '::t'}")
    assert xdist_scope("tests/bench/test_bench_window.py::test_a[N1]") == PACED_GROUP
    assert xdist_scope("tests/bot/slack/test_slack_pacing.py::test_b") == PACED_GROUP
    assert xdist_scope("tests/bench/test_bench_cpu.py::test_a") == MEASUREMENT_GROUP
    assert xdist_scope("tests/bot/slack/test_slack_load.py::test_b") == MEASUREMENT_GROUP
    rolling = "tests/reliability/test_rel_rolling.py::test_c"
    assert xdist_scope(rolling) == "wall-clock-1"  # beside the measurements, on a worker of its own
    sweeps = "tests/experiments/test_failure_and_sweep.py::test_sweep_"
    assert {xdist_scope(f"{sweeps}posts_summary_chart"), xdist_scope(f"{sweeps}on_a_noisy_server_x")} == {
        "wall-clock-3", "wall-clock-2"}
    assert len({p for ps in WALL_CLOCK_UNITS.values() for p in ps}) == sum(map(len, WALL_CLOCK_UNITS.values()))
    assert not is_serial("tests/reliability/test_rel_overlap.py")
    assert all(p.endswith(("/", ".py")) or "::" in p for p in MEASUREMENTS + WALL_CLOCK)  # no lookalike paths
    assert is_serial("tests/experiments/test_failure_and_sweep.py::test_sweep_posts_summary_chart_and_calls_it")
    assert not is_serial("tests/experiments/test_failure_and_sweep.py::test_seed_try_10_steps_fails")


def test_beside_the_measurements_the_wall_clock_scenarios_run_at_a_lower_priority() -> None:
    assert WALL_CLOCK_NICE > 0
    assert serial_nice("tests/bench/test_bench_lag.py::test_a") == 0
    assert serial_nice("tests/bot/slack/test_slack_pacing.py::test_b") == 0
    assert serial_nice("tests/reliability/test_rel_rolling.py::test_c") == WALL_CLOCK_NICE
    assert serial_nice("tests/experiments/test_failure_and_sweep.py::test_sweep_posts_summary_chart") == WALL_CLOCK_NICE
    assert serial_nice("tests/reliability/test_rel_overlap.py::test_d") is None  # phase 1: as it is
