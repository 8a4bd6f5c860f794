"""The SGLang flag schema: names and aliases, value checks, and change plans with SGLang's coupling rules."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from units_testkit import SGLANG_ARGV

from services.engines import get_flag
from services.engines.sglang.flags import (
    FLAGS,
    SWITCHES,
    apply_changes,
    flag_help_lines,
    format_change,
    lookup_flag,
    parse_value,
    resolve_flag,
)
from services.errors import UnitError, UserInputError


@pytest.mark.parametrize(("word", "name"), [
    ("steps", "--speculative-num-steps"), ("STEPS", "--speculative-num-steps"),
    ("--speculative-num-steps", "--speculative-num-steps"), ("speculative_num_steps", "--speculative-num-steps"),
    ("topk", "--speculative-eagle-topk"), ("draft", "--speculative-num-draft-tokens"),
    ("mem", "--mem-fraction-static"), ("max-running", "--max-running-requests"),
    ("chunked-prefill", "--chunked-prefill-size"), ("cuda-graph-max-bs", "--cuda-graph-max-bs"),
    ("ctx", "--context-length"), ("tp", "--tp-size"), ("--tensor-parallel-size", "--tp-size"),
    ("algo", "--speculative-algorithm"), ("no-cuda-graph", "--disable-cuda-graph"),
    ("disable-cuda-graph", "--disable-cuda-graph"), ("max-total-tokens", "--max-total-tokens"),
])
def test_resolve_flag_knows_names_aliases_and_spellings(word: str, name: str) -> None:
    assert resolve_flag(word).name == name


def test_unknown_flag_gets_a_did_you_mean() -> None:
    with pytest.raises(UserInputError, match="Did you mean 'steps'") as err:
        resolve_flag("stpes")
    assert err.value.fields["suggestion"] == "steps"
    with pytest.raises(UserInputError, match="help flags"):
        resolve_flag("qqqqqqqq")
    assert lookup_flag("nope") is None


@pytest.mark.parametrize(("word", "text", "value"), [
    ("steps", "10", "10"), ("steps", "+7", "7"), ("steps", "007", "7"),
    ("mem", "0.85", "0.85"), ("mem", ".9", "0.9"), ("mem", "8.5e-1", "0.85"),
    ("algo", "eagle3", "EAGLE3"), ("algo", "nextn", "NEXTN"), ("no-cuda-graph", "on", "true"),
    ("no-cuda-graph", "OFF", "false"), ("chunked-prefill", "-1", "-1"), ("chunked-prefill", "8192", "8192"),
    ("draft-model", "/models/Qwen3.5-MTP", "/models/Qwen3.5-MTP"), ("kv-dtype", "FP8_E4M3", "fp8_e4m3"),
])
def test_parse_value_normalizes(word: str, text: str, value: str) -> None:
    assert parse_value(resolve_flag(word), text) == value


@pytest.mark.parametrize(("word", "text", "message"), [
    ("steps", "0", "from 1 to 16"), ("steps", "17", "from 1 to 16"), ("topk", "11", "from 1 to 10"),
    ("draft", "65", "from 1 to 64"), ("mem", "0", "between 0 and 1"), ("mem", "1", "between 0 and 1"),
    ("mem", "1.5", "between 0 and 1"), ("mem", "nan", "between 0 and 1"), ("mem", "inf", "between 0 and 1"),
    ("steps", "3.5", "whole number"), ("steps", "ten", "whole number"), ("chunked-prefill", "-2", "from 1"),
    ("algo", "EAGEL", "Did you mean EAGLE"), ("no-cuda-graph", "maybe", "on or off"),
    ("steps", "3;reboot", "no spaces, quotes or shell"), ("steps", "$(id)", "shell"), ("steps", "`id`", "shell"),
    ("draft-model", "/models/a b", "shell"), ("draft-model", "/m\n", "shell"), ("draft-model", "/m\x00", "shell"),
    ("draft-model", "a'b", "shell"), ("draft-model", "../../etc", "'..'"), ("draft-model", "--evil", "start"),
    ("steps", "", "empty"), ("draft-model", "x" * 300, "too long"),
])
def test_parse_value_refuses(word: str, text: str, message: str) -> None:
    with pytest.raises(UserInputError, match=message):
        parse_value(resolve_flag(word), text)


def test_every_flag_has_help_and_a_unique_short_name() -> None:
    shorts = [f.short for f in FLAGS]
    assert len(shorts) == len(set(shorts))
    assert all(f.help and f.name.startswith("--") for f in FLAGS)
    assert len(flag_help_lines()) == len(FLAGS)
    assert {s for f in FLAGS if f.kind == "bool" for s in f.all_spellings} == SWITCHES


def test_try_10_steps_derives_draft_tokens_when_the_unit_pins_them() -> None:
    plan = apply_changes(SGLANG_ARGV, {"steps": "10"})
    assert get_flag(plan.new_argv, "--speculative-num-steps") == "10"
    assert get_flag(plan.new_argv, "--speculative-num-draft-tokens") == "11"
    steps, draft = plan.diff
    assert (steps.flag, steps.old, steps.new, steps.derived) == ("--speculative-num-steps", "3", "10", False)
    assert (draft.flag, draft.old, draft.new, draft.derived) == ("--speculative-num-draft-tokens", "4", "11", True)
    assert "steps + 1" in draft.reason
    assert format_change(draft) == ("--speculative-num-draft-tokens 4 -> 11 "
                                    "(derived: with topk 1 SGLang uses steps + 1 draft tokens)")
    assert len(plan.new_argv) == len(SGLANG_ARGV)


def test_default_topk_counts_as_one() -> None:
    argv = tuple(w for w in SGLANG_ARGV if w not in ("--speculative-eagle-topk",))
    argv = argv[:argv.index("1")] + argv[argv.index("1") + 1:]
    plan = apply_changes(argv, {"steps": "5"})
    assert get_flag(plan.new_argv, "--speculative-num-draft-tokens") == "6"


def test_unpinned_draft_tokens_are_a_note_not_a_change() -> None:
    argv = SGLANG_ARGV[:13] + SGLANG_ARGV[15:]  # without --speculative-num-draft-tokens 4
    assert get_flag(argv, "--speculative-num-draft-tokens") is None
    plan = apply_changes(argv, {"steps": "10"})
    assert [c.flag for c in plan.diff] == ["--speculative-num-steps"]
    assert any("11 draft tokens" in n for n in plan.notes)


def test_topk_above_one_leaves_draft_tokens_alone_and_back_to_one_rederives() -> None:
    plan = apply_changes(SGLANG_ARGV, {"topk": "4", "steps": "6"})
    assert get_flag(plan.new_argv, "--speculative-num-draft-tokens") == "4"
    plan2 = apply_changes(plan.new_argv, {"topk": "1"})
    assert get_flag(plan2.new_argv, "--speculative-num-draft-tokens") == "7"


def test_explicit_draft_tokens_that_sglang_would_override_are_refused() -> None:
    with pytest.raises(UserInputError, match="steps \\+ 1 = 11"):
        apply_changes(SGLANG_ARGV, {"steps": "10", "draft": "8"})
    plan = apply_changes(SGLANG_ARGV, {"steps": "10", "draft": "11"})
    assert all(not c.derived for c in plan.diff)


def test_speculative_flags_without_an_algorithm_are_refused() -> None:
    argv = ("python3", "-m", "sglang.launch_server", "--model-path", "/m", "--mem-fraction-static", "0.8")
    with pytest.raises(UserInputError, match="no --speculative-algorithm"):
        apply_changes(argv, {"steps": "3"})
    plan = apply_changes(argv, {"algo": "EAGLE", "steps": "3"})
    assert plan.new_argv[-4:] == ("--speculative-algorithm", "EAGLE", "--speculative-num-steps", "3")
    assert any("48" in n for n in plan.notes)


def test_equals_form_spelling_and_switches_are_preserved() -> None:
    argv = ("python3", "-m", "sglang.launch_server", "--tensor-parallel-size", "4", "--mem-fraction-static=0.88",
            "--disable-cuda-graph", "--port", "30000")
    plan = apply_changes(argv, {"tp": "8", "mem": "0.8", "no-cuda-graph": "off", "metrics": "on"})
    assert plan.new_argv == ("python3", "-m", "sglang.launch_server", "--tensor-parallel-size", "8",
                             "--mem-fraction-static=0.8", "--port", "30000", "--enable-metrics")
    assert {c.flag: (c.old, c.new) for c in plan.diff} == {
        "--tp-size": ("4", "8"), "--mem-fraction-static": ("0.88", "0.8"),
        "--disable-cuda-graph": ("true", None), "--enable-metrics": (None, "true")}


def test_no_op_and_removal() -> None:
    assert not apply_changes(SGLANG_ARGV, {"steps": "3"}).changed
    plan = apply_changes(SGLANG_ARGV, {"mem": None})
    assert "--mem-fraction-static" not in plan.new_argv and plan.diff[0].new is None


def test_a_flag_set_twice_in_the_unit_is_refused() -> None:
    with pytest.raises(UnitError, match="twice"):
        apply_changes(("python3", "--tp-size", "4", "--tensor-parallel-size", "2"), {"tp": "8"})
    with pytest.raises(UserInputError, match="twice"):
        apply_changes(SGLANG_ARGV, {"steps": "3", "--speculative-num-steps": "4"})


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 16), st.integers(1, 10))
def test_coupling_invariant_holds_after_any_steps_topk_change(steps: int, topk: int) -> None:
    plan = apply_changes(SGLANG_ARGV, {"steps": str(steps), "topk": str(topk)})
    draft = get_flag(plan.new_argv, "--speculative-num-draft-tokens")
    if topk == 1:
        assert draft == str(steps + 1)
    else:
        assert draft == "4"


@settings(max_examples=300, deadline=None)
@given(st.sampled_from([f.short for f in FLAGS]), st.text(max_size=30))
def test_parse_value_raises_only_user_input_error(word: str, text: str) -> None:
    try:
        value = parse_value(resolve_flag(word), text)
    except UserInputError:
        return
    assert all((c.isalnum() and c.isascii()) or c in "._:/=+-" for c in value)
