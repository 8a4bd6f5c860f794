"""The three steps of a diagnosis in one place: decide (the ordered decision table of
`services.diagnosis.decide`), select the evidence (`services.diagnosis.evidence`), and word it
(`services.diagnosis.wording`). `evaluate()` returns a `Finding`."""

from __future__ import annotations

from services.diagnosis.decide import Context, decide
from services.diagnosis.evidence import select
from services.diagnosis.invocations import Finding, Invocation
from services.diagnosis.side import SideEvidence
from services.diagnosis.wording import words_for
from services.journal import JournalEntry


def evaluate(
    unit: str, invocations: list[Invocation], kernel: list[JournalEntry], side: SideEvidence, looping: bool
) -> Finding:
    """Decide the label, pick the evidence lines and word the answer."""
    ctx = Context(unit, invocations, kernel, side)
    label, match = decide(ctx)
    words = words_for(label, ctx, match)
    phase = ctx.focus.phase if ctx.focus is not None and ctx.mode == "failure" else None
    return Finding(
        label,
        match.confidence,
        words.summary,
        select(ctx, label, match),
        words.recommendation,
        ran_before=words.ran_before,
        config_change=words.config_change,
        stale_pids=words.stale_pids,
        phase=phase,
    )
