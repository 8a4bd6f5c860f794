"""vLLM: its flag schema (spec tokens inside `--speculative-config`), its log lines and the `Engine` protocol
implemented for it (`VLLM`).

The names below are the package's public API: other packages import only these."""

from services.engines.vllm.engine import VLLM, Vllm
from services.engines.vllm.log import (
    VllmCapacityReader,
    VllmSpecStats,
    VllmThroughput,
    parse_vllm_spec,
    parse_vllm_throughput,
)

__all__ = [
    "VLLM",
    "Vllm",
    "VllmCapacityReader",
    "VllmSpecStats",
    "VllmThroughput",
    "parse_vllm_spec",
    "parse_vllm_throughput",
]
