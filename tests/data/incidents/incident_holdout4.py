"""The fourth holdout (`holdout4`): every incident_h4_<theme>.py module, in a fixed order.

**Scored only, never tuned on.** Nobody changing the diagnoser may read these cases' journals or expected.json,
and no label or line here may be changed to fit a diagnoser; benchmarks/bench_diagnosis.py prints their figures
but never lists their misses. The modules were written by sessions that had not read the diagnoser and did not
run it before every case was labelled and committed.
"""

from __future__ import annotations

import incident_h4_engine  # noqa: F401  (each module registers its cases on import)
import incident_h4_fabric  # noqa: F401
import incident_h4_hostres  # noqa: F401
import incident_h4_memory  # noqa: F401
import incident_h4_people  # noqa: F401
import incident_h4_startup  # noqa: F401
from incident_h4_base import CASES4

__all__ = ["CASES4"]
