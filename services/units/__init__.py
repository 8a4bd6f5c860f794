"""systemd units: the unit-file syntax, the engine a unit runs, `ExecStart=` flag editing against that
engine's flag schema (SGLang's or vLLM's, one vocabulary for both),
recorded revisions, and the careful stop/start of a unit (deploy).

The names below are the package's public API: other packages import only these."""

from services.units.deploy import ReadyReport, StartFailed, UnitOps, UnitState
from services.units.editor import flag_diff, get_flag, read_exec_start, rewrite_exec_start
from services.units.engine_cli import EngineCli, EngineOption, FlagProblem, check_argv, engine_of, parse_help
from services.units.engine_flags import (
    FLAGS,
    KNOBS,
    SCHEMAS,
    EngineFlags,
    Knob,
    apply_changes,
    engine_flag,
    flag_help_lines,
    knob_of,
    lookup_flag,
    resolve_flag,
    schema_engine,
)
from services.units.engines import ENGINES, Engine, detect_engine, engine_display, engine_version, unit_engine
from services.units.flags import FlagDef, FlagPlan, check_plain, format_change, parse_value
from services.units.labels import changes_label, config_label, flag_label, format_label_value
from services.units.revisions import Revision, Revisions
from services.units.service_env import service_environment, service_user

__all__ = [
    "ENGINES",
    "FLAGS",
    "KNOBS",
    "SCHEMAS",
    "Engine",
    "EngineCli",
    "EngineFlags",
    "EngineOption",
    "FlagDef",
    "FlagPlan",
    "FlagProblem",
    "Knob",
    "ReadyReport",
    "Revision",
    "Revisions",
    "StartFailed",
    "UnitOps",
    "UnitState",
    "apply_changes",
    "changes_label",
    "check_argv",
    "check_plain",
    "config_label",
    "detect_engine",
    "engine_display",
    "engine_flag",
    "engine_of",
    "engine_version",
    "flag_diff",
    "flag_help_lines",
    "flag_label",
    "format_change",
    "format_label_value",
    "get_flag",
    "knob_of",
    "lookup_flag",
    "parse_help",
    "parse_value",
    "read_exec_start",
    "resolve_flag",
    "rewrite_exec_start",
    "schema_engine",
    "service_environment",
    "service_user",
    "unit_engine",
]
