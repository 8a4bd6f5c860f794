"""`doctor`: whether each configured host is set up the way pitcrew needs it (SSH and its pinned key, the unit and
its engine, the engine's flags, the sudo rule, the journal, GPUs, disk, the server's /health), each a ✓ / ⚠ / ✗
line with the exact fix. Read-only: it changes nothing on any host.

The names below are the package's public API: other packages import only these."""

from services.doctor.checks import DEFAULT_TIMEOUT_S, Doctor
from services.doctor.report import HOSTS_DOC, DoctorReport, Finding, HostReport

__all__ = ["DEFAULT_TIMEOUT_S", "HOSTS_DOC", "Doctor", "DoctorReport", "Finding", "HostReport"]
