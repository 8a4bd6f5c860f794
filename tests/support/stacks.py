"""Where a task stands when a test's wait for it runs out: the task's own stack (the coroutine chain it awaits in) and
every thread's (aiosqlite runs each connection in a thread of its own), as text for the failure message.

Why: a journal follower's final cursor flush — one SQLite write of milliseconds — twice went past a 10 s wait after
`stop()` (sessions 13 and 14), with no freeze dump (`support.freeze_watch`): the loop ran, the flush waited on
something. `wait_for` cancels the task before its caller can look; `finish_within` looks first."""

from __future__ import annotations

import asyncio
import sys
import threading
import traceback
from typing import Any


def task_stack(task: asyncio.Task[Any]) -> str:
    """The coroutine chain `task` is suspended in, innermost last."""
    lines: list[str] = []
    coro: Any = task.get_coro()
    while coro is not None:
        frame = getattr(coro, "cr_frame", None) or getattr(coro, "gi_frame", None) or getattr(coro, "ag_frame", None)
        if frame is not None:
            lines.append(f"  {frame.f_code.co_filename}:{frame.f_lineno} in {frame.f_code.co_name}")
        nxt = getattr(coro, "cr_await", None) or getattr(coro, "gi_yieldfrom", None) or getattr(coro, "ag_await", None)
        if nxt is not None and type(nxt).__name__ == "async_generator_asend" and frame is not None:
            # an `asynccontextmanager`'s __aenter__/__aexit__ awaits its generator through an opaque asend object
            nxt = getattr(frame.f_locals.get("self"), "gen", None)
        coro = nxt
    return "\n".join(lines) or "  (no frame: done or not started)"


def thread_stacks() -> str:
    """Every thread's stack but the caller's, innermost last."""
    names = {t.ident: t.name for t in threading.enumerate()}
    me = threading.get_ident()
    out = []
    for ident, frame in sys._current_frames().items():
        if ident == me:
            continue
        stack = "".join(traceback.format_stack(frame)[-6:])
        out.append(f"-- thread {names.get(ident, ident)}\n{stack}")
    return "\n".join(out)


async def finish_within(task: asyncio.Task[Any], timeout: float, what: str) -> Any:
    """`task`'s result once it ends within `timeout` s; else an AssertionError that says where it and every thread
    stood at that moment (the task is cancelled after the look)."""
    try:
        return await asyncio.wait_for(asyncio.shield(task), timeout)
    except TimeoutError:
        where = task_stack(task)
        me = asyncio.current_task()
        others = "\n".join(f"-- {t.get_name()}\n{task_stack(t)}" for t in asyncio.all_tasks()
                           if t is not task and t is not me)
        threads = thread_stacks()
        task.cancel()
        raise AssertionError(f"{what} did not end within {timeout} s. The task awaits in:\n{where}\n"
                             f"The other tasks (a task awaited through `shield` runs as one of them):\n{others}\n"
                             f"The threads:\n{threads}") from None
