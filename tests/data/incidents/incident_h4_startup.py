"""holdout4 cases, theme `startup` (see incident_h4_base.py): scored only, never tuned on."""

from __future__ import annotations

from incident_h4_base import Case, case4, expect4  # noqa: F401
