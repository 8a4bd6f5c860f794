"""Jobs: rows in the database run FIFO per host under a lease, with recorded steps, cancellation and the
events that tell the chat about them.

The names below are the package's public API: other packages import only these."""

from services.jobs.context import JobContext
from services.jobs.events import JobFinished, JobProgressed, JobRef, JobResultsReady, JobStarted
from services.jobs.runner import LEASE_TTL_S, JobRunner

__all__ = [
    "LEASE_TTL_S",
    "JobContext",
    "JobFinished",
    "JobProgressed",
    "JobRef",
    "JobResultsReady",
    "JobRunner",
    "JobStarted",
]
