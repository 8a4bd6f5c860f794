"""Parsers for llama.cpp's ``llama-server`` log lines (the llama.cpp that llama-cpp-python 0.3.36 vendors).

Its lines as journald stores them (stderr, no colour without a TTY): ``srv  load_model: ...``,
``slot print_timing: id  0 | task 5 | ...``, ``llama_context: n_ctx = 4096``, ``main: ...``; the texts below were
taken from the real server made to start, serve and fail here (tests/data/engines/llamacpp/).

* version: ``build: N (COMMIT) with COMPILER for TARGET`` (printed by ``--version`` as ``version: N (COMMIT)``);
* readiness: ``srv  main: model loaded`` then ``srv  main: listening on http://HOST:PORT`` (its HTTP server answers
  `/health` 503 while the model loads and 200 from then on);
* capacity: ``llama_context: n_seq_max = N``, ``n_ctx = N``, ``n_ctx_seq = N``, ``n_batch``/``n_ubatch``, and the
  KV cache's ``llama_kv_cache: size = X MiB (N cells, ...)``;
* speculation: ``draft acceptance = 0.68750 (   33 accepted /    48 generated), mean len = ...`` per request.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from services.engines.protocol import Capacity

__all__ = ["LlamaCapacityReader", "SpecStats", "claims_line", "is_ready_line", "parse_spec_stats", "version_of"]

_VERSION = re.compile(r"\bbuild(?::| =)? (\d+) \(([0-9a-f]{7,40}|unknown)\) with "
                      r"|^version: (\d+) \(([0-9a-f]+|unknown)\)")
_READY = re.compile(r"\bmain: listening on https?://|server is listening on")
# lines only llama.cpp writes: its loaders' and server's function prefixes
_LINE = re.compile(r"^(?:llama_model_load|llama_model_loader|llama_context|llama_kv_cache|load_tensors|print_info"
                   r"|gguf_init_from_file|common_init_from_params|srv  +\w+: |slot +\w+: |que  +\w+: )")
_CTX = {
    "n_seq_max": re.compile(r"llama_context: n_seq_max += (\d+)"),
    "n_ctx": re.compile(r"llama_context: n_ctx += (\d+)"),
    "n_ctx_seq": re.compile(r"llama_context: n_ctx_seq += (\d+)"),
    "n_batch": re.compile(r"llama_context: n_batch += (\d+)"),
}
_KV = re.compile(r"llama_kv_cache: +size = +([\d.]+) MiB \( *(\d+) cells")
_SLOTS = re.compile(r"initializing, n_slots = (\d+), n_ctx_slot = (\d+)")
_SPEC = re.compile(r"draft acceptance = ([\d.]+) \( *(\d+) accepted / *(\d+) generated\)(?:, mean len = +([\d.]+))?")


def version_of(line: str) -> str | None:
    """``0 (0c1e57098)`` from the build line (or ``--version``'s first line), else None."""
    m = _VERSION.search(line)
    if m is None:
        return None
    number, commit = (m.group(1), m.group(2)) if m.group(1) is not None else (m.group(3), m.group(4))
    return f"{number} ({commit})"


def is_ready_line(message: str) -> bool:
    return bool(_READY.search(message))


def claims_line(message: str) -> bool:
    return bool(_LINE.search(message))


@dataclass(frozen=True, slots=True)
class SpecStats:
    """One ``draft acceptance`` line: a finished request's drafted and accepted tokens."""

    rate: float
    accepted: int
    generated: int
    mean_len: float | None


def parse_spec_stats(message: str) -> SpecStats | None:
    m = _SPEC.search(message)
    if m is None:
        return None
    return SpecStats(float(m.group(1)), int(m.group(2)), int(m.group(3)),
                     float(m.group(4)) if m.group(4) else None)


class LlamaCapacityReader:
    """llama.cpp's capacity spreads over the context's lines and the KV cache's size line; complete at the server's
    ``initializing, n_slots = N, n_ctx_slot = M`` line."""

    def __init__(self) -> None:
        self.capacity: Capacity | None = None
        self._seen: dict[str, int] = {}
        self._kv_mib: float | None = None
        self._cells: int | None = None

    def feed(self, message: str) -> bool:
        for key, rx in _CTX.items():
            m = rx.search(message)
            if m:
                self._seen[key] = int(m.group(1))
                return False
        m = _KV.search(message)
        if m:
            self._kv_mib, self._cells = float(m.group(1)), int(m.group(2))
            return False
        m = _SLOTS.search(message)
        if m is None:
            return False
        slots, per_slot = int(m.group(1)), int(m.group(2))
        total = self._cells or self._seen.get("n_ctx") or slots * per_slot
        self.capacity = Capacity(max_total_num_tokens=total, chunked_prefill_size=self._seen.get("n_batch"),
                                 max_prefill_tokens=None, max_running_requests=slots, context_len=per_slot,
                                 available_gpu_mem_gb=None,
                                 kv_cache_gib=self._kv_mib / 1024 if self._kv_mib is not None else None)
        return True
