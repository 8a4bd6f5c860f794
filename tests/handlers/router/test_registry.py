"""The command registry: every command is declared once, with every part, and the router obeys the declaration."""

from __future__ import annotations

import ast
import dataclasses
import inspect
from pathlib import Path
from typing import Any

import pytest
from router_kit import make_router, msg

import handlers.commands as commands_module
from handlers.auth import ROLES, Policy
from handlers.commands import Command
from handlers.contract import ChatMessage, Reply
from handlers.grammar import parse, render
from handlers.registry import BY_TYPE, BY_WORD, COMMANDS, check
from handlers.spec import CommandSpec
from services.store.db import Database

HANDLERS_DIR = Path(__file__).parents[3] / "handlers"


def test_every_command_type_is_declared_exactly_once() -> None:
    types = {c for _, c in inspect.getmembers(commands_module, inspect.isclass)
             if issubclass(c, Command) and c is not Command}
    assert types == set(BY_TYPE)
    assert len(COMMANDS) == len(types)
    assert check(COMMANDS) == []


@pytest.mark.parametrize("spec", COMMANDS, ids=[s.name for s in COMMANDS])
def test_every_declaration_has_every_part(spec: CommandSpec[Any]) -> None:
    assert spec.words and all(BY_WORD[w] is spec for w in spec.words)
    assert spec.usage.split()[0] == spec.name
    doc = inspect.getdoc(spec.handler)
    assert doc and spec.summary == doc.splitlines()[0]  # the handler's docstring is the help line
    assert spec.role in ROLES
    assert spec.confirm is None or isinstance(spec.confirm, str)
    assert inspect.iscoroutinefunction(spec.handler)
    assert spec.examples
    for example in spec.examples:
        cmd = parse(example)
        assert type(cmd) is spec.cls, example  # the parser builds this command
        assert spec.render(cmd) == render(cmd)  # the renderer is the grammar's canonical text
        assert parse(render(cmd)) == cmd, example


def test_only_try_sweep_bench_and_status_may_be_scheduled() -> None:
    assert {s.name for s in COMMANDS if s.schedulable} == {"try", "sweep", "bench", "status"}


def test_a_broken_table_is_reported() -> None:
    by_name = {s.name: s for s in COMMANDS}

    async def undocumented(ctx: Any, m: ChatMessage, c: Any) -> Reply:
        return Reply(text="")

    bad = (by_name["try"], dataclasses.replace(by_name["bench"], words=("bench", "set")),
           dataclasses.replace(by_name["queue"], handler=undocumented),
           dataclasses.replace(by_name["status"], role="root"),  # type: ignore[arg-type]
           by_name["try"])
    problems = "; ".join(check(bad))
    assert "'set' names both try and bench" in problems
    assert "queue: needs words, a docstring" in problems
    assert "unknown role 'root'" in problems
    assert "Try is declared twice" in problems


def _below(role: str) -> str:
    return ROLES[ROLES.index(role) - 1]  # type: ignore[arg-type]


@pytest.mark.parametrize("spec", [s for s in COMMANDS if s.role != "viewer"], ids=lambda s: s.name)
async def test_the_router_enforces_each_declared_role(db: Database, spec: CommandSpec[Any]) -> None:
    text = spec.examples[0] + (" on gpu-1" if spec.name in ("try", "bench", "sweep") else "")
    router, outbox, _ = await make_router(db, Policy(roles={"*": _below(spec.role)}))
    refused = await router.dispatch(msg(text))
    assert refused.text.startswith(f"Not done: `{spec.name}` needs the {spec.role} role")
    assert outbox.sent == []
    router, _, _ = await make_router(db, Policy(roles={"*": spec.role}))
    assert "needs the" not in (await router.dispatch(msg(text))).text


async def test_the_confirm_step_follows_the_policy_by_the_declared_name(db: Database) -> None:
    router, outbox, _ = await make_router(db, Policy(roles={"*": "admin"}, confirm=frozenset()))
    assert (await router.dispatch(msg("bench on gpu-1"))).text == "Job 1 queued on gpu-1."
    router, outbox, _ = await make_router(db, Policy(roles={"*": "admin"}, confirm=frozenset({"bench"})))
    reply = await router.dispatch(msg("bench on gpu-2"))
    assert reply.text.startswith("Job 2 is ready to run on gpu-2: confirm it")
    assert [b.command for b in outbox.sent[0][1].buttons] == ["yes 2", "no 2"]


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
    return names


def test_command_handlers_never_see_the_router() -> None:
    """Not even under TYPE_CHECKING: handlers get a HandlerContext."""
    for path in HANDLERS_DIR.glob("*.py"):
        if path.name in ("router.py", "__init__.py"):
            continue
        assert "handlers.router" not in _imports(path), path.name
