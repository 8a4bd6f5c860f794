"""Help is built from the command registry and the flag schema: every command and flag is in it."""

from __future__ import annotations

import pytest

from handlers.grammar import parse
from handlers.help import help_text
from handlers.registry import COMMANDS
from handlers.spec import CommandSpec
from services.engines.sglang.flags import FLAGS
from services.errors import UserInputError


def test_every_command_has_a_docstring_usage_and_examples_that_parse() -> None:
    for info in COMMANDS:
        assert info.summary, info.cls
        assert info.usage.split()[0] == info.name
        assert info.examples
        for example in info.examples:
            assert type(parse(example)) is info.cls, example


def test_overview_lists_every_command_and_flag() -> None:
    text = help_text(None)
    for info in COMMANDS:
        assert f"{info.usage} - {info.summary}" in text
    for f in FLAGS:
        assert f.short in text


@pytest.mark.parametrize("info", COMMANDS, ids=[i.name for i in COMMANDS])
def test_help_for_each_command_comes_from_its_declaration(info: object) -> None:
    assert isinstance(info, CommandSpec)
    for word in info.words:
        text = help_text(word)
        assert text.startswith(info.usage)
        assert info.summary in text
    topic = parse(f"help {info.words[0]}")
    assert help_text(topic.topic) == help_text(info.name)  # type: ignore[attr-defined]


def test_flag_help_and_flag_list() -> None:
    text = help_text("flags")
    for f in FLAGS:
        assert f.name in text and f.help in text
    assert "steps + 1" in text
    steps = help_text("steps")
    assert "--speculative-num-steps" in steps and "from 1 to 16" in steps
    assert help_text(parse("help mem").topic) == help_text("mem")  # type: ignore[attr-defined]


def test_unknown_help_topic_is_a_user_error() -> None:
    with pytest.raises(UserInputError, match="no help on"):
        help_text("nonsense")
