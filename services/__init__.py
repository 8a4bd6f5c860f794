"""The domain: hosts, units, experiments, benchmarks, journals, diagnosis, incidents, audit, storage.

Nothing here knows about chat: no Slack, no handlers, no bot. Imports flow bot -> handlers -> services.
"""

import sys

# httpx's package imports its own command line (`httpx._main`: click, rich and pygments) whenever click and rich are
# installed, as they are for pitcrew's CLI: ~37 ms of CPU in every process that imports httpx (the benchmark child,
# started for every benchmark, among them). pitcrew never runs httpx's command line; marked absent before any module
# of this package imports httpx, httpx falls back to its stub `main` (its own `except ImportError`).
sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]
