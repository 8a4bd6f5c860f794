"""`pitcrew demo --engine vllm --script`: the same chat on a simulated vLLM host."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path


def test_demo_on_vllm_tries_spec_tokens_and_rolls_back_a_context_its_kv_cache_cannot_hold(tmp_path: Path) -> None:
    script = tmp_path / "story.txt"
    script.write_text("status\ntry 4 spec tokens\ntry context 262144\n")
    env = {**os.environ, "COLUMNS": "200"}
    env.pop("PITCREW_CONFIG", None)
    proc = subprocess.run([sys.executable, "-m", "bot", "demo", "--engine", "vllm", "--script", str(script),
                           "--time-scale", "0.02"], capture_output=True, text=True, timeout=300, env=env,
                          stdin=subprocess.DEVNULL, cwd=tmp_path)
    out = proc.stdout
    assert proc.returncode == 0, out[-3000:] + proc.stderr[-3000:]
    assert not re.search(r"Traceback \(most recent call last\):\n\s+File", out + proc.stderr)
    assert "vllm.service" in out and "spec tokens 5" in out  # status: the engine and its config
    assert "--speculative-config num_speculative_tokens 5 -> 4" in out  # the preview
    assert "decode tok/s/req" in out and "spec tokens 4 on sim-gpu-1" in out  # the results table
    assert "--max-model-len 32768 -> 262144" in out
    failed = out.index("kv_cache_oom")
    assert "Rolled back automatically" in out[failed:]
    assert "demo finished." in out
