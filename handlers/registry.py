"""The command registry: every command's one declaration, in the order help lists them.

Owns `COMMANDS` and the lookups the grammar, help and router use (by word, by command type).
Each entry is a `CommandSpec` built by `handlers.spec.command` on its handler; `check` proves
the table is whole (every part present, no word naming two commands), and runs at import.
"""

from __future__ import annotations

from typing import Any

from handlers.auth import ROLES
from handlers.cmd_experiments import do_again, do_bench, do_kill_stale, do_rollback, do_sweep, do_try, do_tune
from handlers.cmd_help import do_help
from handlers.cmd_hosts import do_diff, do_doctor, do_health, do_logs, do_status
from handlers.cmd_incidents import do_ack, do_mute
from handlers.cmd_jobs import do_cancel, do_compare, do_confirm, do_deny, do_history, do_queue, do_show
from handlers.cmd_schedules import do_schedule, do_schedules, do_unschedule
from handlers.commands import Command
from handlers.spec import CommandSpec

__all__ = ["BY_TYPE", "BY_WORD", "COMMANDS", "check", "spec_of"]

COMMANDS: tuple[CommandSpec[Any], ...] = (
    do_try, do_sweep, do_tune, do_bench, do_status, do_health, do_doctor, do_queue, do_cancel, do_rollback, do_show,
    do_compare,
    do_history, do_diff, do_logs, do_kill_stale, do_ack, do_mute, do_again, do_schedule, do_schedules, do_unschedule,
    do_confirm, do_deny, do_help,
)


def check(commands: tuple[CommandSpec[Any], ...]) -> list[str]:
    """What is wrong with a command table (empty when every command has every part)."""
    problems: list[str] = []
    seen_words: dict[str, str] = {}
    seen_types: set[type[Command]] = set()
    for spec in commands:
        if spec.cls in seen_types:
            problems.append(f"{spec.cls.__name__} is declared twice")
        seen_types.add(spec.cls)
        if not spec.words or not spec.summary or not spec.examples or spec.usage.split()[0] != spec.name:
            problems.append(f"{spec.name or spec.cls.__name__}: needs words, a docstring, examples and a usage "
                            "starting with its name")
        if spec.role not in ROLES:
            problems.append(f"{spec.name}: unknown role {spec.role!r}")
        for word in spec.words:
            if word in seen_words:
                problems.append(f"'{word}' names both {seen_words[word]} and {spec.name}")
            seen_words[word] = spec.name
    return problems


_problems = check(COMMANDS)
if _problems:  # a broken table is a programming error: fail at import, not on someone's command
    raise RuntimeError("command registry: " + "; ".join(_problems))

BY_WORD: dict[str, CommandSpec[Any]] = {w: spec for spec in COMMANDS for w in spec.words}
BY_TYPE: dict[type[Command], CommandSpec[Any]] = {spec.cls: spec for spec in COMMANDS}


def spec_of(cmd: Command) -> CommandSpec[Any]:
    return BY_TYPE[type(cmd)]
