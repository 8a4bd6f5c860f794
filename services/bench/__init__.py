"""The benchmark: a streaming load generator for OpenAI-compatible servers (SSE parsing, levels of
concurrency, server-side probes, statistics) and the child process the bot runs it in.

The names below are the package's public API: other packages import only these."""

from services.bench.conn import run_client_loop
from services.bench.probes import MetricsProbe
from services.bench.process import run_benchmark_isolated
from services.bench.runner import BenchProgress, BenchSpec, run_benchmark
from services.bench.stats import BenchResult

__all__ = [
    "BenchProgress",
    "BenchResult",
    "BenchSpec",
    "MetricsProbe",
    "run_benchmark",
    "run_benchmark_isolated",
    "run_client_loop",
]
