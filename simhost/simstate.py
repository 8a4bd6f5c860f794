"""The sim's own hidden state shared by the SimHost and the fake server: `DIR/sim/state.json`.

Keys: `residual_gib` (GPU headroom a CUDA OOM crash leaves lost, see `simhost.sglang.model`),
`slow_load` (weight loading 3x slower), `stale_holder_armed` (the next killed server's memory
stays held). Small JSON, replaced atomically; stdlib only.

Also the sim's record of what its servers received (`DIR/sim/received.jsonl`: one line per generation request, the
serving process's pid, whether it streams and the prompt's text), for tests that check what a benchmark sent at the
wire.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any


def path(root: Path) -> Path:
    return root / "sim" / "state.json"


def read(root: Path) -> dict[str, Any]:
    try:
        data: dict[str, Any] = json.loads(path(root).read_text())
        return data
    except (OSError, ValueError):
        return {}


def update(root: Path, **changes: Any) -> dict[str, Any]:
    data = read(root)
    data.update(changes)
    target = path(root)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".state.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data))
    os.replace(tmp, target)
    return data


def received_path(root: Path) -> Path:
    return root / "sim" / "received.jsonl"


def record_received(root: Path, prompt: str, *, stream: bool, max_tokens: int) -> None:
    """Append one request's prompt as the serving process received it, whether it asked for a stream and how many
    tokens at most (one short line: an appending write)."""
    with received_path(root).open("a") as f:
        f.write(json.dumps({"pid": os.getpid(), "stream": stream, "prompt": prompt, "max_tokens": max_tokens}) + "\n")


def received(root: Path) -> list[dict[str, Any]]:
    """Every request recorded by `record_received`, in arrival order."""
    try:
        lines = received_path(root).read_text().splitlines()
    except OSError:
        return []
    return [json.loads(line) for line in lines if line.strip()]
