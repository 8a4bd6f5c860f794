"""systemd units: the unit-file syntax, `ExecStart=` editing, configuration labels, the engine's own
command line, recorded revisions, and the careful stop/start of a unit (deploy). What each engine's
flags are and how a change is planned on them is `services.engines`.

The names below are the package's public API: other packages import only these."""

from services.units.deploy import ReadyReport, StartFailed, UnitOps, UnitState
from services.units.editor import flag_diff, read_exec_start, rewrite_exec_start, unit_engine
from services.units.engine_cli import EngineCli, EngineOption, FlagProblem, check_argv, parse_help
from services.units.labels import changes_label, config_label, flag_label, format_label_value
from services.units.revisions import Revision, Revisions
from services.units.service_env import service_environment, service_user

__all__ = [
    "EngineCli",
    "EngineOption",
    "FlagProblem",
    "ReadyReport",
    "Revision",
    "Revisions",
    "StartFailed",
    "UnitOps",
    "UnitState",
    "changes_label",
    "check_argv",
    "config_label",
    "flag_diff",
    "flag_label",
    "format_label_value",
    "parse_help",
    "read_exec_start",
    "rewrite_exec_start",
    "service_environment",
    "service_user",
    "unit_engine",
]
