"""`SimHost(real_engine=True)` without a real engine built, and the unit that runs one (no vLLM needed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from services.engines import plain_launch
from services.units import read_exec_start
from simhost import realvllm
from simhost.host import SimHost


async def test_without_make_vllm_the_error_names_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PITCREW_ENGINE_CACHE", str(tmp_path / "empty-cache"))
    with pytest.raises(RuntimeError, match=r"real vLLM 0\.32 is not built on this machine .*run `make vllm`"):
        async with SimHost(tmp_path / "sim", engine="vllm", real_engine=True, ssh=False):
            pass
    with pytest.raises(ValueError, match="real_engine is for vLLM"):
        SimHost(tmp_path / "sim2", real_engine=True)


@pytest.mark.parametrize("version", ["0.32", "0.11"])
def test_the_real_unit_runs_vllm_serve_on_cpu_offline(version: str) -> None:
    text = realvllm.unit_text(version, 8123, Path("/sim/models/SmolLM2-135M-Instruct"))
    argv = read_exec_start(text).argv
    found = plain_launch(argv)
    assert found is not None and found[0].name == "vllm" and found[1] == str(realvllm.vllm_bin(version))
    assert argv[found[2]] == "/sim/models/SmolLM2-135M-Instruct"
    assert " ".join(argv[-9:]) == ("--host 127.0.0.1 --port 8123 --max-model-len 2048 --dtype bfloat16 "
                                   "--enforce-eager")
    # the engine's cache persists across starts (its model-info entry, written by `make vllm`, spares a start one
    # vLLM import) and is the version's own
    cache = realvllm.vllm_cache(version)
    assert cache.parent == realvllm.engine_dir(version)
    assert (f"Environment=HF_HUB_OFFLINE=1 VLLM_CPU_KVCACHE_SPACE=2 VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 "
            f"VLLM_CACHE_ROOT={cache}\n") in text
    assert ("--speculative-config" in argv) == (version == "0.32")  # 0.11 on CPU refuses speculative decoding
