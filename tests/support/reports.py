"""A failing test's report without its source: CPython 3.11's AST builder can raise `SystemError: AST constructor
recursion depth mismatch` (python/cpython#106905, pytest-dev/pytest#10763) while pytest parses a test's source to
show it. In an xdist worker that error escapes report creation as an INTERNALERROR: the worker dies and the failing
test is never named (session 13: phase 1 ended "Unexpectedly no active workers available"). `tests/conftest.py` then
reports the failure with this plain text instead: the test, its frames (file, line, function) and its exception."""

from __future__ import annotations

import traceback
from collections.abc import Generator
from typing import Any

import pytest


def plain_report(item: pytest.Item, call: pytest.CallInfo[None], why: BaseException) -> pytest.TestReport:
    """The `call` phase's failure of `item` as plain text (no source read), saying why the usual report was not made."""
    excinfo = call.excinfo
    assert excinfo is not None
    frames = "".join(f"{f.filename}:{f.lineno} in {f.name}\n" for f in traceback.extract_tb(excinfo.tb))
    text = (f"{frames}{''.join(traceback.format_exception_only(excinfo.type, excinfo.value))}"
            f"(pytest could not show the source: {type(why).__name__}: {why})")
    return pytest.TestReport(item.nodeid, item.location, dict.fromkeys(item.keywords, 1), "failed", text, call.when,
                             duration=call.duration, start=call.start, stop=call.stop)


def plain_on_ast_error(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, None]:
    """The body of conftest's `pytest_runtest_makereport` hook wrapper: a failure whose report raised a SystemError
    is reported by `plain_report`; any other error of the report, or one for a test that did not fail, goes on."""
    outcome = yield
    try:
        outcome.get_result()
    except SystemError as exc:
        if call.excinfo is None:
            raise
        outcome.force_result(plain_report(item, call, exc))
