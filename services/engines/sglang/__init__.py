"""SGLang: its flag schema, its log lines and the `Engine` protocol implemented for it (`SGLANG`).

The names below are the package's public API: other packages import only these."""

from services.engines.sglang.engine import SGLANG, SGLang, SglangCapacityReader
from services.engines.sglang.log import (
    READY_TEXT,
    DecodeStats,
    PrefillStats,
    parse_capacity,
    parse_decode,
    parse_prefill,
    strip_prefix,
)

__all__ = [
    "READY_TEXT",
    "SGLANG",
    "DecodeStats",
    "PrefillStats",
    "SGLang",
    "SglangCapacityReader",
    "parse_capacity",
    "parse_decode",
    "parse_prefill",
    "strip_prefix",
]
