"""`pitcrew bench` end to end: JSON output against the truth server, one-line errors with exit 2."""

from __future__ import annotations

import asyncio
import re
import sys
from pathlib import Path

import orjson

PITCREW = str(Path(sys.executable).with_name("pitcrew"))


async def _pitcrew(*args: str) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(PITCREW, "bench", *args, stdout=asyncio.subprocess.PIPE,
                                                stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), 30)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


async def test_bench_json_against_truth_server(truth) -> None:
    srv = await truth("--rate", "200", "--ttft", "0.02", "--tokens-per-chunk", "2")
    code, out, _ = await _pitcrew("--url", srv.url, "--concurrency", "1,2", "--requests", "3",
                                  "--warmup", "1", "--output-len", "41", "--input-len", "8", "--json",
                                  "--metrics", "sglang")
    assert code == 0
    doc = orjson.loads(out)
    assert doc["model"] == "truth" and [lv["concurrency"] for lv in doc["levels"]] == [1, 2]
    lv = doc["levels"][0]
    assert lv["output_tokens"] == 123 and lv["failed"] == 0 and lv["server"]["accept_len"] == 2.0
    # the median request's rate, over a 200 ms decode: with 21 tokens (100 ms) and the mean, one stall of the
    # benchmark process beside the serial phase's sweeps read 184.6 for 200 (session 11, a fresh-clone run)
    assert abs(lv["decode_tok_s_per_request"]["p50"] - 200.0) / 200.0 < 0.03


async def test_bench_table(truth) -> None:
    srv = await truth("--rate", "400", "--ttft", "0.01", "--usage", "off")
    code, out, _ = await _pitcrew("--url", srv.url, "--concurrency", "1", "--requests", "2",
                                  "--output-len", "10", "--input-len", "8")
    assert code == 0
    assert "N/SSE events" in out and "chunk-counted (lower bound)" in out
    legend = " ".join(out.split())  # rich wraps long lines
    assert "steady tok/s: output tokens per second while all C slots had a request in flight" in legend
    assert re.search(r"C=1: \d+\.\d\d s of the \d+\.\d\d s window, \+0\.00 to \+\d+\.\d\d s", legend), legend
    assert "not the accept length" in out


async def test_bench_bad_input_is_one_line_exit_2() -> None:
    for args in (["--url", "nope"], ["--url", "http://127.0.0.1:9", "--concurrency", "1,x"],
                 ["--url", "http://127.0.0.1:9", "--requests", "3", "--duration", "2"],
                 ["--url", "http://127.0.0.1:9", "--prompts", "/nonexistent.jsonl"]):
        code, _out, err = await _pitcrew(*args)
        assert code == 2, (args, err)
        assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
        assert err.startswith("pitcrew bench: ")
