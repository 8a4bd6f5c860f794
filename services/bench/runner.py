"""The benchmark of an OpenAI-compatible streaming server: what to run and `run_benchmark`.

Owns `BenchSpec` (validated parameters, the default request count per level and the plan's length in
rounds), the run across concurrency levels (one keep-alive
connection per slot, `services.bench.conn`), the server check before the run and the result.
Definitions live in `services.bench.stats`, the
per-level closed loop in `services.bench.level`, SSE parsing in `services.bench.sse`, server-side
figures in `services.bench.probes`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import orjson

from services.bench.conn import ConnectFailed, Dropped, Endpoint, get
from services.bench.level import BenchProgress, LevelPlan, LevelRun
from services.bench.probes import MetricsProbe, ServerProbe
from services.bench.prompts import load_prompts_file, request_body, synthetic_prompt
from services.bench.stats import BenchResult, ClientHealth, Dist, LevelResult, ServerFigures
from services.errors import BenchmarkError

__all__ = [
    "BenchProgress", "BenchResult", "BenchSpec", "ClientHealth", "Dist", "LevelResult", "MetricsProbe",
    "ServerFigures", "ServerProbe", "run_benchmark",
]

CHECK_TIMEOUT_S = 10.0
DEFAULT_MIN_REQUESTS = 32
DEFAULT_ROUNDS = 4  # by default every level measures at least this many rounds of C requests


def default_requests(concurrency: int) -> int:
    """Measured requests of a level when no count is given: at least 4 rounds of C (so every slot is busy four
    times over and the level fills) and at least 32, rounded up to whole rounds."""
    n = max(DEFAULT_MIN_REQUESTS, DEFAULT_ROUNDS * concurrency)
    return -(-n // concurrency) * concurrency


@dataclass(frozen=True)
class BenchSpec:
    url: str
    model: str | None = None
    api: Literal["chat", "completions"] = "chat"
    concurrency: tuple[int, ...] = (1, 4, 16)
    requests_per_level: int | None = None  # None: `default_requests(C)` per level
    duration_s: float | None = None
    warmup: int = 2
    input_len: int = 256
    output_len: int = 256
    prompts_file: Path | None = None
    seed: int = 0
    timeout_s: float = 600.0
    # `warmup` is a minimum count per level, rounded up to whole rounds: each of the C slots sends
    # ceil(warmup / C) unmeasured requests first; measuring starts when all of them have ended, with
    # C measured requests sent at once, and nothing is sent after the last measured request.
    # `timeout_s` is each request's deadline, first byte to last. With `duration_s` set, the level
    # measures the requests sent during that many seconds and `requests_per_level` becomes None. Without a
    # count or a duration each level measures `default_requests(C)`.

    def __post_init__(self) -> None:
        if not self.url.startswith(("http://", "https://")):
            raise BenchmarkError(f"url must start with http:// or https://, got {self.url!r}")
        if self.api not in ("chat", "completions"):
            raise BenchmarkError(f"api must be 'chat' or 'completions', got {self.api!r}")
        if not self.concurrency or any(c < 1 or c > 4096 for c in self.concurrency):
            raise BenchmarkError("concurrency levels must be integers between 1 and 4096")
        if self.duration_s is not None:
            object.__setattr__(self, "requests_per_level", None)  # a duration wins over a count
        if self.requests_per_level is not None and self.requests_per_level < 1:
            raise BenchmarkError("requests per level must be at least 1")
        if self.duration_s is not None and not 0 < self.duration_s <= 86_400:
            raise BenchmarkError("duration must be between 0 and 86400 seconds")
        if self.warmup < 0:
            raise BenchmarkError("warmup must be 0 or more")
        if self.input_len < 1 or self.output_len < 1:
            raise BenchmarkError("input and output lengths must be at least 1")
        if not 0 < self.timeout_s <= 86_400:
            raise BenchmarkError("timeout must be between 0 and 86400 seconds")

    @property
    def base_url(self) -> str:
        return self.url.rstrip("/").removesuffix("/v1")

    def requests_at(self, concurrency: int) -> int | None:
        """Measured requests of the level at `concurrency`; None in duration mode."""
        if self.duration_s is not None:
            return None
        return self.requests_per_level if self.requests_per_level is not None else default_requests(concurrency)

    def warmup_at(self, concurrency: int) -> int:
        """Warmup requests per slot: `warmup` is a minimum per level, in whole rounds."""
        return -(-self.warmup // concurrency)

    def plan_text(self) -> str:
        """One line: each level's measured and warmup requests, and the run's length in rounds."""
        levels = ", ".join(
            f"C={c}: " + (f"{self.duration_s:g} s" if self.duration_s is not None else
                          f"{self.requests_at(c)} measured") + f" (+{self.warmup_at(c) * c} warmup)"
            for c in self.concurrency)
        rounds = self.rounds()
        return f"plan: {levels}" + (f"; {rounds} rounds of requests" if rounds is not None else "")

    def rounds(self) -> int | None:
        """How many requests each slot sends one after another over the whole run (request mode)."""
        total = 0
        for c in self.concurrency:
            n = self.requests_at(c)
            if n is None:
                return None
            total += self.warmup_at(c) + -(-n // c)
        return total

    def estimate_s(self, e2e_s: float) -> float:
        """The run's length if every request took `e2e_s` (the first requests' E2E, at the first level's C): a
        lower bound where a server slows down with more streams in flight."""
        rounds = self.rounds()
        if rounds is not None:
            return rounds * e2e_s
        assert self.duration_s is not None
        return sum(self.duration_s + (self.warmup_at(c) + 1) * e2e_s for c in self.concurrency)


async def _check_server(spec: BenchSpec) -> str | None:
    """Fail fast if nothing answers; return the model to use (the spec's, else the first served)."""
    try:
        status, body = await get(spec.base_url.rstrip("/") + "/v1/models", timeout_s=CHECK_TIMEOUT_S)
    except (TimeoutError, ConnectFailed, Dropped, OSError) as exc:
        detail = (str(exc) or type(exc).__name__)[:200]
        raise BenchmarkError(f"cannot reach the server at {spec.base_url}: {detail}") from None
    if spec.model is not None:
        return spec.model
    if status != 200:
        return None
    try:
        data: Any = orjson.loads(body).get("data")
        model = data[0]["id"] if data else None
    except (ValueError, AttributeError, KeyError, IndexError, TypeError):
        return None
    return model if isinstance(model, str) else None


async def run_benchmark(spec: BenchSpec, *,
                        progress: Callable[[BenchProgress], Awaitable[None]] | None = None,
                        probe: ServerProbe | None = None, cancel: asyncio.Event | None = None) -> BenchResult:
    """Benchmark `spec.url` at each concurrency level; a cancel returns what was measured so far."""
    started = datetime.now(UTC).isoformat(timespec="seconds")
    prompts = await asyncio.to_thread(load_prompts_file, spec.prompts_file) if spec.prompts_file else None
    path = "/v1/chat/completions" if spec.api == "chat" else "/v1/completions"
    levels: list[LevelResult] = []
    stopped = False
    model = await _check_server(spec)
    endpoint = Endpoint.from_url(spec.base_url)

    def body_at(idx: int) -> bytes:
        prompt = (prompts[idx % len(prompts)] if prompts is not None
                  else synthetic_prompt(spec.seed, idx, spec.input_len))
        return request_body(spec.api, model, prompt, spec.output_len)

    for n, c in enumerate(spec.concurrency, 1):
        if cancel is not None and cancel.is_set():
            stopped = True
            break
        plan = LevelPlan(concurrency=c, warmup=spec.warmup_at(c), requests=spec.requests_at(c),
                         duration_s=spec.duration_s, timeout_s=spec.timeout_s, path=path,
                         body=body_at, first_index=n * 1_000_000,
                         level=n, levels=len(spec.concurrency))
        run = LevelRun(endpoint, plan, progress=progress, probe=probe, cancel=cancel)
        levels.append(await run.run())
        if run.cancelled or run.server_dead:
            stopped = True
            break
    return BenchResult(url=spec.url, model=model, started_at=started, levels=tuple(levels),
                       cancelled=stopped and cancel is not None and cancel.is_set())
