"""Engine detection from a unit's ExecStart= and the version line each engine logs at start."""

from __future__ import annotations

import pytest
from units_testkit import ONE_LINE_UNIT, SGLANG_UNIT, VLLM_UNIT, unit_with

from services.engines import detect_engine, engine_display, engine_named, engine_version
from services.units import read_exec_start, unit_engine

CASES = [
    ("/usr/bin/python3 -m sglang.launch_server --model-path /m", "sglang"),
    ("/opt/venv/bin/python -m sglang.launch_server --model-path /m --port 30000", "sglang"),
    ("/opt/vllm/bin/vllm serve /models/m --port 8000", "vllm"),
    ("vllm serve Qwen/Qwen3-8B", "vllm"),
    ("/usr/bin/python3 -m vllm.entrypoints.openai.api_server --model /m", "vllm"),
    ("/usr/bin/env VLLM_USE_V1=1 /opt/vllm/bin/vllm serve /m", "vllm"),
    ("/usr/bin/numactl --cpunodebind=0 /usr/bin/python3 -m sglang.launch_server --model-path /m", "sglang"),
    ("/opt/tgi/bin/text-generation-launcher --model-id /m", "unknown"),
    ("/opt/vllm/bin/vllm bench serve --model /m", "unknown"),  # vLLM's CLI, but not its server
    ("/usr/bin/python3 -m sglang_router.launch_router --worker-urls http://a", "unknown"),
]


@pytest.mark.parametrize(("exec_start", "engine"), CASES, ids=[c[0][:50] for c in CASES])
def test_the_engine_is_read_from_exec_start(exec_start: str, engine: str) -> None:
    assert detect_engine(read_exec_start(unit_with(exec_start)).argv) == engine


def test_real_looking_units() -> None:
    assert unit_engine(SGLANG_UNIT) == "sglang"
    assert unit_engine(ONE_LINE_UNIT) == "sglang"
    assert unit_engine(VLLM_UNIT) == "vllm"
    assert unit_engine("[Service]\nType=simple\n") == "unknown"  # no ExecStart=: not an error here
    assert [engine_display(e) for e in ("sglang", "vllm", "unknown")] == ["SGLang", "vLLM", "unknown"]


def test_the_version_a_running_server_names_on_its_engines_path() -> None:
    sglang, vllm, llama = (engine_named(e) for e in ("sglang", "vllm", "llamacpp"))
    assert (sglang.version_path, vllm.version_path, llama.version_path) == ("/get_server_info", "/version", "/props")
    assert sglang.served_version({"tp_size": 1, "version": "0.5.9"}) == "0.5.9"
    assert vllm.served_version({"version": "0.11.0"}) == "0.11.0"
    assert vllm.served_version({"version": "0.12.0+cu128"}) == "0.12.0+cu128"
    assert llama.served_version({"total_slots": 2, "build_info": "b1-0c1e57098"}) == "b1 (0c1e57098)"
    assert llama.served_version({"build_info": "b7013-unknown"}) == "b7013 (unknown)"
    # what is not a version is not shown in chat
    for doc in ({"version": "<@U123> hi"}, {"version": 11}, {}, [], None, {"version": "0.11.0\n*bold*"}):
        assert sglang.served_version(doc) is None and vllm.served_version(doc) is None
    for doc in ({"build_info": "b1-0c1e57098 <!here>"}, {"build_info": None}, {"version": "0.11.0"}, None):
        assert llama.served_version(doc) is None


def test_version_lines_of_vllm() -> None:
    # 0.11.0 api_server.py:1839, the engine-core config line, and 0.33's logo line (FORMATS.md b.0, b.3)
    assert engine_version("(APIServer pid=4120) INFO 12-01 21:03:11 [api_server.py:1839] "
                          "vLLM API server version 0.11.0") == ("vllm", "0.11.0")
    assert engine_version("(EngineCore_DP0 pid=4310) INFO 12-01 21:03:20 [core.py:77] Initializing a V1 LLM "
                          "engine (v0.11.0) with config: model='/models/m'") == ("vllm", "0.11.0")
    assert engine_version("INFO 12-01 21:03:11 [startup.py:38]  ▄▄ ▄█ █     █     █ ▀▄▀ █  version 0.33.0") == (
        "vllm", "0.33.0")
    assert engine_version("[2026-12-01 21:03:11] Decode batch, #running-req: 1") is None
