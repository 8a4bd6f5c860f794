"""pitcrew's vLLM knowledge against lines real vLLM 0.32 (CPU build) printed on this machine kind.

The files in tests/data/realvllm/ were captured from `make vllm`'s engine (see its README); these tests always run,
with no engine installed: detection, version, capacity and readiness from a real start (n-gram speculative decoding,
as the real-engine unit runs it), the flag table from the real `vllm serve --help=all`, the real parser's refusal of
an unknown flag word for word, and the real `/metrics` names pitcrew reads.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from services.bench.probes import parse_prometheus
from services.engines import engine_named, engine_of_line, plain_launch
from services.units import check_argv, parse_help

DATA = Path(__file__).resolve().parents[1] / "data" / "realvllm"
VLLM = engine_named("vllm")
START = (DATA / "vllm-0.32-ngram-start.log").read_text().splitlines()
UNIT_ARGV = shlex.split(
    "/root/.cache/pitcrew/engines/vllm-0.32/bin/vllm serve /tmp/sim/models/SmolLM2-135M-Instruct "
    "--speculative-config '{\"method\": \"ngram\", \"num_speculative_tokens\": 2, \"prompt_lookup_max\": 4, "
    "\"prompt_lookup_min\": 2}' --host 127.0.0.1 --port 8000 --max-model-len 2048 --dtype bfloat16 --enforce-eager")


def test_every_tagged_line_of_a_real_start_is_claimed_by_vllm() -> None:
    tagged = [ln for ln in START if ln.startswith("(")]
    assert {ln.split(" pid=")[0] for ln in tagged} == {"(APIServer", "(EngineCore", "(VllmWorker-0", "(Worker"}
    assert all(VLLM.claims_line(ln) for ln in tagged)
    assert all(engine_of_line(ln) is VLLM for ln in tagged)


def test_version_from_the_banner_and_the_engine_line() -> None:
    versions = [v for ln in START if (v := VLLM.version_of(ln))]
    assert versions and set(versions) == {"0.32.0"}, versions


def test_capacity_and_readiness_of_a_real_cpu_start() -> None:
    reader = VLLM.capacity_reader()
    done = [ln for ln in START if reader.feed(ln)]
    assert len(done) == 1 and "CPU KV cache size: 93,184 tokens" in done[0]
    c = reader.capacity
    assert c is not None
    assert (c.max_total_num_tokens, c.max_concurrency, c.concurrency_tokens, c.context_len, c.kv_cache_gib,
            c.device) == (93184, 45.5, 2048, 2048, 2.0, "cpu")
    assert VLLM.capacity_extras(c)["device"] == "cpu"
    ready = [ln for ln in START if VLLM.is_ready_line(ln)]
    assert ready == ["INFO:     Application startup complete."]
    assert START.index(ready[0]) > START.index(done[0])


def test_the_real_help_is_read_and_the_unit_passes_it() -> None:
    cli = parse_help((DATA / "vllm-0.32-serve-help-all.txt").read_text(), engine="vllm", version="0.32.0+cpu")
    assert cli.prog == "vllm" and cli.positionals == ("model_tag",) and len(cli.options) > 300
    found = plain_launch(UNIT_ARGV)
    assert found is not None and found[0] is VLLM
    assert check_argv(cli, UNIT_ARGV, found[2]) == ()
    assert cli.by_name["-sc"].name == "--speculative-config" and cli.by_name["--no-enforce-eager"].names[0] == (
        "--enforce-eager")


def test_an_unknown_flag_is_refused_in_the_real_parsers_words() -> None:
    cli = parse_help((DATA / "vllm-0.32-serve-help-all.txt").read_text(), engine="vllm", version="0.32.0+cpu")
    problems = check_argv(cli, [*UNIT_ARGV, "--max-num-seqz", "8"], 2)
    errors = [p for p in problems if p.severity == "error"]
    real = (DATA / "vllm-0.32-fail-bad_flag.log").read_text().strip().splitlines()[-1]
    assert real == "vllm: error: unrecognized arguments: --max-num-seqz 8"
    assert [f"{cli.prog}: error: {p.message}" for p in errors] == [real]
    assert any("did you mean --max-num-seqs?" in p.message for p in problems)


def test_the_real_metrics_carry_the_names_pitcrew_reads() -> None:
    snap = parse_prometheus((DATA / "vllm-0.32-metrics.txt").read_text())
    for name in ("vllm:generation_tokens_total", "vllm:num_requests_running", "vllm:kv_cache_usage_perc",
                 "vllm:prompt_tokens_total", "vllm:request_success_total"):
        assert name in snap, name
    figures = VLLM.window_figures(snap, snap, 10.0)
    assert figures.gen_throughput == 0.0 and figures.accept_rate is None  # no speculative counters without it


START_011 = (DATA / "vllm-0.11-start.log").read_text().splitlines()


def test_a_real_0_11_cpu_start_its_coloured_tags_two_capacity_lines_and_platform() -> None:
    lines = [re.sub(r"\x1b\[[0-9;]*m", "", ln) for ln in START_011]  # as `services.journal.entries` reads them
    assert any(ln.startswith("\x1b[1;36m(APIServer pid=") for ln in START_011)  # coloured without a TTY (b.0)
    assert {v for ln in lines if (v := VLLM.version_of(ln))} == {"0.11.0"}
    reader = VLLM.capacity_reader()
    done = [ln for ln in lines if reader.feed(ln)]
    assert len(done) == 1 and "GPU KV cache size: 93,184 tokens" in done[0]  # "GPU" on the CPU build too
    c = reader.capacity
    assert c is not None and (c.max_total_num_tokens, c.max_concurrency, c.context_len, c.device) == (
        93184, 45.5, 2048, "cpu")  # the device from `Automatically detected platform cpu.`
    assert any(VLLM.is_ready_line(ln) for ln in lines)


def test_the_real_0_11_help_is_read() -> None:
    cli = parse_help((DATA / "vllm-0.11-serve-help-all.txt").read_text(), engine="vllm", version="0.11.0+cpu")
    argv = [a for a in UNIT_ARGV if "ngram" not in a and a != "--speculative-config"]
    assert cli.prog == "vllm" and cli.positionals == ("model_tag",) and len(cli.options) > 150
    assert check_argv(cli, argv, 2) == ()


def test_the_device_a_real_start_names_and_the_memory_words_of_a_kv_cache_failure_on_the_cpu() -> None:
    from bot.cli_diagnose import diagnose_file  # the CLI's path: the corpus case is a journalctl export

    lines = [re.sub(r"\x1b\[[0-9;]*m", "", ln) for ln in START_011]
    assert {d for ln in lines if (d := VLLM.device_of(ln))} == {"cpu"}  # 0.11: platform + device_config
    assert {d for ln in START if (d := VLLM.device_of(ln))} == {"cpu"}  # 0.32: the engine's config line
    assert VLLM.device_of("Initializing a V1 LLM engine (v0.11.0) with config: device_config=cuda, seed=0") is None
    assert engine_named("sglang").device_of("device_config=cpu") is None
    # the real 0.32 CPU build refusing a 100,000-token context with a 1 GiB KV cache (the `captured` corpus case)
    journal = DATA.parents[0] / "incidents" / "cap_vllm_032_cpu_kv_cache_too_small" / "journal.jsonl"
    result, _ = diagnose_file(str(journal), None)
    assert result.cause == "kv_cache_oom"
    assert "GPU" not in result.summary and "runs on the CPU" in result.summary, result.summary
    assert "VLLM_CPU_KVCACHE_SPACE" in result.recommendation, result.recommendation
    assert "--gpu-memory-utilization" not in result.recommendation, result.recommendation
