"""The numbers of the fake server: capacity, memory and speed as functions of its flags.

One consistent model, fitted to FIELD-NOTES (Qwen3.5-122B-A10B, TP 4, RTX PRO 6000 97,887 MiB,
`--mem-fraction-static 0.88`); `d` is `speculative_num_draft_tokens` (= steps + 1 with topk 1).

* KV pool: every running-request slot reserves verify/graph buffers proportional to `d`, so the
  pool shrinks hyperbolically: `max_total_num_tokens = floor(P * k_f / (81276 * d + 52103))` with
  `P = 377207 * 295931` — exactly 377,207 at d=3 (steps 2) and 295,931 at d=4 (steps 3);
  `k_f = (f*T - W) / (0.88*T0 - W)` scales it with the memory fraction and GPU size (1 at the defaults).
* `max_running_requests = min(48, max_total_num_tokens // 17300)` (48: SGLang's reset for speculative
  decoding; 17,300 tokens per request slot; any divisor in (17146, 17407] gives 21 and 17).
* Headroom outside the static pool (GiB per GPU): `H = (1-f)*T - 2.0 - 0.58*d - residual`; the draft
  worker needs 2.5 of it at start-up (else SGLang's "Not enough memory" RuntimeError), and decoding
  needs `0.04 * d` per running request (else torch's CUDA OOM). At steps 10 (d=11) one request fits,
  two do not; at steps 5 a full batch of 11 fits even with the 0.75 GiB residual a CUDA OOM crash
  leaves behind (the sim's stand-in for what made the field notes' host fail on every restart).
* Speed at C=1 (tok/s, never time-scaled) and accept length per steps: the FIELD-NOTES figures,
  interpolated; per-request rate at batch B: `r1 / (1 + 0.06 * (B - 1))`.
"""

from __future__ import annotations

import math

GIB = 1 << 30
T0_MIB = 97887
WEIGHTS_GIB = 58.0
BASE_GIB = 2.0
GRAPH_GIB_PER_DRAFT = 0.58
DRAFT_NEED_GIB = 2.5
ACT_GIB = 0.04
OOM_RESIDUAL_GIB = 0.75
SLOT_TOKENS = 17300
SPEC_MAX_RUNNING = 48
BATCH_SLOWDOWN = 0.06
PREFILL_TOK_S = 20000.0

# steps -> (accept length, decode tok/s at C=1)
SPEED = {0: (1.0, 80.0), 1: (1.62, 123.0), 2: (2.31, 186.0), 3: (2.85, 240.0), 4: (3.30, 277.0),
         5: (3.62, 282.0), 6: (4.05, 284.0), 7: (4.45, 285.0), 8: (4.85, 284.0), 9: (5.20, 283.0),
         10: (5.50, 281.5)}
JITTER = {10: 0.03}  # steps 10: 270-293 tok/s between requests (FIELD-NOTES)


def k_factor(mem_fraction: float, total_mib: int) -> float:
    total = total_mib / 1024
    ref = 0.88 * T0_MIB / 1024 - WEIGHTS_GIB
    return (mem_fraction * total - WEIGHTS_GIB) / ref


def max_total_num_tokens(draft_tokens: int, mem_fraction: float, total_mib: int) -> int:
    k = k_factor(mem_fraction, total_mib)
    if k <= 0:
        return 0
    return math.floor(377207 * 295931 * k / (81276 * draft_tokens + 52103))


def max_running_requests(tokens: int, explicit: int | None) -> int:
    cap = explicit if explicit else SPEC_MAX_RUNNING
    return max(0, min(cap, tokens // SLOT_TOKENS))


def headroom_gib(draft_tokens: int, mem_fraction: float, total_mib: int, residual_gib: float) -> float:
    return (1 - mem_fraction) * total_mib / 1024 - BASE_GIB - GRAPH_GIB_PER_DRAFT * draft_tokens - residual_gib


def workspace_gib(draft_tokens: int, mem_fraction: float, total_mib: int, residual_gib: float) -> float:
    return headroom_gib(draft_tokens, mem_fraction, total_mib, residual_gib) - DRAFT_NEED_GIB


def oom_at(running: int, draft_tokens: int, workspace: float) -> bool:
    return running * draft_tokens * ACT_GIB > workspace


def used_mib(phase: str, draft_tokens: int, mem_fraction: float, total_mib: int) -> int:
    """Memory one scheduler holds on its GPU at each start-up phase."""
    static = mem_fraction * total_mib / 1024
    gib = {"context": 0.5, "weights": WEIGHTS_GIB + 0.5, "kv": static + 0.5,
           "serving": static + BASE_GIB + GRAPH_GIB_PER_DRAFT * draft_tokens + DRAFT_NEED_GIB}[phase]
    return int(gib * 1024)


def speed(steps: int) -> tuple[float, float]:
    """(accept length, tok/s at C=1) for `--speculative-num-steps` (0 = no speculative decoding)."""
    if steps in SPEED:
        return SPEED[steps]
    if steps > 10:
        accept = min(5.5 + 0.1 * (steps - 10), steps + 1.0)
        return accept, max(200.0, 281.5 - 4.0 * (steps - 10))
    return SPEED[0]


def per_request_rate(rate_c1: float, batch: int) -> float:
    return rate_c1 / (1 + BATCH_SLOWDOWN * max(0, batch - 1))


def accept_rate_059(accept_len: float, draft_tokens: int) -> float:
    """SGLang 0.5.9: accepted / (forward_ct * speculative_num_draft_tokens) = accept_len / d."""
    return accept_len / draft_tokens if draft_tokens else 0.0
