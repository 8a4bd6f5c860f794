"""One registry per corpus module group: the list its cases go into, the decorator that puts them there and the
`expect` that writes their expected.json with a fixed split (the holdout modules use it; see incident_h3_base.py
and incident_h4_base.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from incident_kit import Case

Builder = Callable[[], Case]


class Expect(Protocol):
    def __call__(self, c: Case, cause: str, loop: bool, keys: list[str], must_not: list[str] | tuple[str, ...],
                 url: str, notes: str) -> Case: ...


def registry(split: str) -> tuple[list[Builder], Callable[[Builder], Builder], Expect]:
    """(cases, decorator, expect) for the cases of one split."""
    cases: list[Builder] = []

    def register(fn: Builder) -> Builder:
        cases.append(fn)
        return fn

    def expect(c: Case, cause: str, loop: bool, keys: list[str], must_not: list[str] | tuple[str, ...], url: str,
               notes: str) -> Case:
        c.expected = {
            "cause": cause, "loop": loop, "key_lines": keys, "must_not": sorted(set(must_not)), "url": url,
            "engine": c.engine, "engine_version": c.version, "split": split, "notes": notes,
        }
        return c

    return cases, register, expect
