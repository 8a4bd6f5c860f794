"""The simulated vLLM 0.11 host: its log formats and processes, memory model, streaming and failure modes."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import httpx
from simhost_kit import SCALE, journal, sh, wait_for

from services.engines import engine_named, engine_version
from services.engines.vllm import parse_vllm_spec
from services.journal import parse_entry
from simhost.host import SimHost
from simhost.journal import to_json_line
from simhost.sglang.model import speed
from simhost.vllm import model

UNIT = "vllm.service"


def texts(host: SimHost) -> list[str]:
    """Each entry's MESSAGE as pitcrew reads it from `journalctl -o json` (byte arrays decoded, ANSI stripped)."""
    out = []
    for e in journal(host, UNIT):
        entry = parse_entry(to_json_line(e))
        out.append(entry.message if entry is not None else "")
    return out


async def set_flags(host: SimHost, old: str, new: str) -> None:
    host.unit_path.write_text(host.unit_path.read_text().replace(old, new))
    assert host.supervisor is not None
    await host.supervisor.daemon_reload()
    await host.supervisor.restart()


async def stream(url: str, tokens: int) -> tuple[int, int]:
    body = {"model": "qwen3.5-122b-a10b", "prompt": "Explain speculative decoding.", "max_tokens": tokens,
            "ignore_eos": True, "stream": True, "stream_options": {"include_usage": True}}
    chunks, total = 0, 0
    async with httpx.AsyncClient(timeout=60) as client, client.stream("POST", f"{url}/v1/completions",
                                                                       json=body) as resp:
        async for line in resp.aiter_lines():
            if not line.startswith("data: {"):
                continue
            data = json.loads(line[6:])
            if data.get("usage"):
                total = data["usage"]["completion_tokens"]
            if data["choices"] and data["choices"][0]["text"]:
                chunks += 1
    return total, chunks


async def test_startup_lines_processes_and_capacity(tmp_path: Path) -> None:
    async with SimHost(tmp_path / "v", engine="vllm", ssh=False, time_scale=SCALE) as host:
        await host.wait_ready(30)
        entries = journal(host, UNIT)
        service = [e for e in entries if e.get("_PID") != "1"]
        # 0.11 colours every line: journald stores MESSAGE as a byte array
        rc, out, _ = await sh(host, f"journalctl -u {UNIT} -o json -n 5 --no-pager")
        assert rc == 0 and all(isinstance(json.loads(ln)["MESSAGE"], list) for ln in out.splitlines()
                               if json.loads(ln).get("_PID") != "1")
        comms = {e["_COMM"] for e in service}
        assert comms == {"vllm", "VLLM::EngineCor"}
        assert {e["SYSLOG_IDENTIFIER"] for e in service} == {"vllm"}
        assert len({e["_PID"] for e in service}) == 2
        lines = texts(host)
        assert lines[1].startswith("(APIServer pid=") and "vLLM API server version 0.11.0" in lines[1]
        assert any(ln.startswith("(EngineCore_DP0 pid=") for ln in lines)
        reader = engine_named("vllm").capacity_reader()
        for ln in lines:
            reader.feed(ln)
        tokens = model.kv_tokens(model.kv_cache_gib(0.9, 97887, 256, 3, True))
        cap = reader.capacity
        assert cap is not None and (cap.max_total_num_tokens, cap.context_len) == (tokens, 32768)
        assert cap.max_concurrency == round(tokens / 32768, 2)
        assert next(v for ln in lines if (v := engine_version(ln))) == ("vllm", "0.11.0")
        ready = [i for i, ln in enumerate(lines) if engine_named("vllm").is_ready_line(ln)]
        capacity_at = next(i for i, ln in enumerate(lines) if "GPU KV cache size" in ln)
        assert ready and ready[0] > capacity_at


async def test_sse_chunks_carry_several_tokens_and_metrics_give_the_accept_length(tmp_path: Path) -> None:
    async with SimHost(tmp_path / "v", engine="vllm", ssh=False, time_scale=SCALE) as host:
        await host.wait_ready(30)
        total, chunks = await stream(host.server_url, 120)
        accept_len, _ = speed(3)
        assert total == 120 and chunks < total / 2  # ~2.85 tokens per step
        async with httpx.AsyncClient() as client:
            metrics = (await client.get(f"{host.server_url}/metrics")).text
            version = (await client.get(f"{host.server_url}/version")).json()
        values = {ln.split("{")[0]: float(ln.split()[-1]) for ln in metrics.splitlines() if ln.startswith("vllm:")}
        drafts = values["vllm:spec_decode_num_drafts_total"]
        assert values["vllm:spec_decode_num_draft_tokens_total"] == 3 * drafts
        assert abs(1 + values["vllm:spec_decode_num_accepted_tokens_total"] / drafts - accept_len) < 0.3
        assert values["vllm:generation_tokens_total"] == 120 and version == {"version": "0.11.0"}
        # the 10 s stats lines (time-scaled) with the spec-decoding line vLLM writes after them
        await wait_for(lambda: any("SpecDecoding metrics" in ln for ln in texts(host)), within=10)
        spec = next(s for ln in texts(host) if (s := parse_vllm_spec(ln)) is not None)
        assert abs(spec.mean_accept_len - accept_len) < 0.3


async def test_a_max_model_len_the_kv_cache_cannot_hold_fails_the_engine_core_with_exit_1(tmp_path: Path) -> None:
    async with SimHost(tmp_path / "v", engine="vllm", ssh=False, time_scale=SCALE) as host:
        await host.wait_ready(30)
        await set_flags(host, "--max-model-len 32768", "--max-model-len 262144")
        await wait_for(lambda: any("Engine core initialization failed" in ln for ln in texts(host)), within=20)
        lines = texts(host)
        assert any("EngineCore failed to start." in ln for ln in lines)
        assert any("ValueError: To serve at least one request with the models's max seq len (262144)" in ln
                   for ln in lines)
        await wait_for(lambda: any("Main process exited, code=exited, status=1/FAILURE" in ln
                                   for ln in texts(host)), within=20)


async def test_cuda_oom_under_load_kills_the_engine_core_and_the_server_exits_0(tmp_path: Path) -> None:
    async with SimHost(tmp_path / "v", engine="vllm", ssh=False, time_scale=SCALE) as host:
        await host.wait_ready(30)
        await set_flags(host, '"num_speculative_tokens": 3', '"num_speculative_tokens": 10')
        await host.wait_ready(30)
        assert (await stream(host.server_url, 40))[0] == 40  # one request alone fits
        results = await asyncio.gather(*(stream(host.server_url, 400) for _ in range(4)), return_exceptions=True)
        assert any(isinstance(r, BaseException) or r[0] < 400 for r in results)
        await wait_for(lambda: any("Deactivated successfully" in ln for ln in texts(host)), within=20)
        lines = texts(host)
        assert any("EngineCore encountered a fatal error." in ln for ln in lines)
        assert any("torch.OutOfMemoryError: CUDA out of memory" in ln for ln in lines)
        assert any("EngineDeadError: EngineCore encountered an issue" in ln for ln in lines)
        assert not any("Main process exited, code=exited, status=1" in ln for ln in lines)  # exit 0, as vLLM's
        await wait_for(lambda: host.supervisor is not None and host.supervisor.properties()["NRestarts"] == "1",
                       within=20)


async def test_an_sglang_flag_is_refused_by_vllms_parser_with_exit_2(tmp_path: Path) -> None:
    async with SimHost(tmp_path / "v", engine="vllm", ssh=False, time_scale=SCALE) as host:
        await host.wait_ready(30)
        await set_flags(host, "--max-model-len 32768", "--max-model-len 32768 --speculative-num-steps 10")
        await wait_for(lambda: any("vllm: error: unrecognized arguments: --speculative-num-steps 10" in ln
                                   for ln in texts(host)), within=20)
        lines = texts(host)
        assert "usage: vllm [-h] [-v]" in lines
        await wait_for(lambda: any("status=2/INVALIDARGUMENT" in ln for ln in texts(host)), within=20)
