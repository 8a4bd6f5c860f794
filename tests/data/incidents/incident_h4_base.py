"""The holdout4 registry its case modules (`incident_h4_<theme>.py`) write into.

Each theme module was written by a helper session that had not read the diagnoser (services/diagnosis,
services/journal), did not run it, and labelled every case by docs/DIAGNOSIS.md "Labels" before it was committed.
incident_holdout4.py imports them all; incident_build.py writes them with the others.
"""

from __future__ import annotations

from incident_kit import Case
from incident_registry import registry

SPLIT = "holdout4"
CASES4, case4, expect4 = registry(SPLIT)

__all__ = ["CASES4", "SPLIT", "Case", "case4", "expect4"]
