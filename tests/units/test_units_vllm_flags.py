"""vLLM's flag schema and the engine-neutral vocabulary: one chat word, each engine's own flag."""

from __future__ import annotations

import json

import pytest
from units_testkit import SGLANG_ARGV, SGLANG_UNIT, VLLM_UNIT, unit_with

from services.engines import apply_changes, format_change, get_flag
from services.engines.vllm.flags import SWITCHES
from services.errors import UnitError, UserInputError
from services.units import read_exec_start, rewrite_exec_start

VLLM_ARGV = read_exec_start(VLLM_UNIT).argv
SPEC_JSON = '{"method": "eagle3", "model": "/models/Qwen3-32B-eagle3", "num_speculative_tokens": 3}'


def _changed_lines(old: str, new: str) -> list[str]:
    return [f"-{a}" for a, b in zip(old.splitlines(), new.splitlines(), strict=True) if a != b] + [
        f"+{b}" for a, b in zip(old.splitlines(), new.splitlines(), strict=True) if a != b]


def test_spec_tokens_change_only_the_value_inside_the_speculative_config() -> None:
    plan = apply_changes(VLLM_ARGV, {"spec-tokens": "5"})
    assert [format_change(c) for c in plan.diff] == ["--speculative-config num_speculative_tokens 3 -> 5"]
    new_json = get_flag(plan.new_argv, "--speculative-config")
    assert new_json == SPEC_JSON.replace('"num_speculative_tokens": 3', '"num_speculative_tokens": 5')
    assert list(json.loads(new_json or "")) == ["method", "model", "num_speculative_tokens"]  # order kept
    new_unit = rewrite_exec_start(VLLM_UNIT, plan.new_argv)
    # the unit file: one line changes, and on it only the digit (the single quotes stay)
    assert _changed_lines(VLLM_UNIT, new_unit) == [
        f"-    --speculative-config '{SPEC_JSON}' \\",
        f"+    --speculative-config '{SPEC_JSON[:-2]}5}}' \\"]
    assert read_exec_start(new_unit).argv == plan.new_argv


@pytest.mark.parametrize("word", ["steps", "--speculative-num-steps", "spec-tokens", "--num-speculative-tokens"])
def test_every_name_of_the_steps_knob_means_spec_tokens_on_vllm(word: str) -> None:
    plan = apply_changes(VLLM_ARGV, {word: "4"})
    assert [(c.flag, c.key, c.old, c.new) for c in plan.diff] == [
        ("--speculative-config", "num_speculative_tokens", "3", "4")]


def test_the_same_words_mean_each_engines_own_flag() -> None:
    words = {"mem": "0.85", "context": "16384", "max-running": "64", "chunked-prefill": "4096", "tp": "8"}
    vllm = apply_changes(VLLM_ARGV, words)
    assert {c.flag: (c.old, c.new) for c in vllm.diff} == {
        "--gpu-memory-utilization": ("0.90", "0.85"), "--max-model-len": ("32768", "16384"),
        "--max-num-seqs": (None, "64"), "--max-num-batched-tokens": (None, "4096"),
        "--tensor-parallel-size": ("2", "8")}
    sglang = apply_changes(SGLANG_ARGV, words)
    assert {c.flag for c in sglang.diff} == {"--mem-fraction-static", "--context-length",
                                             "--max-running-requests", "--chunked-prefill-size", "--tp-size"}
    # a knob named by the other engine's flag is the same knob
    assert [c.flag for c in apply_changes(SGLANG_ARGV, {"--gpu-memory-utilization": "0.8"}).diff] == [
        "--mem-fraction-static"]
    assert [c.flag for c in apply_changes(VLLM_ARGV, {"--mem-fraction-static": "0.8"}).diff] == [
        "--gpu-memory-utilization"]


def test_a_flag_the_units_engine_lacks_is_refused_with_the_reason() -> None:
    with pytest.raises(UserInputError, match="runs vLLM, which has no --speculative-eagle-topk"):
        apply_changes(VLLM_ARGV, {"topk": "2"})
    with pytest.raises(UserInputError, match="runs SGLang, which has no --enforce-eager"):
        apply_changes(SGLANG_ARGV, {"--enforce-eager": "true"})
    with pytest.raises(UserInputError, match="Did you mean"):
        apply_changes(VLLM_ARGV, {"gpu-memroy": "0.8"})


def test_values_are_checked_against_vllms_bounds() -> None:
    assert [c.new for c in apply_changes(VLLM_ARGV, {"gpu-memory-utilization": "1.0"}).diff] == ["1.0"]  # le=1
    with pytest.raises(UserInputError, match="above 0"):
        apply_changes(VLLM_ARGV, {"gpu-memory-utilization": "0"})
    with pytest.raises(UserInputError, match="one of 1, 8, 16"):
        apply_changes(VLLM_ARGV, {"block-size": "12"})
    with pytest.raises(UserInputError):
        apply_changes(VLLM_ARGV, {"chunked-prefill": "-1"})  # SGLang's "off" has no vLLM meaning


def test_spec_tokens_on_a_unit_without_speculative_decoding_are_refused() -> None:
    argv = read_exec_start(unit_with("/opt/vllm/bin/vllm serve /m --port 8000")).argv
    with pytest.raises(UserInputError, match="no --speculative-config"):
        apply_changes(argv, {"spec-tokens": "3"})


def test_the_older_flag_is_changed_where_the_unit_still_uses_it() -> None:
    argv = read_exec_start(unit_with("/usr/bin/python3 -m vllm.entrypoints.openai.api_server --model /m "
                                     "--speculative-model /d --num-speculative-tokens 3")).argv
    plan = apply_changes(argv, {"steps": "6"})
    assert [format_change(c) for c in plan.diff] == ["--num-speculative-tokens 3 -> 6"]


def test_a_speculative_config_without_the_key_gets_it_appended_inside() -> None:
    argv = ("/opt/vllm/bin/vllm", "serve", "/m", "--speculative-config", '{"method": "ngram", '
            '"prompt_lookup_max": 4}')
    plan = apply_changes(argv, {"spec-tokens": "5"})
    assert plan.new_argv[-1] == '{"method": "ngram", "prompt_lookup_max": 4, "num_speculative_tokens": 5}'
    eq = ("/opt/vllm/bin/vllm", "serve", "/m", '--speculative-config={"num_speculative_tokens":2}')
    assert apply_changes(eq, {"spec-tokens": "3"}).new_argv[-1] == '--speculative-config={"num_speculative_tokens":3}'
    for bad in ('{"num_speculative_tokens": "3"}', "[1]", "{oops"):
        with pytest.raises(UnitError):
            apply_changes(("/opt/vllm/bin/vllm", "serve", "/m", "--speculative-config", bad), {"spec-tokens": "4"})


def test_switches_use_vllms_no_form_when_on_by_default() -> None:
    off = apply_changes(VLLM_ARGV, {"prefix-caching": "false"})
    assert [format_change(c) for c in off.diff] == ["--no-enable-prefix-caching (unset) -> true"]
    assert "--no-enable-prefix-caching" in off.new_argv
    on_again = apply_changes(off.new_argv, {"prefix-caching": "true"})
    assert on_again.new_argv == VLLM_ARGV
    eager = apply_changes(VLLM_ARGV, {"eager": "true"})
    assert eager.new_argv[-1] == "--enforce-eager" and "--enforce-eager" in SWITCHES
    assert apply_changes(eager.new_argv, {"eager": "off"}).new_argv == VLLM_ARGV


def test_sglang_units_plan_exactly_as_before() -> None:
    plan = apply_changes(SGLANG_ARGV, {"steps": "10"})
    assert [format_change(c) for c in plan.diff] == [
        "--speculative-num-steps 3 -> 10",
        "--speculative-num-draft-tokens 4 -> 11 (derived: with topk 1 SGLang uses steps + 1 draft tokens)"]
    assert "--speculative-num-steps 10" in rewrite_exec_start(SGLANG_UNIT, plan.new_argv)
