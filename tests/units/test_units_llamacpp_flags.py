"""llama.cpp's flag schema: the neutral words on a `llama-server` unit, the draft length of its own --spec-type,
its one-dash short spellings, and the words that mean nothing there."""

from __future__ import annotations

import pytest

from services.engines import apply_changes, detect_engine, engine_for, format_change
from services.engines.llamacpp.flags import read_values
from services.errors import UserInputError
from services.units import config_label, read_exec_start, rewrite_exec_start

UNIT = """[Unit]
Description=llama.cpp server

[Service]
ExecStart=/opt/llama.cpp/bin/llama-server -m /models/SmolLM2-135M-Instruct.Q4_1.gguf \\
    --host 127.0.0.1 --port 8080 -t 1 -np 2 --ctx-size 4096 \\
    --spec-type ngram-simple --spec-ngram-simple-size-n 2 --spec-ngram-simple-size-m 4 \\
    --metrics --no-webui
MemoryMax=1G
Restart=always
"""
ARGV = read_exec_start(UNIT).argv


def _diff(plan: object) -> list[str]:
    return [format_change(c) for c in plan.diff]  # type: ignore[attr-defined]


def test_detected_as_llamacpp_also_behind_a_wrapper() -> None:
    assert detect_engine(ARGV) == "llamacpp"
    assert detect_engine(("/usr/bin/env", "LLAMA_ARG_X=1", *ARGV)) == "llamacpp"
    assert engine_for(ARGV).model_of(ARGV) == "/models/SmolLM2-135M-Instruct.Q4_1.gguf"


@pytest.mark.parametrize("word", ["steps", "spec-tokens", "--speculative-num-draft-tokens", "--num-speculative-tokens",
                                  "--spec-draft-n-max"])
def test_every_draft_word_is_the_draft_length_of_the_units_spec_type(word: str) -> None:
    plan = apply_changes(ARGV, {word: "2"})
    assert _diff(plan) == ["--spec-ngram-simple-size-m 4 -> 2"]
    assert plan.notes == ("draft tokens on this llama.cpp unit: --spec-ngram-simple-size-m (the draft length of "
                          "--spec-type ngram-simple).",)
    new_unit = rewrite_exec_start(UNIT, plan.new_argv)
    assert "--spec-ngram-simple-size-m 2 \\" in new_unit and read_exec_start(new_unit).argv == plan.new_argv


@pytest.mark.parametrize(("spec", "flag"), [("draft-simple", "--spec-draft-n-max"),
                                            ("ngram-mod", "--spec-ngram-mod-n-max"),
                                            ("ngram-map-k", "--spec-ngram-map-k-size-m")])
def test_draft_length_follows_the_spec_type(spec: str, flag: str) -> None:
    argv = ("/x/llama-server", "-m", "/m.gguf", "--spec-type", spec)
    plan = apply_changes(argv, {"draft-tokens": "5"})
    assert _diff(plan) == [f"{flag} (unset) -> 5"]
    assert plan.new_argv[-2:] == (flag, "5")


def test_no_spec_type_no_draft_length() -> None:
    with pytest.raises(UserInputError, match="does no speculative decoding"):
        apply_changes(("/x/llama-server", "-m", "/m.gguf"), {"draft-tokens": "3"})
    with pytest.raises(UserInputError, match="fixed length"):
        apply_changes(("/x/llama-server", "-m", "/m.gguf", "--spec-type", "ngram-cache"), {"steps": "3"})


def test_neutral_words_map_to_llamacpp_flags_and_short_spellings_change_in_place() -> None:
    plan = apply_changes(ARGV, {"context": "8192", "max-running": "4", "chunked-prefill": "256"})
    assert _diff(plan) == ["--ctx-size 4096 -> 8192", "--parallel 2 -> 4", "--batch-size (unset) -> 256"]
    assert "-np" in plan.new_argv and plan.new_argv[plan.new_argv.index("-np") + 1] == "4"
    assert "--parallel" not in plan.new_argv  # not a second spelling of the same option
    assert plan.notes == ("llama.cpp will use a physical batch (--ubatch-size) of 256: it cannot exceed the logical "
                          "batch.",)


def test_a_logical_batch_below_the_physical_one_takes_it_down() -> None:
    argv = (*ARGV, "-ub", "512")
    plan = apply_changes(argv, {"chunked-prefill": "128"})
    assert _diff(plan) == ["--batch-size (unset) -> 128",
                           "--ubatch-size 512 -> 128 (derived: llama.cpp's physical batch cannot exceed the "
                           "logical batch)"]


@pytest.mark.parametrize(("word", "said"), [("mem", "'mem' has no meaning on llama.cpp"),
                                            ("--mem-fraction-static", "'mem' has no meaning on llama.cpp"),
                                            ("tp", "'tp' has no meaning on llama.cpp"),
                                            ("--speculative-eagle-topk", "that is SGLang's flag")])
def test_words_without_meaning_here_are_refused_with_the_reason(word: str, said: str) -> None:
    with pytest.raises(UserInputError, match=said):
        apply_changes(ARGV, {word: "1"})


def test_labels_name_the_draft_length_as_draft_tokens() -> None:
    assert read_values(ARGV)["--spec-draft-n-max"] == "4"
    plan = apply_changes(ARGV, {"steps": "6", "context": "8192"})
    assert config_label(plan.new_argv, ARGV) == "draft tokens 6 · context 8k"
    assert config_label(ARGV, ARGV) == "draft tokens 4"


def test_forecast_knobs_read_the_draft_length() -> None:
    knobs = engine_for(ARGV).forecast_knobs(ARGV, "")
    assert (knobs.draft_tokens, knobs.context_length, knobs.explicit_max_running, knobs.label) == (
        5, 4096, 2, "draft tokens 4")


def test_one_dash_spellings_are_no_chat_words() -> None:
    """`-fa`, `-c`, `-np` are read in a unit, but `a`, `c`, `np` stay a host's name, the concurrency, a typo."""
    from handlers.grammar import parse
    from services.engines import lookup_flag

    assert [lookup_flag(w) for w in ("a", "c", "p", "np", "b", "t")] == [None] * 6
    assert parse("sweep steps 1..2 on a").host == "a"  # type: ignore[attr-defined]


def test_draft_tokens_is_a_word_on_every_engine() -> None:
    from units_testkit import SGLANG_ARGV, VLLM_UNIT

    # SGLang: its own --speculative-num-draft-tokens, with its topk-1 coupling (draft = steps + 1) kept
    with pytest.raises(UserInputError, match=r"SGLang always uses steps \+ 1 = 4 draft tokens"):
        apply_changes(SGLANG_ARGV, {"draft-tokens": "6"})
    vllm = apply_changes(read_exec_start(VLLM_UNIT).argv, {"draft-tokens": "6"})
    assert [(c.flag, c.key, c.new) for c in vllm.diff] == [("--speculative-config", "num_speculative_tokens", "6")]
    llama = apply_changes(ARGV, {"draft-tokens": "6"})
    assert [(c.flag, c.new) for c in llama.diff] == [("--spec-ngram-simple-size-m", "6")]
