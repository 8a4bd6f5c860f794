"""The llama.cpp host's files: the real `llama-server` and SmolLM2 from `make engine`'s cache, placed in `DIR`.

`install(root)` hard-links (or copies, across file systems) the cached binary to `DIR/opt/llama.cpp/bin/llama-server`
and the model to `DIR/models/SmolLM2-135M-Instruct.Q4_1.gguf`, so the unit names paths inside the host (as a real
host's unit names its own install), faults can remove or truncate the model without touching the cache (they
replace the file, never write into it), and the login user of the real-systemd host can read both.
Raises `EngineNotBuilt` (naming `make engine`) when the cache is empty.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from pathlib import Path

from simhost.llamacpp.build import MODEL_FILE, SERVER, built

__all__ = ["install", "model_path", "server_path"]


def server_path(root: Path) -> Path:
    return root / "opt" / "llama.cpp" / "bin" / SERVER


def model_path(root: Path) -> Path:
    return root / "models" / MODEL_FILE


def _place(src: Path, dst: Path) -> None:
    if dst.exists() and dst.stat().st_size == src.stat().st_size:
        return
    dst.parent.mkdir(parents=True, exist_ok=True)
    tmp = dst.with_name(f".{dst.name}.tmp")
    with contextlib.suppress(FileNotFoundError):
        tmp.unlink()
    try:
        os.link(src, tmp)
    except OSError:
        shutil.copy2(src, tmp)
    os.replace(tmp, dst)


def install(root: Path) -> tuple[Path, Path]:
    """(server, model) inside `root`, from the cache."""
    b = built()
    server, model = server_path(root), model_path(root)
    _place(b.server, server)
    _place(b.model, model)
    return server, model
