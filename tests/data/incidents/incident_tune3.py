"""Tune cases added in the third round (2026-12-02): new wordings from public reports, labelled by the rules of
docs/DIAGNOSIS.md "Labels" before the diagnoser was run on them. Split by `split_of` like the first corpus
(SHA-1 residue), so about a third of them land in the (retired) holdout."""

from __future__ import annotations

from collections.abc import Callable

from incident_kit import Case

TUNE3: list[Callable[[], Case]] = []


def case_t3(fn: Callable[[], Case]) -> Callable[[], Case]:
    TUNE3.append(fn)
    return fn
