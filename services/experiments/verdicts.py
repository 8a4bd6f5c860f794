"""Noise-aware verdicts: is a change better, worse, or within noise — and how sure is that.

Every verdict compares the median decode tok/s per request of two runs at one concurrency and puts a
95 % band around the change. The band has two parts:

* within-run noise — the percentile bootstrap of the change over both runs' per-request rates
  (`services.bench.noise.change_ci`);
* run-to-run noise — how much the median of one configuration moves between repeated runs (a restart,
  GPU clocks, neighbours), measured from history: the pooled relative standard deviation of the
  medians of runs of the same configuration (the same unit revision) on this host, shrunk towards an
  assumed `PRIOR_RUN_SD_PCT` with the weight of `PRIOR_DOF` runs so that two lucky repeats do not
  make pitcrew over-confident. Both runs carry it, so it enters twice.

When the run-to-run noise is measured, the band uses Student's t quantile for the degrees of freedom
behind the estimate (a few repeats give a wide band); the assumed prior uses the normal quantile.
A change outside the band is "better"/"worse" (with the one-sided probability that its sign is
right); inside it is "no measurable difference"; a band wider than `NOISY_BAND_PCT` cannot settle
anything and the verdict says so and suggests benchmarking again. This is the significance test
of rustc-perf's comparisons (a change counts when it leaves the noise measured for that benchmark),
with the noise measured per host and configuration.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from services.bench.noise import change_ci
from services.experiments.results import LevelFigures, RunSummary

PRIOR_RUN_SD_PCT = 1.5  # assumed run-to-run sd of a median when history has no repeats
PRIOR_DOF = 2  # the prior counts as this many degrees of freedom against measured repeats
NOISY_BAND_PCT = 10.0  # a wider band cannot tell a useful change from noise
Z95 = 1.959964
# two-sided 95 % quantiles of Student's t by degrees of freedom (above 30: the normal's)
T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262, 10: 2.228,
       12: 2.179, 15: 2.131, 20: 2.086, 25: 2.060, 30: 2.042}


def t95(dof: int) -> float:
    """The two-sided 95 % quantile for `dof` degrees of freedom (the next tabulated dof down, conservative)."""
    if dof <= 0 or dof > 30:
        return Z95
    return T95[max(k for k in T95 if k <= dof)]

BETTER, WORSE, SAME, NOISY = "better", "worse", "no measurable difference", "too noisy to tell"

# config key -> concurrency -> medians of repeated runs
Repeats = Mapping[str, Mapping[int, Sequence[float]]]


@dataclass(frozen=True)
class RunNoise:
    """Run-to-run standard deviation of a level's median, in percent, and where it comes from."""

    sd_pct: float
    runs: int  # repeated runs that measured it (0: the prior alone)
    source: str
    dof: int = 0  # degrees of freedom behind the estimate, prior included (0: assumed, use the normal)

    @property
    def quantile(self) -> float:
        return t95(self.dof)

    def describe(self) -> str:
        return f"run-to-run noise ±{self.sd_pct:.1f} % ({self.source})"


def config_key(run: RunSummary) -> str:
    """Runs with the same key are repeats of one configuration (same unit revision, else same label)."""
    return f"rev:{run.revision_id}" if run.revision_id is not None else f"label:{run.label}"


def measure_noise(repeats: Repeats, concurrency: int, key: str | None = None) -> RunNoise:
    """Run-to-run noise at `concurrency`: from this configuration's repeats if it has any, else pooled
    over the host's repeated configurations, shrunk towards the prior."""

    def pooled(groups: list[Sequence[float]]) -> tuple[float, int, int]:
        ss, dof, runs = 0.0, 0, 0
        for meds in groups:
            xs = [float(x) for x in meds if x and x > 0]
            if len(xs) < 2:
                continue
            m = statistics.fmean(xs)
            ss += sum(((x / m) - 1.0) ** 2 for x in xs) * 1e4
            dof += len(xs) - 1
            runs += len(xs)
        return ss, dof, runs

    own = repeats.get(key, {}).get(concurrency) if key else None
    ss, dof, runs = pooled([own]) if own is not None else (0.0, 0, 0)
    where = "this configuration"
    if dof == 0:
        ss, dof, runs = pooled([g[concurrency] for g in repeats.values() if concurrency in g])
        where = "this host"
    if dof == 0:
        return RunNoise(PRIOR_RUN_SD_PCT, 0, "assumed: no repeated runs yet")
    sd = math.sqrt((ss + PRIOR_DOF * PRIOR_RUN_SD_PCT ** 2) / (dof + PRIOR_DOF))
    return RunNoise(sd, runs, f"{runs} repeated runs of {where}", dof + PRIOR_DOF)


def signed_pct(change: float) -> str:
    """'+15 %', '−1 %', '+0 %' (a change that rounds to zero has no minus sign)."""
    return f"{'−' if round(change) < 0 else '+'}{abs(round(change))} %"


@dataclass(frozen=True)
class Comparison:
    """The change of `new` over `old` at one concurrency, with its 95 % band and verdict."""

    concurrency: int
    change_pct: float
    band_pct: float  # half-width of the 95 % band
    outcome: str  # BETTER | WORSE | SAME | NOISY
    sure_pct: float  # probability that the sign of the change is right
    noise: RunNoise

    @property
    def significant(self) -> bool:
        return self.outcome in (BETTER, WORSE)

    def figure(self) -> str:
        return f"{signed_pct(self.change_pct)} (±{self.band_pct:.0f} %)"

    def text(self) -> str:
        """'+15 % (±2 %) — better, 99 % sure' / '−1 % (±3 %) — no measurable difference'."""
        if self.significant:
            return f"{self.figure()} — {self.outcome}, {min(self.sure_pct, 99.9):.0f} % sure"
        if self.outcome == NOISY:
            return f"{self.figure()} — {NOISY}: the noise is wider than {NOISY_BAND_PCT:.0f} %; `bench` again"
        return f"{self.figure()} — {SAME}"


def compare_samples(new: Sequence[float], old: Sequence[float], *, new_median: float | None = None,
                    old_median: float | None = None, noise: RunNoise, concurrency: int = 1) -> Comparison | None:
    """Compare two runs' per-request rates (medians given when the samples are missing)."""
    ma = statistics.median(new) if new else new_median
    mb = statistics.median(old) if old else old_median
    if ma is None or mb is None or mb <= 0:
        return None
    change = (ma / mb - 1.0) * 100.0
    ci = change_ci(new, old)
    within_sd = (ci[1] - ci[0]) / 2.0 / Z95 if ci else 0.0
    sd = math.sqrt(within_sd ** 2 + 2.0 * noise.sd_pct ** 2)
    band = noise.quantile * sd
    sure = 100.0 * 0.5 * (1.0 + math.erf(abs(change) / sd / math.sqrt(2.0))) if sd > 0 else 100.0
    if abs(change) > band:
        outcome = BETTER if change > 0 else WORSE
    elif band > NOISY_BAND_PCT:
        outcome = NOISY
    else:
        outcome = SAME
    return Comparison(concurrency, change, band, outcome, sure, noise)


def compare_levels(new: LevelFigures, old: LevelFigures, noise: RunNoise) -> Comparison | None:
    return compare_samples(new.decode_samples, old.decode_samples, new_median=new.decode_tok_s,
                           old_median=old.decode_tok_s, noise=noise, concurrency=new.concurrency)


def compare_runs(run: RunSummary, prev: RunSummary, repeats: Repeats) -> list[Comparison]:
    """One comparison per concurrency level the two runs share, lowest first."""
    out = []
    for c in sorted({lv.concurrency for lv in run.levels} & {lv.concurrency for lv in prev.levels}):
        a, b = run.level(c), prev.level(c)
        if a is None or b is None:
            continue
        cmp = compare_levels(a, b, measure_noise(repeats, c, config_key(run)))
        if cmp is not None:
            out.append(cmp)
    return out


def verdict(run: RunSummary, prev: RunSummary | None, repeats: Repeats) -> str:
    """One line: the change at the lowest common concurrency against the previous run, with its band."""
    if prev is None:
        return f"first run of {run.model or 'this model'} on {run.host}: baseline recorded"
    other = prev.label or f"run {prev.id}"
    found = compare_runs(run, prev, repeats)
    if not found:
        return f"no level in common with {other}"
    cmp = found[0]
    return f"{cmp.text()} at C={cmp.concurrency} over {other}"


__all__ = ["BETTER", "NOISY", "SAME", "WORSE", "Comparison", "RunNoise", "compare_levels", "compare_runs",
           "compare_samples", "config_key", "measure_noise", "signed_pct", "verdict"]
