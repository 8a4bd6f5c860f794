"""The experiment pipelines' plain values: the policy and benchmark defaults the composition root passes down, a
preview, what one trial produced, the words for a change, and the capacity and flag helpers both the preview and the
pipeline use."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from services.engines import engine_for, engine_named, get_flag, knob_of, lookup_flag
from services.experiments.results import RunSummary
from services.units import (
    ReadyReport,
    changes_label,
)

READY_FLOOR_S = 30.0


@dataclass(frozen=True)
class ExperimentPolicy:
    """Plain policy values the composition root passes down."""

    auto_rollback: bool = True
    kill_stale_automatically: bool = False
    ready_timeout_s: float = 900.0
    stop_timeout_s: float = 180.0
    sweep_end: str = "best"  # "best" or "start"
    time_scale: float = 1.0
    ramp: bool = True  # after a start, load up to the top benchmark level in steps before the benchmark
    ramp_tokens: int = 64  # each ramp request's max_tokens, or the benchmark's output length when that is shorter

    @property
    def ready_deadline_s(self) -> float:
        """How long a start may take to serve: `ready_timeout_s`, scaled for the simulator, but never under
        `READY_FLOOR_S` of real time (a process start, its imports and the SSH round trips do not shrink with the
        simulator's clock: at the suite's scale of 0.002 the bare 1.8 s failed starts on a loaded machine, and a floor
        of 10 s failed one in phase 1 at idle priority, session 13). A real host's 900 s is never floored."""
        return max(self.ready_timeout_s * self.time_scale, min(self.ready_timeout_s, READY_FLOOR_S))


@dataclass(frozen=True)
class BenchDefaults:
    concurrency: tuple[int, ...] = (1, 4, 16)
    requests_per_level: int | None = None  # None: services.bench.runner.default_requests(C) per level
    warmup: int = 2
    input_len: int = 256
    output_len: int = 256
    max_duration_s: float = 1800.0


@dataclass(frozen=True)
class Preview:
    host: str
    unit_path: str
    diff: tuple[str, ...]
    notes: tuple[str, ...]
    changed: bool
    checks: tuple[str, ...] = ()  # preflight lines (✓ / ⚠ / ✗)
    refused: bool = False  # a ✗: the configuration cannot start; nothing may be changed
    forecast: dict[str, Any] | None = None
    engine: str = ""  # the unit's engine (its stored name: "sglang", "vllm", "llamacpp"), "" when not read

    def to_json(self) -> dict[str, Any]:
        return {"host": self.host, "unit_path": self.unit_path, "diff": list(self.diff),
                "notes": list(self.notes), "changed": self.changed, "checks": list(self.checks),
                "refused": self.refused, "forecast": self.forecast, "engine": self.engine}


@dataclass
class TrialOutcome:
    """What one deploy-and-benchmark produced."""

    label: str
    run: RunSummary | None = None
    previous: RunSummary | None = None
    verdict: str = ""
    capacity: dict[str, Any] = field(default_factory=dict)
    crashed_at: int | None = None
    revision_after: int | None = None
    forecast: dict[str, Any] | None = None  # the capacity forecast and its error against the logged capacity


def label_for(changes: dict[str, str]) -> str:
    """What a try asked for, in words (`services.units.changes_label`): ``steps 4 · mem 0.85``."""
    return changes_label(changes)


class RestartNotices(Protocol):
    """Tells the incident watch which failures are pitcrew's own (a deploy's stop and start)."""

    def expect(self, host: str, kind: str, *, until: float) -> None: ...

    def clear_expected(self, host: str) -> None: ...


def capacity_json(ready: ReadyReport | None, engine: str) -> dict[str, Any]:
    """The capacity a start logged, as stored with the run (engine-specific keys only for that engine)."""
    if ready is None:
        return {}
    out: dict[str, Any] = {"engine": engine}
    if ready.engine_version:
        out["engine_version"] = ready.engine_version
    if ready.capacity is None:
        return out
    c = ready.capacity
    extras = engine_named(engine).capacity_extras(c)
    return {"max_total_num_tokens": c.max_total_num_tokens, "max_running_requests": c.max_running_requests,
            "context_len": c.context_len, "available_gpu_mem_gb": c.available_gpu_mem_gb, **extras, **out}


def with_flags(argv: tuple[str, ...], changes: dict[str, str]) -> tuple[str, ...]:
    """``argv`` with each changed flag set as typed (for the engine's parser to judge values pitcrew refuses)."""
    names = {}
    engine = engine_for(argv)
    for word, value in changes.items():
        fdef = lookup_flag(word)
        knob = knob_of(fdef.name) if fdef else None
        name = knob.flag(engine) if knob else fdef.name if fdef else word if word.startswith("--") else f"--{word}"
        if name == "--num-speculative-tokens" and get_flag(argv, name) is None:
            continue  # vLLM's spec tokens live in --speculative-config: not a flag its parser would see
        names[name] = value
    out: list[str] = []
    i = 0
    while i < len(argv):
        w = argv[i]
        name = w.partition("=")[0]
        if name in names and i > 0:
            i += 1 if "=" in w or i + 1 >= len(argv) or argv[i + 1].startswith("--") else 2
            continue
        out.append(w)
        i += 1
    for name, value in names.items():
        out.extend([name] if value == "true" else [name, value])
    return tuple(out)
