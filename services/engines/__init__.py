"""Inference engines: one package per engine (`sglang`, `vllm`), each implementing the one `Engine` protocol
(detection and version, flag vocabulary and schema, lifecycle signals, metrics, advice wording, host facts),
registered in one place (`registry.ENGINES`); the engine-neutral flag machinery and the chat vocabulary
planned on the unit's own engine.

The names below are the package's public API: other packages import only these."""

from services.engines.flags import (
    FlagChange,
    FlagDef,
    FlagPlan,
    check_plain,
    first_flag,
    format_change,
    get_flag,
    parse_flags,
    parse_value,
)
from services.engines.protocol import Capacity, CapacityReading, Engine, ForecastKnobs, Metrics, WindowFigures
from services.engines.registry import (
    DEFAULT_ENGINE,
    ENGINES,
    detect_engine,
    engine_display,
    engine_for,
    engine_named,
    engine_of_line,
    engine_version,
    find_engine,
    plain_launch,
)
from services.engines.vocabulary import (
    FLAGS,
    KNOBS,
    Knob,
    apply_changes,
    engine_flag,
    flag_help_lines,
    flag_owner,
    knob_of,
    lookup_flag,
    resolve_flag,
)

__all__ = [
    "DEFAULT_ENGINE",
    "ENGINES",
    "FLAGS",
    "KNOBS",
    "Capacity",
    "CapacityReading",
    "Engine",
    "FlagChange",
    "FlagDef",
    "FlagPlan",
    "ForecastKnobs",
    "Knob",
    "Metrics",
    "WindowFigures",
    "apply_changes",
    "check_plain",
    "detect_engine",
    "engine_display",
    "engine_flag",
    "engine_for",
    "engine_named",
    "engine_of_line",
    "engine_version",
    "find_engine",
    "first_flag",
    "flag_help_lines",
    "flag_owner",
    "format_change",
    "get_flag",
    "knob_of",
    "lookup_flag",
    "parse_flags",
    "parse_value",
    "plain_launch",
    "resolve_flag",
]
