"""Config labels: a configuration named by its diff against the host's baseline, in its engine's words."""

from __future__ import annotations

from units_testkit import SGLANG_ARGV, SGLANG_UNIT, VLLM_UNIT, unit_with

from services.engines import apply_changes
from services.store import Database
from services.units import Revisions, changes_label, config_label, read_exec_start

VLLM_ARGV = read_exec_start(VLLM_UNIT).argv


def _after(argv: tuple[str, ...], **changes: str) -> tuple[str, ...]:
    return apply_changes(argv, {k.replace("_", "-"): v for k, v in changes.items()}).new_argv


def test_sglang_labels_name_the_steps_and_what_differs_from_the_baseline() -> None:
    assert config_label(SGLANG_ARGV) == "steps 3"
    assert config_label(SGLANG_ARGV, SGLANG_ARGV) == "steps 3"
    # the derived draft tokens (steps + 1) are not named: steps says it
    assert config_label(_after(SGLANG_ARGV, steps="4"), SGLANG_ARGV) == "steps 4"
    assert config_label(_after(SGLANG_ARGV, steps="4", mem="0.8"), SGLANG_ARGV) == "steps 4 · mem 0.8"
    assert config_label(_after(SGLANG_ARGV, context="32768"), SGLANG_ARGV) == "steps 3 · context 32k"
    assert config_label(_after(SGLANG_ARGV, no_cuda_graph="on"), SGLANG_ARGV) == "steps 3 · no-cuda-graph on"
    assert config_label(_after(SGLANG_ARGV, draft="6", topk="2"), SGLANG_ARGV) == "steps 3 · topk 2 · draft 6"


def test_vllm_labels_use_spec_tokens_and_the_same_knob_words() -> None:
    assert config_label(VLLM_ARGV) == "spec tokens 3"
    assert config_label(_after(VLLM_ARGV, spec_tokens="5"), VLLM_ARGV) == "spec tokens 5"
    assert config_label(_after(VLLM_ARGV, spec_tokens="5", mem="0.85"), VLLM_ARGV) == "spec tokens 5 · mem 0.85"
    assert config_label(_after(VLLM_ARGV, context="16384"), VLLM_ARGV) == "spec tokens 3 · context 16k"
    assert config_label(_after(VLLM_ARGV, max_running="48"), VLLM_ARGV) == "spec tokens 3 · max running 48"
    assert config_label(_after(VLLM_ARGV, prefix_caching="off"), VLLM_ARGV) == "spec tokens 3 · prefix-caching off"
    plain = read_exec_start(unit_with("/opt/vllm/bin/vllm serve /m --max-model-len 8192")).argv
    assert config_label(plain) == "current config"
    assert config_label(_after(plain, context="12000"), plain) == "context 12000"  # not a multiple of 1024


def test_a_baseline_of_another_engine_is_not_compared() -> None:
    assert config_label(VLLM_ARGV, SGLANG_ARGV) == "spec tokens 3"


def test_what_was_asked_reads_in_the_words_of_the_flag_named() -> None:
    assert changes_label({"--speculative-num-steps": "4"}) == "steps 4"
    assert changes_label({"--num-speculative-tokens": "5", "--mem-fraction-static": "0.90"}) == (
        "spec tokens 5 · mem 0.90")
    assert changes_label({"--max-model-len": "32768"}) == "context 32k"


async def test_the_baseline_is_the_first_revision_recorded(db: Database) -> None:
    revs = Revisions(db)
    assert await revs.baseline("gpu-1", "sglang.service") is None
    first = await revs.observe("gpu-1", "sglang.service", SGLANG_UNIT)
    await revs.observe("gpu-1", "sglang.service", SGLANG_UNIT.replace("--mem-fraction-static 0.88",
                                                                      "--mem-fraction-static 0.8"))
    base = await revs.baseline("gpu-1", "sglang.service")
    assert base is not None and base.id == first.id
