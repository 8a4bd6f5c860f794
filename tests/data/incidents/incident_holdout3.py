"""The third holdout (`holdout3`): every incident_h3_<theme>.py module, in a fixed order.

**Scored only, never tuned on.** Nobody changing the diagnoser may read these cases' journals or expected.json,
and no label or line here may be changed to fit a diagnoser; benchmarks/bench_diagnosis.py prints their figures
but never lists their misses. The modules were written by sessions that had not read the diagnoser and did not
run it before every case was labelled and committed.
"""

from __future__ import annotations

import incident_h3_engine  # noqa: F401  (each module registers its cases on import)
import incident_h3_fabric  # noqa: F401
import incident_h3_hostres  # noqa: F401
import incident_h3_memory  # noqa: F401
import incident_h3_people  # noqa: F401
import incident_h3_startup  # noqa: F401
from incident_h3_base import CASES3

__all__ = ["CASES3"]
