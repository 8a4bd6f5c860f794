"""Where a sim tool writes and which host it serves: its process's own stdout, stderr and `SIMHOST_DIR` when it runs
as a command, one call's own when the simulated host's tool server runs it (`simhost.tools.serve`).

Stdlib only and tiny: every tool start imports it.
"""

from __future__ import annotations

import os
import sys
from contextvars import ContextVar

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import TextIO

# (stdout, stderr, SIMHOST_DIR) of the call the tool server runs in this context; None: a command of its own
_CALL: ContextVar[tuple[TextIO, TextIO, str] | None] = ContextVar("simhost_tool_call", default=None)


def out() -> TextIO:
    call = _CALL.get()
    return sys.stdout if call is None else call[0]


def err() -> TextIO:
    call = _CALL.get()
    return sys.stderr if call is None else call[1]


def sim_dir() -> str | None:
    """The simulated host's state directory (`SIMHOST_DIR`); None when the tool runs outside one."""
    call = _CALL.get()
    return os.environ.get("SIMHOST_DIR") if call is None else call[2]


def serving(stdout: TextIO, stderr: TextIO, root: str) -> None:
    """Make this context's tool calls write to `stdout`/`stderr` and serve the host in `root` (the tool server
    runs each call in a context of its own)."""
    _CALL.set((stdout, stderr, root))
