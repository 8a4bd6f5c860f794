"""One registry per corpus module group: the list its cases go into, the decorator that puts them there and the
`expect` that writes their expected.json with its split, and the SHA-1 split of the first corpus."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Protocol

from incident_kit import Case

Builder = Callable[[], Case]


class Expect(Protocol):
    def __call__(self, c: Case, cause: str, loop: bool, keys: list[str], must_not: list[str] | tuple[str, ...],
                 url: str, notes: str) -> Case: ...


SPLIT_SALT = "incidents-134"  # picked once, before any scoring: ~1/3 holdout and every label in the holdout


def residue_split(cid: str) -> str:
    """The first corpus's split (and the tune cases added later): SHA-1 of salt + id, one residue class of three is
    `holdout`."""
    return "holdout" if int(hashlib.sha1(f"{SPLIT_SALT}:{cid}".encode()).hexdigest(), 16) % 3 == 0 else "tune"


def registry(split: str | Callable[[str], str]) -> tuple[list[Builder], Callable[[Builder], Builder], Expect]:
    """(cases, decorator, expect) for the cases of one split (a name, or a function of the case id)."""
    cases: list[Builder] = []
    split_for = split if callable(split) else (lambda _cid: split)

    def register(fn: Builder) -> Builder:
        cases.append(fn)
        return fn

    def expect(c: Case, cause: str, loop: bool, keys: list[str], must_not: list[str] | tuple[str, ...], url: str,
               notes: str) -> Case:
        c.expected = {
            "cause": cause, "loop": loop, "key_lines": keys, "must_not": sorted(set(must_not)), "url": url,
            "engine": c.engine, "engine_version": c.version, "split": split_for(c.id), "notes": notes,
        }
        return c

    return cases, register, expect
