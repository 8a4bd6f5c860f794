"""holdout3 cases, theme `fabric` (see incident_h3_base.py): scored only, never tuned on."""

from __future__ import annotations

from incident_h3_base import Case, case3, expect3  # noqa: F401
