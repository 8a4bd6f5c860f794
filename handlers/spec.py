"""One chat command, declared once: `CommandSpec` and the `command` decorator that builds it.

A command's declaration sits on its handler::

    @command(Try, words=("try", "set"), usage=..., examples=..., parse=parse_try, render=render_try,
             role="experimenter", confirm="try", schedulable=True)
    async def do_try(ctx, msg, cmd): "Deploy a flag change, ..."

and gives everything the rest of pitcrew needs: the words that name it, its parser and canonical
renderer (`handlers.grammar`), the role it needs (`handlers.auth`), the name `policy.confirm`
uses for it, whether `every ...` may schedule it, its help (the handler's docstring; its first
line is the summary) and its handler. `handlers.registry` lists every declaration.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from handlers.auth import Role
from handlers.commands import Command
from handlers.context import HandlerContext
from handlers.contract import ChatMessage, Reply

__all__ = ["CommandSpec", "Grammar", "Said", "command"]

C = TypeVar("C", bound=Command)


class Grammar(Protocol):
    """What a parser may ask of the grammar: the vocabulary and nested commands (`every ... <command>`)."""

    def spec_for(self, word: str) -> CommandSpec[Any] | None: ...

    def spec_of(self, cmd: Command) -> CommandSpec[Any]: ...

    def words(self) -> list[str]: ...

    def parse_words(self, tokens: list[str]) -> Command: ...

    def render(self, cmd: Command) -> str: ...


@dataclass(frozen=True)
class Said:
    """A command's words as a parser gets them: the verb (lower-cased), the arguments and the grammar."""

    verb: str
    args: list[str]
    grammar: Grammar


@dataclass(frozen=True)
class CommandSpec(Generic[C]):
    """Everything about one command. Build it with `command`."""

    cls: type[C]
    words: tuple[str, ...]  # the first is its name
    usage: str
    examples: tuple[str, ...]
    parse: Callable[[Said], C]
    render: Callable[[C], str]  # canonical text: parse(render(cmd)) == cmd
    role: Role
    confirm: str | None  # the name `Policy.confirm` lists it under when its job must be confirmed
    schedulable: bool
    handler: Callable[[HandlerContext, ChatMessage, C], Awaitable[Reply]]

    @property
    def name(self) -> str:
        return self.words[0]

    @property
    def doc(self) -> str:
        """The help text: the handler's docstring."""
        return " ".join((self.handler.__doc__ or "").split())

    @property
    def summary(self) -> str:
        """The help line: the first sentence-line of the handler's docstring."""
        doc = (self.handler.__doc__ or "").strip()
        return doc.splitlines()[0].strip() if doc else ""


def command(cls: type[C], *, words: tuple[str, ...], usage: str, examples: tuple[str, ...],
            parse: Callable[[Said], C], render: Callable[[C], str], role: Role, confirm: str | None = None,
            schedulable: bool = False) -> Callable[[Callable[[HandlerContext, ChatMessage, C], Awaitable[Reply]]],
                                                   CommandSpec[C]]:
    """Declare a command on its handler; the decorated name becomes the command's `CommandSpec`."""

    def declare(handler: Callable[[HandlerContext, ChatMessage, C], Awaitable[Reply]]) -> CommandSpec[C]:
        return CommandSpec(cls=cls, words=words, usage=usage, examples=examples, parse=parse, render=render,
                           role=role, confirm=confirm, schedulable=schedulable, handler=handler)

    return declare
