"""The grammar reads both engines' words: knob words (also as two words), SGLang's and vLLM's own flags."""

from __future__ import annotations

import pytest

from handlers.commands import Command, Sweep, Try
from handlers.grammar import parse, render
from handlers.help import help_text
from services.engines.vllm.flags import FLAGS as VLLM_FLAGS
from services.errors import UserInputError

SPEC = "--num-speculative-tokens"
EXAMPLES: list[tuple[str, Command]] = [
    ("try 5 spec tokens", Try(((SPEC, "5"),))),
    ("try spec tokens 5", Try(((SPEC, "5"),))),
    ("try spec tokens=5 mem 0.9 on gpu-3", Try(((SPEC, "5"), ("--mem-fraction-static", "0.9")), host="gpu-3")),
    ("try max running 64", Try((("--max-running-requests", "64"),))),
    ("try chunked prefill 4096", Try((("--chunked-prefill-size", "4096"),))),
    ("try --gpu-memory-utilization 0.85", Try((("--gpu-memory-utilization", "0.85"),))),
    ("try --max-num-seqs=128 --max-model-len 16384", Try((("--max-num-seqs", "128"), ("--max-model-len", "16384")))),
    ("try prefix caching off", Try((("--enable-prefix-caching", "false"),))),
    ("try eager", Try((("--enforce-eager", "true"),))),
    ("sweep spec tokens 1..4", Sweep(SPEC, ("1", "2", "3", "4"))),
    ("sweep gpu-mem 0.8,0.9", Sweep("--gpu-memory-utilization", ("0.8", "0.9"))),
]


@pytest.mark.parametrize(("text", "expected"), EXAMPLES, ids=[t for t, _ in EXAMPLES])
def test_vllm_and_knob_words_parse_and_round_trip(text: str, expected: Command) -> None:
    got = parse(text)
    assert got == expected
    assert parse(render(got)) == got


def test_vllm_values_are_checked_when_typed() -> None:
    with pytest.raises(UserInputError, match="one of 1, 8, 16"):
        parse("try block-size 12")
    with pytest.raises(UserInputError, match="Did you mean"):
        parse("try gpu-memroy=0.8")  # (an unknown --long-flag is kept for the engine's own parser to judge)


def test_help_flags_lists_both_engines() -> None:
    text = help_text("flags")
    assert "SGLang:" in text and "vLLM:" in text
    for f in VLLM_FLAGS:
        assert f.name in text and f.help in text
    assert "mem = --mem-fraction-static / --gpu-memory-utilization" in text
    assert "Same knob: --speculative-num-steps on SGLang, --num-speculative-tokens on vLLM" in help_text(
        "spec-tokens")
