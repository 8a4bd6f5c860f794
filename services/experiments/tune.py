"""Tune: search several flags at once for the configuration that best meets a stated goal, in few restarts.

The goal is the aggregate output throughput at one concurrency, optionally under a TTFT p95 limit
(``tune steps 1..8, mem 0.80,0.84,0.88 for throughput at 16 with ttft p95 under 500ms``). The search space is the
grid of the listed values; a grid tries every point, `tune` asks Optuna's TPE sampler (multivariate, seeded,
with a constraint per trial so infeasible points rank below every feasible one) for the next point and
restarts only for the ones worth it:

* the starting configuration is benchmarked without a restart and is the first point the sampler learns; the
  verdict compares the best's confirming run (below) with the median of every run of the start on the host
  (`start_baseline`);
* a point the capacity forecast (`services.experiments.forecast`, fitted on this host's recorded starts,
  including the tune's own) says cannot run the goal's concurrency without queueing — so its TTFT cannot meet
  the limit — is refused before any restart (`forecast_refusal`); the engine's own parser refuses others in the
  trial's preflight gate, with the host untouched;
* a point that fails to start, or dies under the ramp or the benchmark, is recorded as failed and the last
  working configuration is put back before the next trial; when it ran out of GPU memory, every point at least as
  demanding in every knob (the unit's engine's `Engine.memory_direction`) is refused without a restart: the crash
  marks its region (a GPU OOM, or the host's OOM killer under the unit's `MemoryMax=`);
* a point the sampler proposes again is answered from its measurement, without a restart;
* the search stops when its restart budget is spent, when the grid is exhausted, or when `patience` restarts in
  a row found nothing measurably better than the best so far (the noise band of
  `services.experiments.verdicts` decides "measurably": the search does not chase differences it cannot measure).

After the search, the pick is **confirmed** before the verdict (`confirm_best`): it is the fastest of many noisy
single measurements, so its own figure reads high (the winner's curse: on the real llama.cpp engine a job said "+8 %
(±8 %) — better" where a follow-up `bench` of its pick read +2 %). Unless the pick is the start, it is deployed
again on top of the start (a real restart, the trial path with its rollback on failure) and benchmarked with new
prompts, and the verdict is that run's, never the search's figure that selected it. A confirming run that fails
(crash, out of memory, not ready) or breaks the TTFT limit marks the point so, with its cause, and the next best is
confirmed instead, once; when nothing confirms, or the confirming run is not measurably better than the start, the
answer says so and recommends keeping the start (no Apply). The confirming restarts count in `restarts` (they are
not part of the search's budget: one more restart, two when the first confirmation fails). A confirmation can fail
where the search's run did not because of an earlier failure in the same tune: a crash can leave memory held (the
simulated SGLang host keeps 0.75 GiB after a CUDA OOM), and the answer then names that crash.

Every evaluated point is recorded as a `tune-point` step as it happens, and every confirming run as a
`tune-confirm` step, so a tune that was cancelled or interrupted
(a bot restart marks a running job interrupted and restores the host) can be resumed: `tune resume <job>` seeds a
new tune with those points (no restart for them; their restarts count against the budget) and those confirming runs
(a candidate confirmed before is not restarted again). Cancelling during the confirmation restores the start.

`TuneSearch` (ask/tell) and `search_loop` are the whole decision path; the job (`run_tune`) and
`benchmarks/bench_tune.py` (against the simulator's known response surface) both run them. The best point is
the one with the most KV cache among the feasible points within noise of the fastest (as a sweep chooses).
Each trial is a full try (`Experiments.trial`: audit, revisions, results, verdict); the tune ends on the
starting configuration and its answer carries an *Apply* button that runs the normal `try` for the confirmed best.
"""

from __future__ import annotations

import asyncio
import math
import random
import statistics
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from services.engines import DEFAULT_ENGINE, Engine, apply_changes, engine_flag, engine_named, parse_value
from services.errors import BenchmarkError, DeployFailed, JobCancelled, UserInputError
from services.experiments.forecast import Forecast, config_point
from services.experiments.pipeline import Experiments
from services.experiments.plans import TrialOutcome
from services.experiments.verdicts import BETTER, WORSE, RunNoise, compare_samples, measure_noise
from services.jobs import JobContext
from services.units import (
    Revision,
    changes_label,
    flag_label,
    read_exec_start,
    unit_engine,
)

if TYPE_CHECKING:  # imported when a tune starts (TuneSearch): it brings numpy, which no other command needs
    import optuna

OK, VIOLATES, REFUSED, FAILED = "ok", "violates", "refused", "failed"
BUDGET_SHARE = 0.35  # the default restart budget, as a share of the grid
MAX_DEFAULT_BUDGET = 40  # ... and at most this many restarts unless the person says more
MAX_GRID = 4096
DUPLICATE_ASKS = 40  # proposals of measured points answered in a row before a seeded pick of an unmeasured one


@dataclass(frozen=True)
class TuneKnob:
    """One flag to tune and the values to choose from (in order: the sampler treats them as ordinal)."""

    flag: str
    values: tuple[str, ...]


@dataclass(frozen=True)
class Goal:
    """Maximise aggregate output tok/s at `concurrency`, with TTFT p95 below `ttft_p95_ms` when given."""

    concurrency: int
    ttft_p95_ms: float | None = None

    def describe(self) -> str:
        limit = f" with TTFT p95 < {self.ttft_p95_ms:g} ms" if self.ttft_p95_ms is not None else ""
        return f"throughput at C={self.concurrency}{limit}"


@dataclass
class Point:
    """One configuration of the grid and what became of it."""

    changes: dict[str, str]
    status: str  # OK | VIOLATES | REFUSED | FAILED
    throughput: float | None = None  # aggregate output tok/s at the goal's concurrency
    ttft_p95_ms: float | None = None
    kv_tokens: int | None = None
    max_running: int | None = None
    why: str = ""
    run_id: int | None = None
    restarted: bool = False  # this point cost a restart
    start: bool = False  # the starting configuration (benchmarked as it was)
    memory: bool = False  # failed for lack of GPU memory (start-up or under load): its region is infeasible

    @property
    def feasible(self) -> bool:
        return self.status == OK

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Point:
        def num(key: str) -> float | None:
            v = d.get(key)
            return float(v) if isinstance(v, int | float) else None

        def whole(key: str) -> int | None:
            v = d.get(key)
            return int(v) if isinstance(v, int) else None

        return cls({str(k): str(v) for k, v in (d.get("changes") or {}).items()}, str(d.get("status") or FAILED),
                   throughput=num("throughput"), ttft_p95_ms=num("ttft_p95_ms"), kv_tokens=whole("kv_tokens"),
                   max_running=whole("max_running"), why=str(d.get("why") or ""), run_id=whole("run_id"),
                   restarted=bool(d.get("restarted")), memory=bool(d.get("memory")))

    def to_json(self) -> dict[str, Any]:
        return {"changes": dict(self.changes), "label": changes_label(self.changes), "status": self.status,
                "throughput": self.throughput,
                "ttft_p95_ms": self.ttft_p95_ms, "kv_tokens": self.kv_tokens, "max_running": self.max_running,
                "why": self.why, "run_id": self.run_id, "restarted": self.restarted, "start": self.start,
                "memory": self.memory}


def pareto_front(points: list[Point]) -> list[int]:
    """Indexes of the measured points no other measured point beats on both throughput (higher) and TTFT p95
    (lower), by TTFT. A point whose confirming run failed keeps its search figure but is not on the front."""
    m = [(i, p.throughput, p.ttft_p95_ms) for i, p in enumerate(points)
         if p.status in (OK, VIOLATES) and p.throughput is not None and p.ttft_p95_ms is not None]
    front = [(i, t, f) for i, t, f in m
             if not any((t2 >= t and f2 <= f) and (t2 > t or f2 < f) for _, t2, f2 in m)]
    return [i for i, _, _ in sorted(front, key=lambda x: x[2])]


def grid_size(knobs: tuple[TuneKnob, ...]) -> int:
    return math.prod(len(k.values) for k in knobs)


def default_budget(knobs: tuple[TuneKnob, ...]) -> int:
    """Restarts a tune may use unless told: 35 % of the grid, at least 4, at most 40 (never more than the grid)."""
    n = grid_size(knobs)
    return min(n, max(4, min(MAX_DEFAULT_BUDGET, math.ceil(BUDGET_SHARE * n))))


def default_patience(budget: int) -> int:
    return max(8, (2 * budget) // 3)


def key_of(changes: dict[str, str]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted(changes.items()))


def goal_status(goal: Goal, throughput: float | None, ttft_p95_ms: float | None) -> str:
    if throughput is None:
        return FAILED
    if goal.ttft_p95_ms is not None and (ttft_p95_ms is None or ttft_p95_ms >= goal.ttft_p95_ms):
        return VIOLATES
    return OK


def forecast_refusal(fc: Forecast | None, goal: Goal, changes: dict[str, str], *,
                     slots: int | None = None) -> str | None:
    """Why the configuration is ruled out before a restart, or None. With a TTFT limit, fewer running-request slots
    than the goal's concurrency make requests queue, and a queued request waits a whole request for its first
    token, so the limit cannot hold. The slots are the configuration's own cap when it sets one (``slots``: the
    engine's `ForecastKnobs.explicit_max_running`, SGLang's --max-running-requests, vLLM's --max-num-seqs, llama.cpp's
    --parallel: a setting, not a forecast), else the capacity forecast's — only one fitted within the recorded points
    (not extrapolated, no caveats) counts."""
    if goal.ttft_p95_ms is None:
        return None
    if slots is not None and 0 < slots < goal.concurrency:
        return (f"runs at most {slots} requests at once < C={goal.concurrency}; requests would queue and TTFT p95 "
                f"could not stay under {goal.ttft_p95_ms:g} ms (no restart)")
    if fc is None or fc.extrapolated or fc.notes or fc.bound:
        return None
    if fc.max_running is not None and fc.max_running < goal.concurrency:
        return (f"forecast: max running requests ~{fc.max_running} < C={goal.concurrency}; requests would queue "
                f"and TTFT p95 could not stay under {goal.ttft_p95_ms:g} ms (no restart)")
    return None


@dataclass(frozen=True)
class TuneChoice:
    """The tune's pick: the best point, the points within noise of the fastest, and why."""

    best: Point | None
    within_noise: tuple[Point, ...]
    why: str


class TuneSearch:
    """Optuna's TPE sampler over the grid of `knobs` (ask/tell), with pitcrew's stopping rules.

    Each knob is an integer index into its values (ordinal, so the sampler can learn "more steps is worse").
    Infeasible points (failed, refused, over the TTFT limit) reach the sampler as violated constraints
    with their measured value (0 for the ones with none), so it learns where not to go."""

    def __init__(self, knobs: tuple[TuneKnob, ...], goal: Goal, *, seed: int, budget: int, noise: RunNoise,
                 patience: int | None = None, sampler: optuna.samplers.BaseSampler | None = None,
                 memory_direction: Mapping[str, int] | None = None) -> None:
        self.knobs = knobs
        # which way each knob raises the memory a configuration needs (the unit's engine's
        # `Engine.memory_direction`; the default engine's when not given)
        self.memory_direction = memory_direction if memory_direction is not None else \
            DEFAULT_ENGINE.memory_direction
        self.goal = goal
        self.budget = budget
        self.noise = noise
        self.patience = patience if patience is not None else default_patience(budget)
        self.rng = random.Random(seed)
        import optuna

        optuna.logging.set_verbosity(optuna.logging.WARNING)
        sampler = sampler or optuna.samplers.TPESampler(seed=seed, multivariate=True,
                                                        n_startup_trials=max(3, min(8, budget // 4)))
        self.study = optuna.create_study(direction="maximize", sampler=sampler)
        self.points: dict[tuple[tuple[str, str], ...], Point] = {}
        self.order: list[Point] = []
        self.restarts = 0
        self.since_gain = 0  # restarts since the best point last improved measurably
        self.stopped = ""
        self._pending: optuna.trial.Trial | None = None

    # ---- ask / tell ---------------------------------------------------------------------------------
    def ask(self) -> dict[str, str] | None:
        """The next configuration to evaluate, or None when the search is done (`stopped` says why)."""
        # the grid first: a grid whose last configuration took the budget's last restart ended for want of
        # configurations, not of restarts
        if len(self.points) >= grid_size(self.knobs):
            self.stopped = "every configuration of the grid was evaluated"
            return None
        if self.restarts >= self.budget:
            self.stopped = f"the budget of {self.budget} restarts is spent"
            return None
        if self.since_gain >= self.patience and self.best_point() is not None:
            self.stopped = (f"{self.since_gain} restarts in a row found nothing measurably better than the best "
                            f"(beyond the noise band)")
            return None
        for _ in range(DUPLICATE_ASKS):
            trial = self.study.ask()
            changes = {k.flag: k.values[trial.suggest_int(k.flag, 0, len(k.values) - 1)] for k in self.knobs}
            known = self.points.get(key_of(changes))
            if known is None:
                self._pending = trial
                return changes
            self._tell_trial(trial, known)  # answered from its measurement: no restart
        free = [c for c in self._grid() if key_of(c) not in self.points]
        changes = self.rng.choice(free)
        self._pending = None
        return changes

    def tell(self, point: Point) -> None:
        """Record what `point` measured (or why it failed)."""
        before = self.best_point()
        self.points[key_of(point.changes)] = point
        self.order.append(point)
        if point.restarted:
            self.restarts += 1
        trial = self._pending
        self._pending = None
        if trial is None:
            trial = self._fixed(point.changes)
        self._tell_trial(trial, point)
        if not point.restarted:
            return
        if point.feasible and (before is None or self._measurably_better(point, before)):
            self.since_gain = 0
        else:
            self.since_gain += 1

    def seed_point(self, point: Point) -> None:
        """A point measured before the search (the starting configuration): known to the sampler, free."""
        if all(point.changes.get(k.flag) in k.values for k in self.knobs):
            self.tell(point)
        else:
            self.order.append(point)

    def in_failed_region(self, changes: dict[str, str]) -> str | None:
        """Why `changes` is ruled out by a memory failure already seen (no restart), or None: it is at least as
        demanding in every knob (`memory_direction`) as a point that ran out of memory. A knob whose memory
        direction is unknown must be equal to the failed point's."""
        for p in self.order:
            if not (p.status == FAILED and p.memory):
                continue
            worse = True
            for k in self.knobs:
                a, b = k.values.index(changes[k.flag]), k.values.index(p.changes[k.flag])
                sign = self.memory_direction.get(k.flag, 0)
                if (sign == 0 and a != b) or sign * (a - b) < 0:
                    worse = False
                    break
            if worse:
                return (f"needs at least the memory of {changes_label(p.changes)}, which ran out of memory "
                        f"({p.why.split(';')[0][:120]}); no restart")
        return None

    # ---- choice -------------------------------------------------------------------------------------
    def best_point(self) -> Point | None:
        feasible = [p for p in self.points.values() if p.feasible and p.throughput is not None]
        return max(feasible, key=lambda p: p.throughput or 0.0) if feasible else None

    def choose(self) -> TuneChoice:
        """The fastest feasible point, the feasible points within noise of it, and among those the one that
        leaves the most KV cache (then the fastest)."""
        top = self.best_point()
        if top is None or top.throughput is None:
            return TuneChoice(None, (), "no configuration met the goal")
        tied = [p for p in self.points.values() if p.feasible and p.throughput is not None
                and (p is top or not self._measurably_better(top, p))]
        best = max(tied, key=lambda p: (p.kv_tokens or 0, p.throughput or 0.0))
        parts = [f"fastest {changes_label(top.changes)}: {top.throughput:.0f} tok/s at C={self.goal.concurrency}"]
        if len(tied) > 1:
            parts.append(f"{len(tied)} configurations are within noise of it")
        if best is not top:
            parts.append(f"{changes_label(best.changes)} leaves more KV cache ({best.kv_tokens or 0:,} vs "
                         f"{top.kv_tokens or 0:,} tokens)")
        parts.append(self.noise.describe())
        return TuneChoice(best, tuple(tied), "; ".join(parts))

    def _measurably_better(self, a: Point, b: Point) -> bool:
        if a.throughput is None or b.throughput is None:
            return False
        if b.throughput <= 0.0:
            return a.throughput > 0.0
        cmp = compare_samples((), (), new_median=a.throughput, old_median=b.throughput, noise=self.noise,
                              concurrency=self.goal.concurrency)
        return cmp is not None and cmp.outcome == BETTER

    # ---- optuna plumbing ----------------------------------------------------------------------------
    def _fixed(self, changes: dict[str, str]) -> optuna.trial.Trial:
        """A trial at `changes` (a point the sampler did not propose: the start, a seeded pick)."""
        self.study.enqueue_trial({k.flag: k.values.index(changes[k.flag]) for k in self.knobs},
                                 skip_if_exists=False)
        return self.study.ask()

    def _tell_trial(self, trial: optuna.trial.Trial, point: Point) -> None:
        for k in self.knobs:  # an enqueued trial takes its values when they are suggested
            if k.flag not in trial.params:
                trial.suggest_int(k.flag, 0, len(k.values) - 1)
        if point.status == OK or point.status == VIOLATES:
            over = 0.0
            if self.goal.ttft_p95_ms is not None and point.ttft_p95_ms is not None:
                over = point.ttft_p95_ms / self.goal.ttft_p95_ms - 1.0
            trial.set_constraint("goal", min(over, 0.0) if point.status == OK else max(over, 1e-6))
            value = float(point.throughput or 0.0)
        else:
            trial.set_constraint("goal", 1.0)
            value = 0.0
        self.study.tell(trial, value)

    def _grid(self) -> list[dict[str, str]]:
        out: list[dict[str, str]] = [{}]
        for k in self.knobs:
            out = [{**c, k.flag: v} for c in out for v in k.values]
        return out


Evaluate = Callable[[dict[str, str]], Awaitable[Point]]
Gate = Callable[[dict[str, str]], Awaitable[str | None]]


async def search_loop(search: TuneSearch, evaluate: Evaluate, gate: Gate,
                      progress: Callable[[int, dict[str, str]], Awaitable[None]] | None = None) -> None:
    """Ask, rule out before a restart (`gate`), evaluate, tell — until the search stops. The sampler's step is
    CPU work and runs in a thread."""
    while (changes := await asyncio.to_thread(search.ask)) is not None:
        why = search.in_failed_region(changes) or await gate(changes)
        if why is not None:
            await asyncio.to_thread(search.tell, Point(changes, REFUSED, why=why))
            continue
        if progress is not None:
            await progress(search.restarts + 1, changes)
        point = await evaluate(changes)
        await asyncio.to_thread(search.tell, point)


# ---- the confirming run ------------------------------------------------------------------------------------

CONFIRMED, NOT_BETTER, UNCONFIRMED, START_BEST, NO_BEST = "confirmed", "not better", "unconfirmed", "start", "none"
MAX_CONFIRMS = 2  # the search's pick, and the next best once more when that one does not confirm

Measure = Callable[[Point], Awaitable[Point]]


@dataclass
class Confirmation:
    """What the confirming runs made of the search's pick: the recommendation, its verdict and every confirming
    run (the candidate, the search's figure that selected it and the confirmation's own)."""

    status: str  # CONFIRMED | NOT_BETTER | UNCONFIRMED | START_BEST | NO_BEST
    recommended: Point | None  # the confirmed point, or the start (kept), or None (nothing met the goal)
    verdict: str
    runs: list[dict[str, Any]]
    choice: TuneChoice  # the search's choice the recommendation was judged from (after failed confirmations)
    search_best: dict[str, Any] | None  # the search's pick before any confirmation, as JSON

    @property
    def restarts(self) -> int:
        return sum(1 for r in self.runs if r.get("restarted"))

    def to_json(self) -> dict[str, Any]:
        last = self.runs[-1] if self.runs else {}
        return {"status": self.status, "runs": self.runs, "throughput": last.get("throughput"),
                "search_throughput": last.get("search_throughput"), "label": last.get("label"),
                "restarts": self.restarts, "search_best": self.search_best}


def _is_start(point: Point, start: Point) -> bool:
    return point.start or point.changes == start.changes


def _held_memory_note(search: TuneSearch, candidate: Point, got: Point) -> str:
    """When a confirming run ran out of memory where the candidate's search run did not, and a configuration ran out
    of memory after that search run: say so (a crash can leave GPU memory held — the simulated SGLang host keeps a
    0.75 GiB residual after a CUDA OOM — so the figures of one tune depend on its order)."""
    if not got.memory or candidate not in search.order:
        return ""
    later = search.order[search.order.index(candidate) + 1:]
    crashed = [p for p in later if p.status == FAILED and p.memory]
    if not crashed:
        return ""
    return (f"; its run in the search did not fail, and {changes_label(crashed[0].changes)} ran out of memory after "
            "it in this tune (a crash can leave memory held)")


async def confirm_best(search: TuneSearch, start: Point, measure: Measure, *, baseline: float | None,
                       baseline_runs: int = 1, earlier: Sequence[Point] = ()) -> Confirmation:
    """Confirm the search's pick before the verdict. The pick is the fastest of many noisy single measurements, so
    its own figure reads high (the winner's curse); `measure` deploys it again (a real restart) and benchmarks it
    with new prompts, and the verdict against the start's `baseline` is that confirming run's alone.

    * the start is the pick: nothing to confirm (no restart);
    * the confirming run fails (crash, out of memory, not ready) or breaks the TTFT limit: the point is marked so,
      with its cause, and the next best is confirmed instead — at most `MAX_CONFIRMS` confirming runs in all; when
      nothing confirms (or the next best is the start, or even its search figure is measurably worse than the
      start's: no restart for a candidate that cannot win), the answer says so and recommends keeping the start;
    * the confirming run is not measurably better than the start (within noise, too noisy to tell, or worse): the
      verdict says "not measurably better than the start" and the recommendation is the start — unless the start
      itself does not meet the goal (a TTFT limit it breaks), when the confirmed point that meets it is recommended.

    `earlier`: confirming runs a resumed tune's earlier job finished (its `tune-confirm` steps): a candidate among
    them is answered from that run, without a restart (its restart still counts, as a resumed point's does).
    """
    done_before = {key_of(p.changes): p for p in earlier}
    goal, noise = search.goal, search.noise
    choice = search.choose()
    search_best = choice.best.to_json() if choice.best is not None else None
    runs: list[dict[str, Any]] = []
    failures: list[str] = []
    c = goal.concurrency
    over = f"C={c} over the start" + (f" (the median of its {baseline_runs} runs on this host)"
                                      if baseline_runs > 1 else "")
    while True:
        best = choice.best
        if best is None:
            if not runs:
                return Confirmation(NO_BEST, None, "", runs, choice, search_best)
            ending = "no other configuration met the goal"
            break
        if _is_start(best, start):
            if not runs:
                return Confirmation(START_BEST, best, "the starting configuration is the best found", runs, choice,
                                    search_best)
            ending = "the next best is the start itself"
            break
        if len(runs) >= MAX_CONFIRMS:
            ending = f"{MAX_CONFIRMS} confirming runs were tried"
            break
        searched = best.throughput
        label = changes_label(best.changes)
        pre = None if baseline is None or searched is None or not start.feasible else compare_samples(
            (), (), new_median=searched, old_median=baseline, noise=noise, concurrency=c)
        if pre is not None and pre.outcome == WORSE:  # not worth a restart: even its search figure loses
            if not runs:
                return Confirmation(NOT_BETTER, start, f"not measurably better than the start: the search's best, "
                                    f"{label}, read {pre.figure()} (worse) at {over}; keep the start", runs, choice,
                                    search_best)
            ending = f"the next best, {label}, read {pre.figure()} against the start in the search"
            break
        resumed = done_before.pop(key_of(best.changes), None)
        got = resumed if resumed is not None else await measure(best)
        run: dict[str, Any] = {"label": label, "changes": dict(best.changes), "search_throughput": searched,
                               "throughput": got.throughput, "ttft_p95_ms": got.ttft_p95_ms, "status": got.status,
                               "why": got.why, "run_id": got.run_id, "restarted": got.restarted,
                               "resumed": resumed is not None}
        runs.append(run)
        if not got.feasible:
            why = (got.why or got.status) + _held_memory_note(search, best, got)
            run.update(outcome="failed", why=why)
            best.status = got.status
            best.why = f"its confirming run: {why} (the search's run read {searched or 0:.0f} tok/s)"
            failures.append(f"{label}'s confirming run failed: {why}")
            choice = search.choose()
            continue
        figures = f"the search read {searched or 0:.0f} tok/s, its confirming run {got.throughput or 0:.0f}"
        cmp = None if baseline is None else compare_samples(
            (), (), new_median=got.throughput, old_median=baseline, noise=noise, concurrency=c)
        if cmp is None:
            run["outcome"] = CONFIRMED
            return Confirmation(CONFIRMED, best, f"confirmed ({figures}); the start has no figure at C={c} to "
                                "compare with", runs, choice, search_best)
        run["change_pct"], run["band_pct"] = round(cmp.change_pct, 1), round(cmp.band_pct, 1)
        if cmp.outcome == BETTER:
            run["outcome"] = CONFIRMED
            return Confirmation(CONFIRMED, best, f"{cmp.text()} at {over}, by its confirming run ({figures})",
                                runs, choice, search_best)
        if not start.feasible:
            run["outcome"] = CONFIRMED
            return Confirmation(CONFIRMED, best, f"{cmp.figure()} ({cmp.outcome}) at {over}, by its confirming run "
                                f"({figures}); it meets the goal and the start does not ({start.why})", runs, choice,
                                search_best)
        run["outcome"] = NOT_BETTER
        return Confirmation(NOT_BETTER, start, f"not measurably better than the start: {label}'s confirming run "
                            f"read {cmp.figure()} ({cmp.outcome}) at {over} ({figures}); keep the start", runs,
                            choice, search_best)
    return Confirmation(UNCONFIRMED, start, f"nothing confirmed: {'; '.join(failures)}; {ending}: keep the start",
                        runs, choice, search_best)


# ---- the job ---------------------------------------------------------------------------------------------

# ran out of memory: GPU memory at start, under load or while capturing graphs; host memory (the unit's MemoryMax=
# or the machine's: the kernel's OOM killer ended it, as llama.cpp's KV cache on the CPU)
MEMORY_CAUSES = ("kv_cache_oom", "cuda_oom_runtime", "cuda_graph_capture_oom", "host_oom_kill")


def knobs_from_params(params: dict[str, Any]) -> tuple[TuneKnob, ...]:
    return tuple(TuneKnob(str(k["flag"]), tuple(str(v) for v in k["values"])) for k in params["knobs"])


def unit_knobs(knobs: tuple[TuneKnob, ...], engine: Engine) -> tuple[TuneKnob, ...]:
    """The knobs as the unit's engine names them (``steps`` stored as SGLang's ``--speculative-num-steps`` is
    ``--num-speculative-tokens`` on a vLLM unit, ``--spec-draft-n-max`` on llama.cpp): the points, their labels,
    the memory directions and the Apply button then speak the unit's own flags."""
    return tuple(TuneKnob(engine_flag(k.flag, engine).name, k.values) for k in knobs)


def start_values(argv: tuple[str, ...], knobs: tuple[TuneKnob, ...], engine: Engine) -> dict[str, str]:
    """The knobs' values the unit runs now, read the engine's way (vLLM's spec tokens inside
    ``--speculative-config``, llama.cpp's draft length of its ``--spec-type`` and its short ``-np``) and written as
    the grid writes them (``0.90`` is the grid's ``0.9``)."""
    values = engine.read_values(argv)
    out: dict[str, str] = {}
    for k in knobs:
        v = values.get(k.flag)
        fdef = engine.lookup_flag(k.flag)
        if v is None or fdef is None:
            continue
        try:
            out[k.flag] = parse_value(fdef, v)
        except UserInputError:
            out[k.flag] = v
    return out


def goal_from_params(params: dict[str, Any]) -> Goal:
    limit = params.get("ttft_p95_ms")
    return Goal(int(params["concurrency"]), float(limit) if limit is not None else None)


def point_of(changes: dict[str, str], outcome: TrialOutcome, goal: Goal, *, restarted: bool,
             start: bool = False) -> Point:
    """A measured trial as a point: throughput and TTFT p95 at the goal's concurrency, capacity from its start."""
    lv = outcome.run.level(goal.concurrency) if outcome.run is not None else None
    thr = lv.output_tok_s if lv is not None else None
    ttft = lv.ttft_p95_ms if lv is not None else None
    cap = outcome.capacity or {}
    status = goal_status(goal, thr, ttft)
    why = "" if status == OK else ("no figures at the goal's concurrency" if thr is None else
                                   f"TTFT p95 {ttft or 0:.0f} ms is over the {goal.ttft_p95_ms or 0:g} ms limit")
    return Point(changes, status, throughput=thr, ttft_p95_ms=ttft, kv_tokens=cap.get("max_total_num_tokens"),
                 max_running=cap.get("max_running_requests"), why=why,
                 run_id=outcome.run.id if outcome.run else None, restarted=restarted, start=start)


def failed_point(changes: dict[str, str], e: DeployFailed | BenchmarkError) -> Point:
    res = e.fields.get("result") or {}
    untouched = bool(res.get("host_untouched"))
    cause = str((res.get("diagnosis") or e.fields.get("diagnosis") or {}).get("cause") or "")
    memory = cause in MEMORY_CAUSES or "out of memory" in e.message.lower() or "not enough memory" in e.message.lower()
    cap = res.get("capacity") or {}
    why = e.message + (f" (diagnosis: {cause})" if cause and cause not in e.message else "")
    run_id = res.get("run_id")  # a crash under the benchmark's load: the levels it served are a stored run
    return Point(changes, REFUSED if untouched else FAILED, kv_tokens=cap.get("max_total_num_tokens"),
                 max_running=cap.get("max_running_requests"), why=why,
                 run_id=run_id if isinstance(run_id, int) else None, restarted=not untouched,
                 memory=memory and not untouched)


async def start_baseline(exp: Experiments, host: str, revision_id: int, concurrency: int,
                         start: Point) -> tuple[float | None, int]:
    """The verdict's baseline: the median output throughput at the goal's concurrency of every run of the starting
    revision on this host (earlier `bench`es of it and the tune's own measurement), and how many runs. One unlucky
    run of the start would otherwise make every configuration look better (measured on the real llama.cpp engine:
    the tune's start read 38 tok/s where three `bench`es of it just before read 47-57)."""
    figures: list[float] = []
    seen: set[int] = set()
    for run in await exp.results.recent(host, 200):
        lv = run.level(concurrency)
        if run.ok and run.revision_id == revision_id and lv is not None and lv.output_tok_s:
            figures.append(lv.output_tok_s)
            seen.add(run.id)
    if start.throughput is not None and start.run_id not in seen:
        figures.append(start.throughput)
    return (statistics.median(figures) if figures else None), len(figures)


async def run_tune(exp: Experiments, ctx: JobContext) -> tuple[str, dict[str, Any]]:
    """The tune job: benchmark the start, search (`search_loop`), put the start back, answer with the best."""
    params = ctx.job.params
    goal = goal_from_params(params)
    host = ctx.job.host
    levels = (goal.concurrency,)
    ops = exp.ops(host)
    start = await exp.observe_live(ctx)
    engine = engine_named(unit_engine(start.text))
    knobs = unit_knobs(knobs_from_params(params), engine)
    budget = int(params.get("budget") or default_budget(knobs))
    start_argv = read_exec_start(start.text).argv
    shorts = {k.flag: flag_label(k.flag, engine.name) for k in knobs}
    start_changes = start_values(start_argv, knobs, engine)
    left_down = 0

    await exp.progress(ctx, "benchmarking the starting configuration", f"C={goal.concurrency}")
    start_point = point_of(start_changes, await exp.trial(ctx, start, {}, levels), goal, restarted=False,
                           start=True)
    if start_point.kv_tokens is None:  # benchmarked without a restart: its capacity is in its start's journal
        cap = await ops.running_capacity(engine.name)
        if cap is not None:
            start_point.kv_tokens, start_point.max_running = cap.max_total_num_tokens, cap.max_running_requests
    repeats = await exp.results.repeats(host, next((r.model for r in await exp.results.for_job(ctx.job.id)), ""))
    noise = measure_noise(repeats, goal.concurrency)
    search = TuneSearch(knobs, goal, seed=int(params.get("seed", ctx.job.id)), budget=budget, noise=noise,
                        memory_direction=engine.memory_direction)
    search.seed_point(start_point)
    known = [Point.from_json(d) for d in params.get("known") or []]
    for point in known:  # a resumed tune: what the earlier job measured, without restarting for it again
        if all(point.changes.get(k.flag) in k.values for k in knobs) and key_of(point.changes) not in search.points:
            search.seed_point(point)

    async def gate(changes: dict[str, str]) -> str | None:
        try:
            argv = apply_changes(start_argv, changes).new_argv
        except UserInputError as e:
            return f"refused by pitcrew's flag schema: {e.message}"
        return forecast_refusal(await exp.forecast_for(host, argv), goal, changes,
                                slots=config_point(argv).explicit_max_running)

    async def measure(before: Revision, changes: dict[str, str]) -> Point:
        """Deploy `changes` on top of `before` (a real restart), ramp, benchmark with new prompts."""
        nonlocal left_down
        try:
            point = point_of(changes, await exp.trial(ctx, before, changes, levels), goal, restarted=True)
        except (DeployFailed, BenchmarkError) as e:
            point = failed_point(changes, e)
            # never leave the unit down: back to the configuration that worked before this trial
            await exp.restore(ctx, ops, before, reason=f"tune: {changes_label(changes)} failed")
        if (await ops.state()).active_state != "active":
            left_down += 1
            await exp.restore(ctx, ops, start, reason="tune: the unit was not active after a trial")
        return point

    async def evaluate(changes: dict[str, str]) -> Point:
        point = await measure(await exp.observe_live(ctx), changes)
        async with ctx.step("tune-point") as d:  # durable as it happens: `tune resume <job>` starts from these
            d["point"] = point.to_json()
        return point

    async def confirm(candidate: Point) -> Point:
        """The candidate deployed again on top of the start, so it restarts even when the last trial left it
        running (a failure rolls back to the start, the job's end state anyway)."""
        await exp.progress(ctx, f"confirming {changes_label(candidate.changes)}",
                           "a fresh restart and new prompts: the verdict is this run's")
        point = await measure(start, candidate.changes)
        async with ctx.step("tune-confirm") as d:  # durable like the points: `tune resume` does not redo it
            d["point"] = point.to_json()
            d["search_throughput"] = candidate.throughput
        return point

    async def progress(n: int, changes: dict[str, str]) -> None:
        await exp.progress(ctx, f"trial {n}/{budget}: {changes_label(changes)}",
                           f"{len(search.order)} configurations evaluated")

    try:
        await search_loop(search, evaluate, gate, progress)
        baseline, baseline_runs = await start_baseline(exp, host, start.id, goal.concurrency, start_point)
        confirmation = await confirm_best(search, start_point, confirm, baseline=baseline,
                                          baseline_runs=baseline_runs,  # those a resumed tune's job finished
                                          earlier=[Point.from_json(d) for d in params.get("confirmed") or []])
    except JobCancelled:
        await exp.restore(ctx, ops, start, reason="cancelled")
        raise JobCancelled(f"job {ctx.job.id} was cancelled; {host} is back on revision {start.id}") from None
    await exp.restore(ctx, ops, start, reason="tune finished")
    choice = confirmation.choice
    best = confirmation.recommended
    verdict = confirmation.verdict
    restarts = search.restarts + confirmation.restarts
    result = {"knobs": [{"flag": k.flag, "short": shorts[k.flag], "values": list(k.values)} for k in knobs],
              "goal": {"concurrency": goal.concurrency, "ttft_p95_ms": goal.ttft_p95_ms, "text": goal.describe()},
              "budget": budget, "grid": grid_size(knobs), "restarts": restarts, "search_restarts": search.restarts,
              "stopped": search.stopped,
              "start": start_point.to_json(), "points": [p.to_json() for p in search.order],
              "pareto": pareto_front(search.order),
              "best": best.to_json() if best else None, "best_label": changes_label(best.changes) if best else None,
              "verdict": verdict, "confirmation": confirmation.to_json(), "criterion": choice.why,
              "within_noise": [changes_label(p.changes) for p in choice.within_noise],
              "left_on": f"left on the starting configuration (revision {start.id})", "left_down": left_down,
              "start_revision": start.id, "noise_pct": noise.sd_pct,
              "baseline": {"throughput": baseline, "runs": baseline_runs}, "resumed": len(known),
              "resumes": params.get("resumes")}
    pick = "keep the start" if best is not None and _is_start(best, start_point) else "best"
    summary = (f"tune {goal.describe()}: {pick} {result['best_label']} ({verdict}); {restarts} restarts of "
               f"{grid_size(knobs)} in the grid" if best else
               f"tune {goal.describe()}: no configuration met the goal in {restarts} restarts")
    return summary, result
