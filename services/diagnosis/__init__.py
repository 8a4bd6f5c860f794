"""Diagnosis of a unit's journal: why it stopped or keeps restarting, with the cause, the evidence lines and
advice; the side evidence gathered over SSH; restart-loop detection. The same code serves the live bot
and `pitcrew diagnose`.

The names below are the package's public API: other packages import only these."""

from services.diagnosis.gather import (
    MAIN_PID_AFTER_PROBES,
    config_hash,
    exited_pids,
    gather_side_evidence,
    parse_evidence,
    split_sections,
    unit_own_pids,
    without_own_gpu_apps,
)
from services.diagnosis.side import Action, GpuApp, Listener, ProcessInfo, RanBefore, SideEvidence, format_time
from services.diagnosis.verdict import CAUSES, Diagnosis, LoopStatus, detect_restart_loop, diagnose

__all__ = [
    "CAUSES",
    "MAIN_PID_AFTER_PROBES",
    "Action",
    "Diagnosis",
    "GpuApp",
    "Listener",
    "LoopStatus",
    "ProcessInfo",
    "RanBefore",
    "SideEvidence",
    "config_hash",
    "detect_restart_loop",
    "diagnose",
    "exited_pids",
    "format_time",
    "gather_side_evidence",
    "parse_evidence",
    "split_sections",
    "unit_own_pids",
    "without_own_gpu_apps",
]
