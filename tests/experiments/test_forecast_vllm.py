"""Experiments helpers on a vLLM unit: the capacity forecast reads vLLM's flags; a refused value is checked under
vLLM's own flag name."""

from __future__ import annotations

from pathlib import Path

from services.experiments.forecast import config_point
from services.experiments.plans import with_flags
from services.units import read_exec_start
from simhost.scenarios import vllm_unit_text


def test_a_vllm_unit_gives_its_draft_tokens_memory_and_context() -> None:
    argv = read_exec_start(vllm_unit_text(4, Path("/models/m"), 8000)).argv
    p = config_point(argv, {"max_total_num_tokens": 195554}, label="")
    assert (p.draft_tokens, p.mem_fraction, p.context_length, p.tokens, p.label) == (
        5, 0.9, 32768, 195554, "spec tokens 4")
    plain = read_exec_start("[Service]\nExecStart=/opt/vllm/bin/vllm serve /m --max-num-seqs 64\n").argv
    q = config_point(plain)
    assert (q.draft_tokens, q.explicit_max_running, q.label) == (1, 64, "no speculation")


def test_a_refused_value_is_shown_to_the_engines_parser_under_its_own_flag() -> None:
    argv = read_exec_start(vllm_unit_text(4, Path("/models/m"), 8000)).argv
    out = with_flags(argv, {"--mem-fraction-static": "0.95x"})
    assert "--mem-fraction-static" not in out and out[out.index("--gpu-memory-utilization") + 1] == "0.95x"
