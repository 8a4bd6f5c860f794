"""Parsers for llama.cpp's ``llama-server`` log lines (the llama.cpp that llama-cpp-python 0.3.36 vendors).

Taken from the real server started, served and made to fail here (tests/data/engines/llamacpp/). Every line it
writes (stderr, no colour without a TTY) starts with its log prefix ``M.SS.mmm.uuu L `` (time since start, level
I/W/E/D), then a component: ``srv  llama_server: ...``, ``slot print_timing: id  1 | task 0 | ...``, ``cmn ...``,
or a library function (``llama_model_load: ...``, ``gguf_init_from_file: ...``); argument errors come before
logging starts and have no prefix.

* version: at the default verbosity (3) llama-server logs none (the build line is ``COM_TRC``, level 4, in
  common/common.cpp's ``common_params_print_info``); with ``-lv 4`` its first line is
  ``common_params_print_info: build 1 (0c1e57098) with GNU 12.2.0 for Linux x86_64``; ``--version`` prints
  ``version: 0.5.0-dev (build 1, commit 0c1e57098)``; the running server answers ``GET /props`` (no API key
  needed unless ``--api-key`` is set) with ``"build_info": "b1-0c1e57098"`` (``llama_build_info()``, also every
  completion's ``system_fingerprint``). All three read as ``b1 (0c1e57098)``;
* readiness: ``srv  llama_server: model loaded`` then ``srv  llama_server: listening on http://HOST:PORT`` (its
  HTTP server answers `/health` 503 while the model loads, 200 from then on);
* capacity: ``srv    load_model: initializing, n_slots = 2, n_ctx_slot = 2048, kv_unified = 'false'`` (with
  ``-lv 4`` also ``llama_context: n_batch = 2048`` and ``llama_kv_cache: size = 90.00 MiB (2048 cells, ...)``);
* speculation: ``slot print_timing: ... | draft acceptance = 0.70690 (   41 accepted /    58 generated), mean len
  =  2.95`` per request (the same figures as the response's ``timings.draft_n``/``draft_n_accepted``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from services.engines.protocol import Capacity

__all__ = ["PREFIX", "LlamaCapacityReader", "SpecStats", "build_info_version", "claims_line", "is_ready_line",
           "parse_spec_stats", "version_of"]

PREFIX = re.compile(r"^\d+\.\d\d\.\d{3}\.\d{3} [IWEDT] ")  # llama.cpp's log prefix (common_log, timestamps on)

_VERSION = re.compile(r"\bbuild (\d+) \(([0-9a-f]{7,40}|unknown)\) with "
                      r"|^version: \S+ \(build (\d+), commit ([0-9a-f]+|unknown)\)")
_BUILD_INFO = re.compile(r"b(\d+)-([0-9a-f]{7,40}|unknown)")  # llama_build_info(): "b" BUILD_NUMBER "-" COMMIT
_READY = re.compile(r"^(?:\S+ [IWEDT] )?srv +\w+: listening on https?://")
# lines only llama.cpp writes: its loaders' and server's function prefixes
_LINE = re.compile(r"^\d+\.\d\d\.\d{3}\.\d{3} [IWEDT] (?:srv |slot |cmn |que |llama_|gguf_|print_info|load_tensors)"
                   r"|^error while handling argument \"-|^error: invalid argument: -")
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
    """``b1 (0c1e57098)`` from the build line of ``-lv 4`` (or ``--version``'s first line), else None."""
    m = _VERSION.search(line)
    if m is None:
        return None
    number, commit = (m.group(1), m.group(2)) if m.group(1) is not None else (m.group(3), m.group(4))
    return f"b{number} ({commit})"


def build_info_version(doc: object) -> str | None:
    """``b1 (0c1e57098)`` from ``GET /props``' ``"build_info": "b1-0c1e57098"``, else None."""
    info = doc.get("build_info") if isinstance(doc, dict) else None
    m = _BUILD_INFO.fullmatch(info) if isinstance(info, str) else None
    return f"b{m.group(1)} ({m.group(2)})" if m else None


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
    """llama.cpp's capacity: the server's ``initializing, n_slots = N, n_ctx_slot = M`` line (slots = max running,
    the context per slot, N x M tokens in all); with ``-lv 4`` the context's lines and the KV cache's size add the
    batch and the KV cache's MiB."""

    def __init__(self) -> None:
        self.capacity: Capacity | None = None
        self._seen: dict[str, int] = {}
        self._kv_mib: float | None = None

    def feed(self, message: str) -> bool:
        for key, rx in _CTX.items():
            m = rx.search(message)
            if m:
                self._seen[key] = int(m.group(1))
                return False
        m = _KV.search(message)
        if m:
            self._kv_mib = float(m.group(1))
            return False
        m = _SLOTS.search(message)
        if m is None:
            return False
        slots, per_slot = int(m.group(1)), int(m.group(2))
        total = self._seen.get("n_ctx") or slots * per_slot  # the KV cache's cells are per sequence
        self.capacity = Capacity(max_total_num_tokens=total, chunked_prefill_size=self._seen.get("n_batch"),
                                 max_prefill_tokens=None, max_running_requests=slots, context_len=per_slot,
                                 available_gpu_mem_gb=None,
                                 kv_cache_gib=self._kv_mib / 1024 if self._kv_mib is not None else None)
        return True
