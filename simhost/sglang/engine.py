"""The fake server's scheduler: continuous batching with speculative decoding, in real time.

One asyncio task stands for SGLang's TP0 scheduler loop. Requests wait in a queue, are admitted
up to `max_running_requests` (and while the KV pool has room) with a prefill that emits the first
token, then every decode step (one timer for the whole batch, paced on absolute deadlines so the
rate does not drift, a wakeup up to `CATCH_UP_S` late made up) gives each running request its
accept length in tokens. Step time at batch B is `accept_len / per_request_rate(B)`; token rates
are never time-scaled. Every `decode_log_interval` steps it logs SGLang 0.5.9's `Decode batch`
line; every admission a `Prefill batch` line. A batch that needs more workspace than there is raises the CUDA OOM crash.

Noise (`noise_pct`, off by default): every run's speed is the model's times `1 + N(0, noise_pct %)`,
drawn again whenever the engine wakes after `NEW_RUN_IDLE_S` of idleness (a new benchmark run) from a
generator seeded with `noise_seed` — reproducible — and each request's accept length varies by up
to ±2 x noise_pct % (as the field notes' steps 10 does by itself).
"""

from __future__ import annotations

import asyncio
import hashlib
import random
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from simhost.sglang import model

Sink = Callable[[int, bool, str | None], None]
NEW_RUN_IDLE_S = 1.0  # wall seconds idle before the next request starts a new run (noise redrawn)
# how far behind its schedule the engine catches up: a wakeup this late (the host process descheduled, its loop
# busy) is made up by the next steps at once, as a GPU would have gone on decoding meanwhile; later than this it
# starts again from now (an engine stalled that long is slow)
CATCH_UP_S = 0.1


@dataclass(eq=False)
class Req:
    rid: str
    prompt_tokens: int
    max_tokens: int
    ignore_eos: bool
    sink: Sink
    accept: float = 1.0
    target: int = 0
    finish: str = "length"
    generated: int = 0
    acc: float = 0.0
    aborted: bool = False
    created: float = field(default_factory=time.monotonic)


@dataclass
class Stats:
    prompt_tokens: int = 0
    generation_tokens: int = 0
    requests: int = 0
    aborted: int = 0
    verify_steps: int = 0
    accepted_tokens: int = 0
    last_gen_throughput: float = 0.0
    last_accept_len: float = 0.0


class Engine:
    def __init__(self, *, steps: int, draft_tokens: int, max_running: int, max_total_tokens: int,
                 workspace_gib: float, decode_log_interval: int, log: Callable[[str], None],
                 on_oom: Callable[[int], None], spec: bool, cuda_graph: bool = True, noise_pct: float = 0.0,
                 noise_seed: str = "") -> None:
        self.steps = steps
        self.draft_tokens = draft_tokens
        self.accept_len, self.rate_c1 = model.speed(steps if spec else 0)
        self.jitter = model.JITTER.get(steps, 0.0) if spec else 0.0
        self.max_running = max_running
        self.max_total_tokens = max_total_tokens
        self.workspace = workspace_gib
        self.interval = max(1, decode_log_interval)
        self.log = log
        self.on_oom = on_oom
        self.spec = spec
        self.cuda_graph = cuda_graph
        if not cuda_graph:  # --disable-cuda-graph: "Huge performance loss" (SGLang's own words)
            self.rate_c1 *= 0.55
        self.noise_pct = max(0.0, noise_pct)
        if self.noise_pct:
            self.jitter = max(self.jitter, 2 * self.noise_pct / 100)
        self._rng = random.Random(noise_seed)
        self.model_rate = self.rate_c1
        self.run_factor = 1.0
        self._idle_since = time.monotonic()
        self.new_run()
        self.queue: deque[Req] = deque()
        self.running: list[Req] = []
        self.stats = Stats()
        self.halted = False
        self._wake = asyncio.Event()
        self._log_steps = 0
        self._log_tokens = 0
        self._log_accepted = 0.0
        self._log_verifies = 0
        self._log_time = time.monotonic()

    def new_run(self) -> None:
        """Draw this run's speed factor (1 without noise)."""
        if self.noise_pct:
            self.run_factor = max(0.5, 1 + self._rng.gauss(0.0, self.noise_pct / 100))
            self.rate_c1 = self.model_rate * self.run_factor

    # ---- requests -------------------------------------------------------------------------
    def submit(self, req: Req) -> None:
        digest = int(hashlib.blake2b(req.rid.encode(), digest_size=4).hexdigest(), 16)
        spread = (digest % 1000) / 999 * 2 - 1  # -1..1, stable per request
        req.accept = max(1.0, self.accept_len * (1 + self.jitter * spread))
        natural = 180 + digest % 600
        if req.ignore_eos or natural >= req.max_tokens:
            req.target, req.finish = req.max_tokens, "length"
        else:
            req.target, req.finish = natural, "stop"
        self.stats.requests += 1
        self.queue.append(req)
        self._wake.set()

    def abort(self, req: Req) -> None:
        if not req.aborted:
            req.aborted = True
            self.stats.aborted += 1

    @property
    def used_tokens(self) -> int:
        return sum(r.prompt_tokens + r.generated for r in self.running)

    def in_flight(self) -> list[Req]:
        return [r for r in (*self.running, *self.queue) if not r.aborted]

    # ---- loop -----------------------------------------------------------------------------
    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time()
        while True:
            if self.halted:
                await asyncio.Event().wait()
            self.running = [r for r in self.running if not r.aborted]
            if not self.running and not any(not r.aborted for r in self.queue):
                self.queue.clear()
                self._wake.clear()
                self._idle_since = time.monotonic()
                await self._wake.wait()
                if time.monotonic() - self._idle_since >= NEW_RUN_IDLE_S:
                    self.new_run()
                deadline = loop.time()
                continue
            admitted = self._admit()
            if admitted:
                prefill = sum(r.prompt_tokens for r in admitted) / model.PREFILL_TOK_S
                deadline = max(deadline, loop.time() - CATCH_UP_S) + prefill
                await asyncio.sleep(max(0.0, deadline - loop.time()))
                if self.halted:
                    continue
                for req in admitted:
                    self._emit(req, 1)
                self.running = [r for r in self.running if r.generated < r.target and not r.aborted]
                continue
            batch = len(self.running)
            if self.spec and model.oom_at(batch, self.draft_tokens, self.workspace):
                self.halted = True
                self.on_oom(batch)
                continue
            step = self.accept_len / model.per_request_rate(self.rate_c1, batch)
            deadline = max(deadline, loop.time() - max(step, CATCH_UP_S)) + step
            await asyncio.sleep(max(0.0, deadline - loop.time()))
            if self.halted:
                continue
            self._decode_step()

    def _admit(self) -> list[Req]:
        admitted: list[Req] = []
        budget = self.max_total_tokens - self.used_tokens
        while self.queue and len(self.running) < self.max_running:
            req = self.queue[0]
            if req.aborted:
                self.queue.popleft()
                continue
            need = req.prompt_tokens + min(req.target, 512)
            if need > budget and self.running:
                break
            self.queue.popleft()
            budget -= need
            admitted.append(req)
            self.running.append(req)
        if admitted:
            usage = self.used_tokens / max(1, self.max_total_tokens)
            new_tokens = sum(r.prompt_tokens for r in admitted)
            self.stats.prompt_tokens += new_tokens
            self.log(f"Prefill batch, #new-seq: {len(admitted)}, #new-token: {new_tokens}, #cached-token: 0, "
                     f"token usage: {usage:.2f}, #running-req: {len(self.running) - len(admitted)}, "
                     f"#queue-req: {len(self.queue)}, ")
        return admitted

    def _emit(self, req: Req, n: int) -> None:
        n = min(n, req.target - req.generated)
        if n <= 0 or req.aborted:
            return
        req.generated += n
        self.stats.generation_tokens += n
        self._log_tokens += n
        done = req.generated >= req.target
        try:
            req.sink(n, done, req.finish if done else None)
        except Exception:  # a broken client connection must not stop the batch
            req.aborted = True

    def _decode_step(self) -> None:
        batch = [r for r in self.running if not r.aborted]
        for req in batch:
            before = int(req.acc)
            req.acc += req.accept
            self.stats.accepted_tokens += int(req.acc) - before
            self._emit(req, int(req.acc) - before)
            self._log_accepted += req.accept
            self._log_verifies += 1
        self.stats.verify_steps += len(batch)
        self.running = [r for r in self.running if r.generated < r.target and not r.aborted]
        self._log_steps += 1
        if self._log_steps >= self.interval:
            self._decode_line(len(batch))

    def _decode_line(self, batch: int) -> None:
        now = time.monotonic()
        elapsed = max(1e-6, now - self._log_time)
        throughput = self._log_tokens / elapsed
        accept = self._log_accepted / max(1, self._log_verifies)
        self.stats.last_gen_throughput = throughput
        self.stats.last_accept_len = accept
        usage = self.used_tokens / max(1, self.max_total_tokens)
        spec = ""
        if self.spec:
            spec = (f"accept len: {accept:.2f}, "
                    f"accept rate: {model.accept_rate_059(accept, self.draft_tokens):.2f}, ")
        self.log(f"Decode batch, #running-req: {batch}, #token: {self.used_tokens}, token usage: {usage:.2f}, "
                 f"{spec}cuda graph: {self.cuda_graph}, gen throughput (token/s): {throughput:.2f}, "
                 f"#queue-req: {len(self.queue)}")
        self._log_steps = 0
        self._log_tokens = 0
        self._log_accepted = 0.0
        self._log_verifies = 0
        self._log_time = now

    @property
    def avg_spec_accept_length(self) -> float:
        if not self.stats.verify_steps:
            return 0.0
        return self.stats.accepted_tokens / self.stats.verify_steps
