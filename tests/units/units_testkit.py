"""Unit-file fixtures for the unit editor and flag schema tests: a real-looking SGLang unit."""

from __future__ import annotations

SGLANG_UNIT = """\
# /etc/systemd/system/sglang.service
# Qwen3.5-122B-A10B on 4x RTX PRO 6000 Blackwell, tensor parallel 4.
[Unit]
Description=SGLang server (Qwen3.5-122B-A10B)
After=network-online.target
Wants=network-online.target

[Service]
Type=simple
User=sglang
Environment=CUDA_VISIBLE_DEVICES=0,1,2,3
Environment="HF_HOME=/models/hf" "NCCL_DEBUG=WARN"
Environment=SGLANG_ENABLE_SPEC_V2=0
WorkingDirectory=/opt/sglang
ExecStart=/usr/bin/python3 -m sglang.launch_server \\
    --model-path /models/Qwen3.5-122B-A10B \\
    --tp-size 4 \\
    # speculative decoding with the MTP draft heads
    --speculative-algorithm EAGLE \\
    --speculative-num-steps 3 \\
    --speculative-eagle-topk 1 \\
    --speculative-num-draft-tokens 4 \\
    ; memory
    --mem-fraction-static 0.88 \\
    --port 30000 --host 0.0.0.0
Restart=always
RestartSec=5
TimeoutStopSec=60
LimitNOFILE=65536

[Install]
WantedBy=multi-user.target
"""

SGLANG_ARGV = (
    "/usr/bin/python3", "-m", "sglang.launch_server",
    "--model-path", "/models/Qwen3.5-122B-A10B",
    "--tp-size", "4",
    "--speculative-algorithm", "EAGLE",
    "--speculative-num-steps", "3",
    "--speculative-eagle-topk", "1",
    "--speculative-num-draft-tokens", "4",
    "--mem-fraction-static", "0.88",
    "--port", "30000", "--host", "0.0.0.0",
)

ONE_LINE_UNIT = """\
[Service]
ExecStart=/usr/bin/python3 -m sglang.launch_server --model-path /models/m --speculative-algorithm EAGLE \
--speculative-num-steps 3 --speculative-eagle-topk 1 --speculative-num-draft-tokens=4 --port 30000
Restart=always
"""


def unit_with(exec_start: str, before: str = "", after: str = "Restart=always\n") -> str:
    """A minimal unit around one ExecStart= value (given verbatim, may span lines)."""
    return f"[Unit]\nDescription=x\n\n[Service]\n{before}ExecStart={exec_start}\n{after}"

VLLM_UNIT = """\
# /etc/systemd/system/vllm.service
[Unit]
Description=vLLM server (Qwen3-32B)
After=network-online.target

[Service]
Type=simple
User=vllm
Environment=CUDA_VISIBLE_DEVICES=0,1
ExecStart=/opt/vllm/bin/vllm serve /models/Qwen3-32B \\
    --tensor-parallel-size 2 \\
    --gpu-memory-utilization 0.90 \\
    --max-model-len 32768 \\
    --speculative-config '{"method": "eagle3", "model": "/models/Qwen3-32B-eagle3", "num_speculative_tokens": 3}' \\
    --port 8000 --host 0.0.0.0
Restart=always
RestartSec=5

[Install]
WantedBy=multi-user.target
"""
