"""The llama.cpp host: the real `llama-server` from `make engine`'s cache as the unit (skipped, with the reason,
where it is not built), and the clear error naming `make engine` where it is not."""

from __future__ import annotations

from pathlib import Path

import pytest
from simhost_kit import messages, wait_for
from support.llamacpp_kit import real_llamacpp

from simhost.host import SimHost
from simhost.llamacpp.build import EngineNotBuilt

UNIT = "llama-server.service"


def test_without_the_build_the_host_says_to_run_make_engine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PITCREW_ENGINE_CACHE", str(tmp_path / "empty-cache"))
    with pytest.raises(EngineNotBuilt, match=r"run `make engine` once"):
        SimHost(tmp_path / "h", engine="llamacpp", ssh=False)
    assert not (tmp_path / "h").exists()  # refused before anything was laid out


@real_llamacpp()
async def test_the_unit_is_the_real_server_and_fails_in_its_own_words(tmp_path: Path) -> None:
    async with SimHost(tmp_path / "h", engine="llamacpp", ssh=False) as host:
        await host.wait_ready(60)
        # the server answers /health before its stdout line is in the journal (another stream: at load ~12 the
        # line was not there yet when the assertion ran, session 7): wait for it
        listening = f"srv  llama_server: listening on http://127.0.0.1:{host.server_port}"
        await wait_for(lambda: any(m.endswith(listening) for m in messages(host, UNIT)), within=30)
        assert host.unit_path.read_text().count("MemoryMax=1G") == 1
        # the model removed: the real loader's error, then systemd's
        (host.root / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf").unlink()
        assert host.supervisor is not None
        await host.supervisor.restart()
        await wait_for(lambda: f"{UNIT}: Failed with result 'exit-code'." in messages(host, UNIT), within=30)
        assert any("E gguf_init_from_file: failed to open GGUF file" in m for m in messages(host, UNIT))
