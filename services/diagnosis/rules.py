"""The ordered rules of diagnosis: `evaluate()` applies them to the invocations — first the failing
ones (ended badly without a stop request, most specific cause first, in `services.diagnosis.causes`),
then stops, then health — and returns a `Finding`. A rule only fires on evidence it can quote; otherwise
the answer is `unknown`."""

from __future__ import annotations

from services.diagnosis.causes import failing_rules
from services.diagnosis.invocations import Finding, Invocation, short_time
from services.diagnosis.side import SideEvidence
from services.journal import JournalEntry


def evaluate(
    unit: str, invocations: list[Invocation], kernel: list[JournalEntry], side: SideEvidence, looping: bool
) -> Finding:
    """Apply the rules in order and return the first that the evidence supports."""
    failing = [i for i in invocations if i.failed]
    if failing:
        return _failing(unit, failing, kernel, side, looping)
    stopped = [i for i in invocations if i.stop_requested_us is not None]
    if stopped:
        finding = _stopped(unit, stopped[-1])
        last = invocations[-1]
        serving_after = (
            last is not stopped[-1] and not last.ended and (last.ready_us is not None or last.decode_entries)
        )
        if finding.cause == "operator_action" and serving_after:
            ran = last.ran_before()
            return Finding(
                "healthy",
                0.85,
                f"{unit} is serving"
                + (f" ({ran.describe()})" if ran else "")
                + " after a deliberate restart: "
                + finding.summary,
                finding.evidence,
                "Nothing to do.",
                ran_before=ran,
            )
        return finding
    if not invocations:
        return Finding(
            "unknown",
            0.2,
            f"No entries of {unit} in the window.",
            (),
            f"Export the unit's journal with `journalctl -u {unit} -o json` and try again.",
        )
    last = invocations[-1]
    suppressed = [ev for i in invocations for ev in i.suppressed]
    if suppressed and last.ready_us is None:
        return Finding(
            "unknown",
            0.3,
            f"journald dropped messages of {unit} (rate limit); nothing conclusive.",
            tuple(ev.message for ev in suppressed[:2]),
            "Raise journald's RateLimitBurst and look again.",
        )
    ran = last.ran_before()
    conf = 0.9 if last.ready_us is not None or ran else 0.6
    state = "serving" if last.ready_us is not None or ran else "starting (not yet ready)"
    summary = f"No failure of {unit} in the window; it is {state}" + (f": {ran.describe()}." if ran else ".")
    return Finding("healthy", conf, summary, (), "Nothing to do.", ran_before=ran)


def _stopped(unit: str, inv: Invocation) -> Finding:
    ran = inv.ran_before()
    act = inv.stop_action
    if act is not None:
        asked = "" if act.who == "pitcrew" else f" asked by {act.who}"
        detail = f" ({act.detail})" if act.detail else ""
        who = f"pitcrew's own {act.action}{asked} at {short_time(int(act.at.timestamp() * 1e6))}{detail}"
    else:
        who = f"a stop request at {short_time(inv.stop_requested_us or inv.end_us)} (no recorded pitcrew action)"
    before = f" Before that {ran.describe()}." if ran else ""
    killed = [ev for ev in inv.events if ev.kind == "killing" and ev.signal == "KILL"]
    if inv.stop_timeout is not None or inv.result == "timeout" or killed:
        waited = ""
        if inv.stop_timeout is not None and inv.stopping is not None:
            waited = f" after {(inv.stop_timeout.realtime_us - inv.stopping.realtime_us) / 1e6:.0f} s"
        lines = [
            ev.message
            for ev in inv.events
            if ev.kind in {"stopping", "stop_timeout", "main_exited", "failed_result"}
        ]
        drain = [e.message for e, s in inv.sig_lines if "graceful_stop" in s][:1]
        return Finding(
            "stop_timeout_sigkill",
            0.95 if act else 0.85,
            f"Not a crash: {unit} was stopped by {who}; it did not exit within the stop timeout and systemd "
            f"sent SIGKILL{waited}.{before}",
            tuple(lines[:2] + drain + lines[2:]),
            "No fault in the configuration. Let the stop drain first (stop the load, or raise TimeoutStopSec "
            "above the longest request) and never overlap one round's teardown with the next start.",
            ran_before=ran,
        )
    lines = [
        ev.message
        for ev in inv.events
        if ev.kind in {"stopping", "main_exited", "deactivated", "failed_result", "stopped"}
    ]
    return Finding(
        "operator_action",
        0.9 if act else 0.7,
        f"{unit} was stopped deliberately by {who} and shut down cleanly.{before}",
        tuple(lines[:4]),
        "Nothing to fix: start the unit again if it should be serving.",
        ran_before=ran,
    )


def _failing(
    unit: str, failing: list[Invocation], kernel: list[JournalEntry], side: SideEvidence, looping: bool
) -> Finding:
    return failing_rules(unit, failing, kernel, side, looping)
