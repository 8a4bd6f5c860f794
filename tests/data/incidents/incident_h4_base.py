"""The fourth holdout (`holdout4`) of the incident corpus: the registry its case modules write into.

Each `incident_h4_<theme>.py` module was written by a helper session that had not read the diagnoser
(services/diagnosis, services/journal), did not run it, and labelled every case by docs/DIAGNOSIS.md "Labels"
before it was committed. incident_holdout4.py imports them all; incident_build.py writes them with the others.
"""

from __future__ import annotations

from collections.abc import Callable

from incident_kit import Case

CASES4: list[Callable[[], Case]] = []
SPLIT = "holdout4"


def case4(fn: Callable[[], Case]) -> Callable[[], Case]:
    CASES4.append(fn)
    return fn


def expect4(c: Case, cause: str, loop: bool, keys: list[str], must_not: list[str] | tuple[str, ...], url: str,
            notes: str) -> Case:
    c.expected = {
        "cause": cause, "loop": loop, "key_lines": keys, "must_not": sorted(set(must_not)), "url": url,
        "engine": c.engine, "engine_version": c.version, "split": SPLIT, "notes": notes,
    }
    return c
