"""The status query (services.status): shared, briefly cached unit reads; the joined records; the health counts."""

from __future__ import annotations

import asyncio
from typing import Any

from handlers import views
from services.errors import HostUnreachable
from services.events import EventBus
from services.experiments.results import Results
from services.jobs.runner import JobRunner
from services.status import FleetStatus, HealthQuery, HostStatus
from services.store import AuditActor, AuditLog, OutboxStore
from services.store.db import Database
from services.units.deploy import UnitState

UNIT = ("[Unit]\nDescription=SGLang\n\n[Service]\nExecStart=/usr/bin/python3 -m sglang.launch_server "
        "--model-path /models/m --speculative-algorithm EAGLE --speculative-num-steps 5\n")


class CountingOps:
    """A host's unit seen through SSH, counting the reads (each would be one SSH command)."""

    def __init__(self, fail: int = 0) -> None:
        self.unit = "sglang.service"
        self.reads = 0
        self.fail = fail
        self.text = UNIT
        self.invocation = "inv"
        self.served = ""  # the version the running server names ("" : it names none)
        self.version_asks: list[str] = []
        self.version_delay = 0.0

    async def state(self) -> UnitState:
        self.reads += 1
        await asyncio.sleep(0.05)  # a round trip: concurrent callers arrive while it is in flight
        if self.fail:
            self.fail -= 1
            raise HostUnreachable("gpu-1: connection refused")
        return UnitState("active", "running", "success", 4242, 2, self.invocation)

    async def read_unit(self) -> str:
        return self.text

    async def served_version(self, engine: str) -> str:
        self.version_asks.append(engine)
        await asyncio.sleep(self.version_delay)
        return self.served


async def _fleet(db: Database, ops: CountingOps, ttl_s: float = 1.0) -> tuple[FleetStatus, JobRunner]:
    async def never(ctx: Any) -> Any:
        raise AssertionError("no job runs here")

    jobs = JobRunner(db, EventBus(), AuditLog(db), holder="t", host_names=["gpu-1"], pipeline=never)
    fleet = FleetStatus(ops=lambda host: ops, jobs=jobs, results=Results(db), ttl_s=ttl_s)  # type: ignore[arg-type, return-value]
    return fleet, jobs


async def test_concurrent_status_callers_share_one_read_within_the_ttl(db: Database) -> None:
    ops = CountingOps()
    fleet, _ = await _fleet(db, ops, ttl_s=30.0)
    got = await asyncio.gather(*(fleet.host("gpu-1") for _ in range(50)))
    assert ops.reads == 1
    assert {s.state for s in got} == {got[0].state} and got[0].state is not None
    assert (got[0].state.active_state, got[0].state.restarts, got[0].state.config) == ("active", 2, "steps 5")
    brief = CountingOps()
    fleet, _ = await _fleet(db, brief, ttl_s=0.2)
    await fleet.unit_state("gpu-1")
    await fleet.unit_state("gpu-1")
    assert brief.reads == 1  # still fresh
    await asyncio.sleep(0.25)
    await fleet.unit_state("gpu-1")
    assert brief.reads == 2  # stale: read again


async def test_a_failed_read_is_reported_and_not_reused(db: Database) -> None:
    ops = CountingOps(fail=1)
    fleet, _ = await _fleet(db, ops)
    down = await fleet.host("gpu-1")
    assert down.state is None and down.unreachable and "connection refused" in down.unreachable
    up = await fleet.host("gpu-1")
    assert ops.reads == 2 and up.state is not None and up.unreachable is None


async def test_status_joins_jobs_and_renders_the_table(db: Database) -> None:
    ops = CountingOps()
    fleet, jobs = await _fleet(db, ops)
    actor = AuditActor("U1", "ann", "test", "C1")
    for _ in range(2):
        await jobs.submit(kind="bench", host="gpu-1", params={}, actor=actor, command_text="bench",
                          needs_confirmation=False)
    (s,) = await fleet.hosts(["gpu-1"])
    assert (s.running_job, s.queued_jobs, s.incidents, s.last_result) == (None, 2, (), None)
    table = views.status_table([s, HostStatus("gpu-2", "sglang.service", None, "timed out", None, 0, (), None)])
    assert table.rows[0] == ("gpu-1", "sglang.service", "SGLang", "active/running", "2", "steps 5", "—, 2 queued",
                             "—", "—")
    assert table.rows[1][2:6] == ("—", "unreachable (timed out)", "—", "—")


VLLM_UNIT = ("[Unit]\nDescription=vLLM\n\n[Service]\nExecStart=/opt/vllm/bin/vllm serve /models/m "
             "--gpu-memory-utilization 0.9\n")


async def test_status_names_the_engine_and_the_version_it_logged_at_its_last_start(db: Database) -> None:
    ops = CountingOps()
    ops.text = VLLM_UNIT
    fleet, _ = await _fleet(db, ops)
    (s,) = await fleet.hosts(["gpu-1"])
    assert s.state is not None and s.state.engine == "vllm" and s.engine == "vLLM"
    results = Results(db)
    await results.save(host="gpu-1", model="m", label="mem 0.9", result={"levels": []}, ok=True, job_id=None,
                       revision_id=None, capacity={"engine": "vllm", "engine_version": "0.11.0"})
    (s,) = await fleet.hosts(["gpu-1"])
    assert s.engine == "vLLM 0.11.0"
    assert views.status_table([s]).rows[0][2] == "vLLM 0.11.0"
    ops.text = UNIT  # the unit now launches SGLang: the vLLM version no longer applies
    await asyncio.sleep(0)
    fleet.ttl_s = 0.0
    (s,) = await fleet.hosts(["gpu-1"])
    assert s.engine == "SGLang"


LLAMA_UNIT = ("[Unit]\nDescription=llama.cpp\n\n[Service]\nExecStart=/opt/llama.cpp/bin/llama-server "
              "-m /models/m.gguf --port 8080\n")


async def test_without_a_recorded_start_status_asks_the_running_server_once_per_invocation(db: Database) -> None:
    ops = CountingOps()
    ops.text, ops.served, ops.version_delay = LLAMA_UNIT, "b1 (0c1e57098)", 0.05
    fleet, _ = await _fleet(db, ops, ttl_s=0.0)
    got = await asyncio.gather(*(fleet.host("gpu-1") for _ in range(20)))
    assert {s.engine for s in got} == {"llama.cpp b1 (0c1e57098)"}
    assert ops.version_asks == ["llamacpp"]  # concurrent callers share one ask
    await fleet.host("gpu-1")
    assert ops.version_asks == ["llamacpp"]  # the same invocation: not asked again
    ops.invocation, ops.served = "inv-2", "b2 (1234567)"  # restarted with another build
    (s,) = await fleet.hosts(["gpu-1"])
    assert s.engine == "llama.cpp b2 (1234567)" and len(ops.version_asks) == 2
    await Results(db).save(host="gpu-1", model="m", label="x", result={"levels": []}, ok=True, job_id=None,
                           revision_id=None, capacity={"engine": "llamacpp", "engine_version": "b9 (abcdef0)"})
    (s,) = await fleet.hosts(["gpu-1"])
    assert s.engine == "llama.cpp b9 (abcdef0)" and len(ops.version_asks) == 2  # a recorded start's version wins


async def test_a_server_that_names_no_version_in_time_shows_the_engine_alone(db: Database) -> None:
    ops = CountingOps()
    ops.text, ops.served, ops.version_delay = LLAMA_UNIT, "b1 (0c1e57098)", 10.0  # longer than status waits
    fleet, _ = await _fleet(db, ops, ttl_s=0.0)
    t0 = asyncio.get_running_loop().time()
    (s,) = await fleet.hosts(["gpu-1"])
    assert s.engine == "llama.cpp" and asyncio.get_running_loop().time() - t0 < 6.0
    ops.served, ops.version_delay = "", 0.0  # it answers, naming none: asked again only after a while
    (s,) = await fleet.hosts(["gpu-1"])
    assert s.engine == "llama.cpp" and len(ops.version_asks) == 1


async def test_health_counts_jobs_incidents_and_outbox(db: Database) -> None:
    query = HealthQuery(db, OutboxStore(db))
    empty = await query.counts()
    assert (empty.jobs, empty.incidents_open, empty.outbox_depth) == ({}, 0, 0)
    _, jobs = await _fleet(db, CountingOps())
    actor = AuditActor("U1", "ann", "test", "C1")
    await jobs.submit(kind="bench", host="gpu-1", params={}, actor=actor, command_text="bench",
                      needs_confirmation=True)
    await jobs.submit(kind="bench", host="gpu-1", params={}, actor=actor, command_text="bench",
                      needs_confirmation=False)
    counts = await query.counts()
    assert counts.jobs == {"awaiting_confirmation": 1, "queued": 1}


async def test_status_names_the_engine_and_the_last_results_headline_figure(db: Database) -> None:
    fleet, _ = await _fleet(db, CountingOps())
    results = Results(db)
    levels = [{"concurrency": 4, "requests": 8, "decode_tok_s_per_request": {"p50": 190.0},
               "decode_tok_s_ci95": [180.0, 200.0]},
              {"concurrency": 1, "requests": 8, "decode_tok_s_per_request": {"p50": 277.0},
               "decode_tok_s_ci95": [271.5, 282.5]}]
    run = await results.save(host="gpu-1", model="m", label="steps 5", result={"levels": levels}, ok=True)
    (s,) = await fleet.hosts(["gpu-1"])
    assert s.state is not None and s.state.engine == "sglang"
    assert s.last_result is not None
    assert (s.last_result.run_id, s.last_result.label, s.last_result.ok) == (run.id, "steps 5", True)
    # the lowest concurrency measured, with its bootstrap interval
    assert (s.last_result.concurrency, s.last_result.decode_tok_s, s.last_result.decode_ci) == (1, 277.0,
                                                                                                 (271.5, 282.5))
    await results.save(host="gpu-1", model="m", label="steps 6", result={"levels": []}, ok=False)
    (s,) = await fleet.hosts(["gpu-1"])
    assert s.last_result is not None and (s.last_result.label, s.last_result.ok, s.last_result.decode_tok_s) == (
        "steps 6", False, None)
