"""`support.freeze_watch`: a process whose Python stops for longer than the limit (one thread keeps the GIL, as a
thread blocked in C with the GIL held would) gets every thread's stack written, naming the frame that holds it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = """
import sys, time
from pathlib import Path
sys.path.insert(0, {support!r})
sys.setswitchinterval(10)  # longer than the freeze: the busy thread keeps the GIL
from support import freeze_watch
freeze_watch.start(Path({where!r}), after_s=1.0)
def frozen_here():
    end = time.monotonic() + 2.5
    while time.monotonic() < end:  # Python runs, but only in this thread: the re-arming thread waits for the GIL
        sum(range(10))
frozen_here()
"""


def test_a_process_that_stops_running_python_for_the_limit_gets_its_stacks_written(tmp_path: Path) -> None:
    support = str(Path(__file__).resolve().parents[1])
    code = SCRIPT.format(support=support, where=str(tmp_path))
    subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30, check=True)
    (dump,) = tmp_path.glob("*.txt")
    text = dump.read_text()
    assert "Timeout (0:00:01)!" in text and "frozen_here" in text, text
