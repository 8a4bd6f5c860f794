"""`support.reports`, the body of conftest's report hook wrapper: a failure whose usual report raised CPython 3.11's
AST SystemError is still reported, as a failure of the test, with its frames and its exception."""

from __future__ import annotations

import pluggy
import pytest
from support.reports import plain_on_ast_error, plain_report


def _fails() -> None:
    raise AssertionError("the lease was taken twice")


def test_a_report_that_could_not_be_made_is_made_plainly(request: pytest.FixtureRequest) -> None:
    call = pytest.CallInfo.from_call(_fails, "call")
    hook = plain_on_ast_error(request.node, call)
    next(hook)
    why = SystemError("AST constructor recursion depth mismatch (before=147, after=199)")
    outcome = pluggy.Result.from_call(lambda: (_ for _ in ()).throw(why))
    with pytest.raises(StopIteration):
        hook.send(outcome)
    report = outcome.get_result()
    assert (report.nodeid, report.outcome, report.when) == (request.node.nodeid, "failed", "call")
    text = str(report.longrepr)
    assert "in _fails\n" in text and "AssertionError: the lease was taken twice" in text
    assert "(pytest could not show the source: SystemError: AST constructor recursion depth mismatch" in text
    assert plain_report(request.node, call, why).longrepr == report.longrepr


def test_another_error_of_the_report_is_not_hidden(request: pytest.FixtureRequest) -> None:
    call = pytest.CallInfo.from_call(lambda: None, "call")  # the test passed: nothing to report plainly
    hook = plain_on_ast_error(request.node, call)
    next(hook)
    outcome = pluggy.Result.from_call(lambda: (_ for _ in ()).throw(SystemError("x")))
    with pytest.raises(SystemError):
        hook.send(outcome)
