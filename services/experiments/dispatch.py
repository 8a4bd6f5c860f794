"""Which pipeline runs a job of each kind: the one entry point the job runner calls."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from services.errors import UserInputError
from services.experiments import maintenance
from services.experiments.pipeline import Experiments
from services.experiments.sweeps import run_sweep
from services.experiments.tune import run_tune
from services.jobs import JobContext

JobPipeline = Callable[[Experiments, JobContext], Awaitable[tuple[str, dict[str, Any]]]]

PIPELINES: dict[str, JobPipeline] = {
    "try": lambda exp, ctx: exp.run_try(ctx),
    "bench": maintenance.run_bench,
    "rollback": maintenance.run_rollback,
    "kill-stale": maintenance.run_kill_stale,
    "sweep": run_sweep,
    "tune": run_tune,
}


def job_pipeline(exp: Experiments) -> Callable[[JobContext], Awaitable[tuple[str, dict[str, Any]]]]:
    """The callable the `JobRunner` runs for each job: the pipeline of the job's kind."""

    async def run(ctx: JobContext) -> tuple[str, dict[str, Any]]:
        pipeline = PIPELINES.get(ctx.job.kind)
        if pipeline is None:
            raise UserInputError(f"unknown job kind {ctx.job.kind}")
        return await pipeline(exp, ctx)

    return run


def host_recovery(exp: Experiments) -> tuple[Callable[[JobContext], Awaitable[str]],
                                               Callable[[JobContext], Awaitable[str]]]:
    """The job runner's two repair callables: after a job was cut off (read the host, restore the last
    known-good revision if it does not serve) and at a shutdown past its bound (restore the pre-job one)."""

    async def recover(ctx: JobContext) -> str:
        return await maintenance.recover_host(exp, ctx)

    async def restore(ctx: JobContext) -> str:
        return await maintenance.restore_before(exp, ctx)

    return recover, restore
