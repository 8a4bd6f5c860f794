"""The holdout3 registry its case modules (`incident_h3_<theme>.py`) write into.

Each theme module was written by a helper session that had not read the diagnoser (services/diagnosis,
services/journal), did not run it, and labelled every case by docs/DIAGNOSIS.md "Labels" before it was committed.
incident_holdout3.py imports them all; incident_build.py writes them with the others.
"""

from __future__ import annotations

from incident_kit import Case
from incident_registry import registry

SPLIT = "holdout3"
CASES3, case3, expect3 = registry(SPLIT)

__all__ = ["CASES3", "SPLIT", "Case", "case3", "expect3"]
