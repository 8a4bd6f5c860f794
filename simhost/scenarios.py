"""Scenarios (`--scenario`) and fault names of the simulated host, and the unit file it starts with.

Every scenario runs SGLang, or vLLM 0.11 with `engine="vllm"` (`vllm_unit_text`: the steps become
`num_speculative_tokens` in `--speculative-config`), or the real llama.cpp `llama-server` with `engine="llamacpp"`
(`llamacpp_unit_text`: the steps become the ngram-simple draft length).

* `healthy`: steps 3, serving.
* `seed`: the field notes' story: serving at steps 5; deploy steps 10 (edit ExecStart,
  daemon-reload, restart) and it loads and serves C=1 at 270-293 tok/s, dies of CUDA OOM as soon
  as two requests decode together, and from then on every restart dies in start-up with
  `Not enough memory` (restart loop); restoring steps 5 recovers.
* `stale-gpu`: a leftover process holds most of every GPU's memory; each start dies of torch's
  CUDA OOM naming it (restart loop) until it is killed or `clear`ed.
* `port-in-use`: another process listens on the server port; each start loads, fails to bind
  and is killed after the warm-up wait (restart loop).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

FAULTS = ("stale-gpu-holder", "port-in-use", "nccl-timeout", "xid", "slow-load", "clear")

SCENARIOS: dict[str, dict[str, Any]] = {
    "healthy": {"steps": 3, "faults": [], "start": True},
    "seed": {"steps": 5, "faults": [], "start": True},
    "stale-gpu": {"steps": 3, "faults": ["stale-gpu-holder"], "start": True},
    "port-in-use": {"steps": 3, "faults": ["port-in-use"], "start": True},
}


def unit_text(steps: int, model_dir: Path, port: int, *, engine: str = "sglang", scale: float | None = None) -> str:
    """The host's unit. `scale`: write its restart, stop and start-limit times already multiplied by the sim's time
    scale (for real systemd, which runs them in real time; the sim's supervisor scales the configured values).
    For llama.cpp `model_dir` is the host's root (`llamacpp_unit_text`)."""
    if engine == "llamacpp":
        text = llamacpp_unit_text(steps, model_dir, port)
    else:
        text = vllm_unit_text(steps, model_dir, port) if engine == "vllm" else sglang_unit_text(steps, model_dir, port)
    return text if scale is None else scaled_unit(text, scale)


def scaled_unit(text: str, scale: float) -> str:
    """`text` with RestartSec=/TimeoutStopSec= multiplied by `scale` and systemd's default start limit (10 s, 5
    starts) written out at that scale, so a crash loop meets the start limit exactly when it would at full speed."""
    out = []
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep and key in ("RestartSec", "TimeoutStopSec") and value.strip().isdigit():
            line = f"{key}={_ms(int(value) * scale)}"
        out.append(line)
        if line == "[Unit]":
            out.append(f"StartLimitIntervalSec={_ms(10 * scale)}")
            out.append("StartLimitBurst=5")
    return "\n".join(out) + "\n"


def _ms(seconds: float) -> str:
    return f"{max(1, round(seconds * 1000))}ms"


def sglang_unit_text(steps: int, model_dir: Path, port: int) -> str:
    return (
        "[Unit]\n"
        "Description=SGLang server (Qwen3.5-122B-A10B)\n"
        "After=network-online.target\n"
        "Wants=network-online.target\n"
        "\n"
        "[Service]\n"
        "Type=simple\n"
        "Environment=CUDA_VISIBLE_DEVICES=0,1,2,3\n"
        f"ExecStart=/usr/bin/python3 -m sglang.launch_server --model-path {model_dir} "
        "--served-model-name qwen3.5-122b-a10b --tp-size 4 --trust-remote-code "
        f"--speculative-algorithm EAGLE --speculative-num-steps {steps} --speculative-eagle-topk 1 "
        f"--speculative-num-draft-tokens {steps + 1} --mem-fraction-static 0.88 "
        f"--host 127.0.0.1 --port {port} --enable-metrics\n"
        "Restart=always\n"
        "RestartSec=5\n"
        "TimeoutStopSec=60\n"
        "\n"
        "[Install]\n"
        "WantedBy=multi-user.target\n"
    )


def vllm_unit_text(spec_tokens: int, model_dir: Path, port: int) -> str:
    """The same host served by vLLM 0.11: `vllm serve` with EAGLE-3 speculation in `--speculative-config`.

    `Restart=always` (vLLM exits 0 when its engine dies, FORMATS.md b.5, so `on-failure` would not
    restart it) and `RestartSec=30` (a start takes minutes; restarting at once only adds load)."""
    spec = (f'{{"method": "eagle3", "model": "{model_dir}-eagle3", '
            f'"num_speculative_tokens": {spec_tokens}}}')
    return (
        "[Unit]\n"
        "Description=vLLM server (Qwen3.5-122B-A10B)\n"
        "After=network-online.target\n"
        "Wants=network-online.target\n"
        "\n"
        "[Service]\n"
        "Type=simple\n"
        "Environment=CUDA_VISIBLE_DEVICES=0,1,2,3\n"
        f"ExecStart=/opt/vllm/bin/vllm serve {model_dir} \\\n"
        "    --served-model-name qwen3.5-122b-a10b --tensor-parallel-size 4 --trust-remote-code \\\n"
        "    --gpu-memory-utilization 0.90 --max-model-len 32768 \\\n"
        f"    --speculative-config '{spec}' \\\n"
        f"    --host 127.0.0.1 --port {port}\n"
        "Restart=always\n"
        "RestartSec=30\n"
        "TimeoutStopSec=60\n"
        "\n"
        "[Install]\n"
        "WantedBy=multi-user.target\n"
    )


LLAMACPP_SLOTS = 2
LLAMACPP_MEMORY_MAX = "1G"


def llamacpp_unit_text(draft: int, root: Path, port: int) -> str:
    """The host served by the real llama.cpp `llama-server` (built by `make engine`) with SmolLM2-135M Q4_1 on the
    CPU: one thread (`-t 2` is slower on 2 shared cores: the threads spin against each other), two slots,
    ngram-simple speculation drafting `draft` tokens (no draft model), `/metrics` on, and a memory limit the unit's
    own context fits in while a far larger one does not (`MemoryMax=`: the OOM killer ends that start)."""
    from simhost.llamacpp.layout import model_path, server_path

    return (
        "[Unit]\n"
        "Description=llama.cpp server (SmolLM2-135M-Instruct Q4_1)\n"
        "After=network-online.target\n"
        "Wants=network-online.target\n"
        "\n"
        "[Service]\n"
        "Type=simple\n"
        f"ExecStart={server_path(root)} -m {model_path(root)} \\\n"
        f"    --host 127.0.0.1 --port {port} -t 1 -np {LLAMACPP_SLOTS} --ctx-size 4096 \\\n"
        f"    --spec-type ngram-simple --spec-ngram-simple-size-n 2 --spec-ngram-simple-size-m {draft} \\\n"
        "    --metrics --no-webui\n"
        f"MemoryMax={LLAMACPP_MEMORY_MAX}\n"
        "Restart=always\n"
        "RestartSec=5\n"
        "TimeoutStopSec=30\n"
        "\n"
        "[Install]\n"
        "WantedBy=multi-user.target\n"
    )
