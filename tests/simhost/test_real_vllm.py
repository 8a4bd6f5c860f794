"""pitcrew's vLLM path against real vLLM 0.32 and 0.11 (the CPU builds `make vllm` installs) serving a real small model.

One module-scoped host per version (`SimHost(engine="vllm", real_engine=True)`, the sim's supervisor, eager mode)
for every test here; the GPU stays simulated. Skipped, with the reason, where `make vllm` has not built a version.
What they check, over SSH as the bot does: the engine and its version from the real journal, the capacity and ready
lines, the flag table read from the unit's own `vllm serve --help=all` (an unknown flag refused in vLLM's own words,
nothing on the host changed), and (0.32) the speculative-decoding counters of the real `/metrics` as an accept rate.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
import pytest_asyncio

from services.bench.probes import parse_prometheus
from services.engines import engine_named, engine_version, plain_launch
from services.experiments.preflight import FAIL, OK, EngineFlagCache, check_flags
from services.hosts.contract import HostSpec
from services.hosts.ssh import SshHost
from services.journal import parse_entry
from services.units import read_exec_start
from simhost.host import SimHost
from simhost.journal import to_json_line
from simhost.realvllm import DEFAULT_VERSION, unavailable

# the unit's own `vllm serve --help=all` takes 18-65 s here (host.run allows it 300 s): the default 120 s is too short
# one xdist worker per version, each starting its one server: tests/support/xdist_groups.py
pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]
VLLM = engine_named("vllm")
READY_S = 900.0  # 20-60 s on an idle 2-core machine; minutes while other work shares it


# module scope: the host (and its vLLM, whose idle worker process kept burning ~2 CPU-s a minute) is stopped as soon
# as this file's tests for the version are done, not when the worker's session ends minutes later
@pytest_asyncio.fixture(scope="module", loop_scope="session", params=["0.32", "0.11"])
async def real(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[SimHost]:
    version = str(request.param)
    if (why := unavailable(version)) is not None:
        pytest.skip(f"real vLLM: {why}")
    async with SimHost(tmp_path_factory.mktemp(f"real-vllm-{version}") / "sim", engine="vllm", real_engine=True,
                       vllm_version=version) as sim:
        await sim.wait_ready(READY_S)
        yield sim


def _spec(sim: SimHost) -> HostSpec:
    i = sim.info
    return HostSpec(i["name"], i["ssh_host"], int(i["ssh_port"]), i["user"], Path(i["client_key"]),
                    Path(i["known_hosts"]), i["unit"], i["unit_dir"], i["server_url"])


async def _messages(sim: SimHost) -> list[str]:
    out = []
    for e in await sim.journal_entries():
        entry = parse_entry(to_json_line(e))
        out.append(entry.message if entry is not None else "")
    return out


@pytest.mark.asyncio(loop_scope="session")
async def test_the_real_start_is_read_as_its_version_on_cpu(real: SimHost) -> None:
    lines = await _messages(real)
    assert {v for ln in lines if (v := engine_version(ln))} == {("vllm", f"{real.vllm_version}.0")}
    reader = VLLM.capacity_reader()
    assert [ln for ln in lines if reader.feed(ln)], "no capacity line"
    c = reader.capacity
    assert c is not None and c.device == "cpu" and c.context_len == 2048 and c.max_total_num_tokens > 2048
    assert c.max_concurrency == pytest.approx(c.max_total_num_tokens / 2048, abs=0.01)
    assert any(VLLM.is_ready_line(ln) for ln in lines)
    assert real.info["real_engine"] == {"engine": "vllm", "version": real.vllm_version, "device": "cpu",
                                        "model": "SmolLM2-135M-Instruct"}


@pytest.mark.asyncio(loop_scope="session")
async def test_flags_are_checked_by_the_units_own_vllm_and_a_typo_changes_nothing(real: SimHost) -> None:
    host = SshHost(_spec(real))
    try:
        unit_before, pid_before = real.unit_path.read_text(), await real.main_pid()
        argv = read_exec_start(unit_before).argv
        cache = EngineFlagCache()
        good = await check_flags(cache, host, argv)
        v = f"{real.vllm_version}.0+cpu"
        assert good[0].status == OK and f"vllm {v}'s parser accepts the command line" in good[0].text, good
        bad = await check_flags(cache, host, (*argv, "--max-num-seqz", "8"))
        assert [c.text for c in bad if c.status == FAIL] == [
            f"vllm {v} refuses the command line: `vllm: error: unrecognized arguments: --max-num-seqz 8`"]
        assert cache.reads == 1
        found = plain_launch(argv)
        assert found is not None
        if real.vllm_version == DEFAULT_VERSION:
            # vLLM itself agrees (the command up to the model, then the typo); once, on the default version: a
            # whole vLLM import (~11 CPU-s here), and both versions' refusals are argparse's same line
            res = await host.run([*argv[:found[2] + 1], "--max-num-seqz", "8"], timeout=300)
            assert res.exit_status == 2 and res.stderr.strip().splitlines()[-1] == (
                "vllm: error: unrecognized arguments: --max-num-seqz 8")
        assert real.unit_path.read_text() == unit_before and await real.main_pid() == pid_before
    finally:
        await host.close()


@pytest.mark.asyncio(loop_scope="session")
async def test_ngram_speculation_counters_give_an_accept_rate(real: SimHost) -> None:
    if real.vllm_version == "0.11":
        pytest.skip("vLLM 0.11 on CPU refuses speculative decoding (`AssertionError: spec decode is not supported.`)")
    text = "The quick brown fox jumps over the lazy dog. " * 6
    body = {"model": str(real.root / "models" / "SmolLM2-135M-Instruct"), "max_tokens": 48, "temperature": 0,
            "messages": [{"role": "user", "content": f"Repeat this text exactly: {text}"}]}
    async with httpx.AsyncClient(base_url=real.server_url, timeout=300) as client:
        before = parse_prometheus((await client.get("/metrics")).text)
        t0 = time.monotonic()
        r = await client.post("/v1/chat/completions", json=body)
        assert r.status_code == 200, r.text
        await asyncio.sleep(0.5)
        after = parse_prometheus((await client.get("/metrics")).text)
    figures = VLLM.window_figures(before, after, time.monotonic() - t0)
    assert figures.gen_throughput is not None and figures.gen_throughput > 0
    assert figures.accept_rate is not None and 0 < figures.accept_rate <= 1, figures
    assert figures.accept_len is not None and figures.accept_len > 1
