"""The start's deadline: scaled for the simulator, with a floor of real time that does not scale."""

from __future__ import annotations

from services.experiments.plans import READY_FLOOR_S, ExperimentPolicy


def test_a_start_deadline_is_scaled_but_never_under_the_real_time_floor() -> None:
    assert ExperimentPolicy().ready_deadline_s == 900.0  # production: the configured timeout as it is
    assert ExperimentPolicy(time_scale=0.5).ready_deadline_s == 450.0
    # the suite's scale of 0.002 gave 1.8 s: a python process start and its imports alone can take longer
    assert ExperimentPolicy(time_scale=0.002).ready_deadline_s == READY_FLOOR_S
    assert ExperimentPolicy(ready_timeout_s=3.0, time_scale=0.002).ready_deadline_s == 3.0  # asked for: kept
