"""The sim's own hidden state shared by the SimHost and the fake server: `DIR/sim/state.json`.

Keys: `residual_gib` (GPU headroom a CUDA OOM crash leaves lost, see `simhost.sglang.model`),
`slow_load` (weight loading 3x slower), `stale_holder_armed` (the next killed server's memory
stays held). Small JSON, replaced atomically; stdlib only.
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
