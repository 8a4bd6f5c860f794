"""llama.cpp's ``llama-server``: its flag schema (the draft length of the unit's ``--spec-type``), its log lines and
failure texts, and the `Engine` protocol implemented for it (`LLAMACPP`).

The names below are the package's public API: other packages import only these."""

from services.engines.llamacpp.engine import LLAMACPP, LlamaCpp
from services.engines.llamacpp.log import LlamaCapacityReader, SpecStats, parse_spec_stats

__all__ = ["LLAMACPP", "LlamaCapacityReader", "LlamaCpp", "SpecStats", "parse_spec_stats"]
