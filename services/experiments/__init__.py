"""The experiment pipelines behind try, sweep, tune, bench, rollback and kill-stale jobs, and the stored
benchmark results they compare against.

The names below are the package's public API: other packages import only these."""

from services.experiments.dispatch import host_recovery, job_pipeline
from services.experiments.host_checks import disk_check
from services.experiments.pipeline import Experiments
from services.experiments.plans import BenchDefaults, ExperimentPolicy, Preview, TrialOutcome, label_for
from services.experiments.preflight import EngineFlagCache, check_flags
from services.experiments.results import LevelFigures, Results, RunSummary, pct
from services.experiments.tune import TuneKnob, default_budget, grid_size
from services.experiments.verdicts import NOISY, Comparison, RunNoise, compare_runs, signed_pct

__all__ = [
    "NOISY",
    "BenchDefaults",
    "Comparison",
    "EngineFlagCache",
    "ExperimentPolicy",
    "Experiments",
    "LevelFigures",
    "Preview",
    "Results",
    "RunNoise",
    "RunSummary",
    "TrialOutcome",
    "TuneKnob",
    "check_flags",
    "compare_runs",
    "default_budget",
    "disk_check",
    "grid_size",
    "host_recovery",
    "job_pipeline",
    "label_for",
    "pct",
    "signed_pct",
]
