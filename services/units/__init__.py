"""systemd units: the unit-file syntax, `ExecStart=` flag editing against the engine's flag schema,
recorded revisions, and the careful stop/start of a unit (deploy).

The names below are the package's public API: other packages import only these."""

from services.units.deploy import ReadyReport, StartFailed, UnitOps, UnitState
from services.units.editor import get_flag, read_exec_start, rewrite_exec_start
from services.units.engine_cli import EngineCli, EngineOption, FlagProblem, check_argv, engine_of, parse_help
from services.units.engines import ENGINES, Engine, detect_engine, engine_display, engine_version, unit_engine
from services.units.revisions import Revision, Revisions
from services.units.service_env import service_environment, service_user
from services.units.sglang_flags import (
    FLAGS,
    FlagDef,
    FlagPlan,
    apply_changes,
    check_plain,
    flag_help_lines,
    format_change,
    lookup_flag,
    parse_value,
    resolve_flag,
)

__all__ = [
    "ENGINES",
    "FLAGS",
    "Engine",
    "EngineCli",
    "EngineOption",
    "FlagDef",
    "FlagPlan",
    "FlagProblem",
    "ReadyReport",
    "Revision",
    "Revisions",
    "StartFailed",
    "UnitOps",
    "UnitState",
    "apply_changes",
    "check_argv",
    "check_plain",
    "detect_engine",
    "engine_display",
    "engine_of",
    "engine_version",
    "flag_help_lines",
    "format_change",
    "get_flag",
    "lookup_flag",
    "parse_help",
    "parse_value",
    "read_exec_start",
    "resolve_flag",
    "rewrite_exec_start",
    "service_environment",
    "service_user",
    "unit_engine",
]
