"""The numbers of the fake vLLM server: KV cache capacity, memory headroom and speed from its flags.

Same host as the SGLang sim (Qwen3.5-122B-A10B weights, 58 GiB per GPU at TP 4, 97,887 MiB GPUs);
vLLM's own memory rule (``--gpu-memory-utilization``, ``CacheConfig``: ``gt=0, le=1``): everything
vLLM allocates on a GPU — weights, the profiled activation peak, the draft model — must fit in
``util * total``; what is left of that budget is the KV cache.

* activation peak (GiB): ``2.0 + 0.0025 * max_num_seqs * (1 + k)`` with ``k = num_speculative_tokens``
  (the sampler and rejection-sampler buffers grow with the draft tokens: the spec-token cost);
  the EAGLE draft model adds 1.2 GiB.
* KV cache: ``kv_gib / 116 KiB`` tokens per GPU: 201,340 tokens at util 0.90, k 3, 256 seqs (160,843 at k 10).
* outside the budget (CUDA context, graphs): ``H = (1-util)*T - 2.0 - 0.58*(k+1) - residual``; decoding
  needs ``0.04 * (k+1)`` GiB per running request of it, else torch's CUDA OOM kills the EngineCore.
* speed: SGLang's table by draft tokens per step (`simhost.sglang.model.speed`), never time-scaled.
"""

from __future__ import annotations

import math

from simhost.sglang import model as sg

WEIGHTS_GIB = sg.WEIGHTS_GIB
DRAFT_MODEL_GIB = 1.2
KV_BYTES_PER_TOKEN = 116 * 1024
MODEL_MAX_LEN = 262144
GIB = 1 << 30


def activation_gib(max_num_seqs: int, k: int) -> float:
    return 2.0 + 0.0025 * max_num_seqs * (1 + k)


def kv_cache_gib(util: float, total_mib: int, max_num_seqs: int, k: int, spec: bool) -> float:
    budget = util * total_mib / 1024
    return budget - WEIGHTS_GIB - activation_gib(max_num_seqs, k) - (DRAFT_MODEL_GIB if spec else 0.0)


def kv_tokens(kv_gib: float) -> int:
    return max(0, math.floor(kv_gib * GIB / KV_BYTES_PER_TOKEN))


def workspace_gib(util: float, total_mib: int, k: int, residual_gib: float) -> float:
    return (1 - util) * total_mib / 1024 - sg.BASE_GIB - sg.GRAPH_GIB_PER_DRAFT * (k + 1) - residual_gib


def used_mib(phase: str, util: float, total_mib: int) -> int:
    gib = {"context": 0.5, "weights": WEIGHTS_GIB + 0.5, "serving": util * total_mib / 1024 + 1.5}[phase]
    return int(gib * 1024)
