"""Parsers for vLLM's log lines (FORMATS b): capacity at start-up, the spec-decoding and throughput lines.

vLLM 0.11 logs its KV cache capacity on two lines (``GPU KV cache size: 1,234,560 tokens`` and
``Maximum concurrency for 32,768 tokens per request: 37.68x``, ``kv_cache_utils.py:1087/1091``; 0.32
joins them on one line, and its CPU build says ``CPU KV cache size``: the device is kept), the context it uses
(``Using max model len 32768``) and the KV cache memory (``Available KV cache memory: 10.79 GiB``; the CPU build:
``Explicitly set (2.0/23.54) GiB for KV cache on node 0.``, from ``VLLM_CPU_KVCACHE_SPACE``). Every 10 s the API
server logs a throughput line (``Engine 000: Avg prompt throughput: …``) and, with speculative decoding, a
``SpecDecoding metrics:``
line (mean acceptance length = 1 + accepted / drafts). Messages arrive here with vLLM's
``(APIServer pid=N)`` prefix and ANSI colours already handled by `services.journal.entries`.

`VllmCapacityReader` gathers vLLM's capacity lines into one `Capacity`, since vLLM spreads them
over several lines.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from services.engines.protocol import Capacity

__all__ = ["VllmCapacityReader", "VllmSpecStats", "VllmThroughput", "device_of_line", "parse_vllm_spec",
           "parse_vllm_throughput"]

_NUM = r"([\d,]+)"
_KV_TOKENS = re.compile(r"(?:\b(GPU|CPU|XPU) )?KV cache size: " + _NUM + " tokens")  # the device: vLLM's platform
_PLATFORM = re.compile(r"Automatically detected platform (\w+)\.")  # 0.11 (its CPU build still says "GPU KV cache")
_DEVICE_CONFIG = re.compile(r"\bdevice_config=(\w+)")  # the engine's config line, 0.11 and 0.32
_KV_SET = re.compile(r"Explicitly set \(([\d.]+)/[\d.]+\) GiB for KV cache")  # the CPU backend (0.32)
_MAX_CONC = re.compile(r"Maximum concurrency for " + _NUM + r" tokens per request: ([\d.]+)x")
_MAX_LEN = re.compile(r"Using max model len (\d+)")
_KV_MEM = re.compile(r"Available KV cache memory: ([\d.]+) GiB")
_SPEC = re.compile(r"SpecDecoding metrics: Mean acceptance length: ([\d.]+)")
_SPEC_ACCEPTED = re.compile(r"Accepted: (\d+) tokens")
_SPEC_DRAFTED = re.compile(r"Drafted: (\d+) tokens")
_SPEC_RATE = re.compile(r"Avg Draft acceptance rate: ([\d.]+)%")
_TPUT = re.compile(r"Avg generation throughput: ([\d.]+) tokens/s, Running: (\d+) reqs, Waiting: (\d+) reqs")
_KV_USAGE = re.compile(r"KV cache usage: ([\d.]+)%")


def _device(kv_word: str | None, platform: str | None) -> str | None:
    """Where the KV cache lives when not on a GPU: 0.32's `CPU KV cache size`, or 0.11's detected platform (its
    CPU build still calls the cache `GPU KV cache`); None on GPUs."""
    for word in (platform, (kv_word or "").lower()):
        if word and word not in ("gpu", "cuda", "rocm"):
            return word
    return None


def device_of_line(line: str) -> str | None:
    """"cpu" (or another non-GPU platform) when a start line says so: the engine's config line
    (``Initializing a V1 LLM engine (v0.32.0) with config: … device_config=cpu``) or 0.11's ``Automatically detected
    platform cpu.``; None on GPUs or for any other line."""
    m = _DEVICE_CONFIG.search(line) or _PLATFORM.search(line)
    return _device(None, m.group(1).lower()) if m else None


def _int(text: str) -> int:
    return int(text.replace(",", ""))


@dataclass(frozen=True, slots=True)
class VllmSpecStats:
    """One ``SpecDecoding metrics:`` line (the figures of the last logging interval)."""

    mean_accept_len: float
    accepted: int | None
    drafted: int | None
    draft_accept_rate: float | None  # 0..1


@dataclass(frozen=True, slots=True)
class VllmThroughput:
    """One ``Engine 000: Avg prompt throughput: …`` line."""

    gen_throughput: float
    running: int
    waiting: int
    kv_cache_usage: float | None  # 0..1


def parse_vllm_spec(message: str) -> VllmSpecStats | None:
    m = _SPEC.search(message)
    if m is None:
        return None
    acc, dr, rate = _SPEC_ACCEPTED.search(message), _SPEC_DRAFTED.search(message), _SPEC_RATE.search(message)
    return VllmSpecStats(float(m.group(1)), int(acc.group(1)) if acc else None, int(dr.group(1)) if dr else None,
                         float(rate.group(1)) / 100 if rate else None)


def parse_vllm_throughput(message: str) -> VllmThroughput | None:
    m = _TPUT.search(message)
    if m is None:
        return None
    usage = _KV_USAGE.search(message)
    return VllmThroughput(float(m.group(1)), int(m.group(2)), int(m.group(3)),
                          float(usage.group(1)) / 100 if usage else None)


class VllmCapacityReader:
    """Gathers one start's capacity lines: vLLM's several (KV tokens, concurrency, length)."""

    def __init__(self) -> None:
        self.capacity: Capacity | None = None
        self._max_len: int | None = None
        self._kv_mem: float | None = None
        self._platform: str | None = None

    def feed(self, message: str) -> bool:
        """Read one message; True when it completed the capacity (the KV cache size line)."""
        if (m := _MAX_LEN.search(message)) is not None:
            self._max_len = int(m.group(1))
            if self.capacity is not None:
                self.capacity = replace(self.capacity, context_len=self._max_len)
        if (m := _PLATFORM.search(message)) is not None:
            self._platform = m.group(1).lower()
        if (m := _KV_MEM.search(message) or _KV_SET.search(message)) is not None:
            self._kv_mem = float(m.group(1))
        done = False
        if (m := _KV_TOKENS.search(message)) is not None:
            self.capacity = Capacity(_int(m.group(2)), None, None, None, self._max_len, None,
                                     kv_cache_gib=self._kv_mem, device=_device(m.group(1), self._platform))
            done = True
        if (m := _MAX_CONC.search(message)) is not None and self.capacity is not None:
            self.capacity = replace(self.capacity, max_concurrency=float(m.group(2)),
                                    concurrency_tokens=_int(m.group(1)))
            if self.capacity.context_len is None:
                self.capacity = replace(self.capacity, context_len=_int(m.group(1)))
        return done
