"""A failed start is diagnosed from its own end: systemd's state can run ahead of the journal on a busy host, and a
diagnosis read before the start's lines arrived judged the start by the stop before it ("operator_action")."""

from __future__ import annotations

from services.experiments.previews import judged_start, start_has_ended
from services.journal import entry_from_obj

UNIT = "llama-server.service"


def _sd(n: int, message: str) -> object:
    return entry_from_obj({"__CURSOR": f"c{n}", "__REALTIME_TIMESTAMP": str(1_000_000 * n), "_PID": "1",
                           "SYSLOG_IDENTIFIER": "systemd", "UNIT": UNIT, "MESSAGE": message})


STOP = [_sd(1, f"Stopping {UNIT} - llama.cpp server..."), _sd(2, f"{UNIT}: Deactivated successfully."),
        _sd(3, f"Stopped {UNIT} - llama.cpp server.")]
STARTED = _sd(4, f"Started {UNIT} - llama.cpp server.")


def test_a_start_without_its_end_in_the_journal_has_not_ended() -> None:
    assert start_has_ended(STOP, UNIT)  # no start to wait for
    assert not start_has_ended([*STOP, STARTED], UNIT)  # the stop before it is not its end
    assert start_has_ended([*STOP, STARTED, _sd(5, f"{UNIT}: A process of this unit has been killed by the OOM "
                                                   "killer.")], UNIT)
    assert start_has_ended([*STOP, STARTED, _sd(5, f"{UNIT}: Main process exited, code=killed, status=9/KILL")],
                           UNIT)
    assert start_has_ended([*STOP, STARTED, _sd(5, f"{UNIT}: Failed with result 'exit-code'.")], UNIT)


def test_the_start_judged_is_the_first_after_the_deliberate_stop_not_the_restart_loop_after_it() -> None:
    crashed = [*STOP, STARTED, _sd(5, f"{UNIT}: Main process exited, code=exited, status=1/FAILURE"),
               _sd(6, f"{UNIT}: Scheduled restart job, restart counter is at 1."), _sd(7, f"Stopped {UNIT}."),
               _sd(8, f"Started {UNIT} - llama.cpp server.")]
    assert start_has_ended(crashed, UNIT)  # the restart that has not ended yet is not waited for
    assert start_has_ended([STARTED], UNIT)  # no deliberate stop in the window: nothing to wait for


def _inv(n: int, message: str, inv: str, *, pid: str = "1") -> object:
    fields = {"__CURSOR": f"c{n}", "__REALTIME_TIMESTAMP": str(1_000_000 * n), "_PID": pid, "MESSAGE": message,
              "SYSLOG_IDENTIFIER": "systemd" if pid == "1" else "llama-server"}
    fields.update({"UNIT": UNIT, "INVOCATION_ID": inv} if pid == "1" else
                  {"_SYSTEMD_UNIT": UNIT, "_SYSTEMD_INVOCATION_ID": inv})
    return entry_from_obj(fields)


def test_the_restarts_after_the_judged_start_are_left_out_and_its_own_late_lines_kept() -> None:
    before = [_inv(1, "serving", "i0", pid="40"), _inv(2, f"Stopping {UNIT} - llama.cpp server...", "i0")]
    judged = [_inv(3, f"Started {UNIT} - llama.cpp server.", "i1"), _inv(4, "server is listening", "i1", pid="41"),
              _inv(5, f"{UNIT}: Main process exited, code=killed, status=6/ABRT", "i1"),
              _inv(6, "CUDA error: out of memory (flushed after the exit line)", "i1", pid="41"),
              _inv(7, f"{UNIT}: Scheduled restart job, restart counter is at 1.", "i1")]
    restarts = [_inv(8, f"Started {UNIT} - llama.cpp server.", "i2"), _inv(9, "failed to allocate KV", "i2", pid="42"),
                _inv(10, f"{UNIT}: Main process exited, code=exited, status=1/FAILURE", "i2"),
                _inv(11, f"Started {UNIT} - llama.cpp server.", "i3"),
                _inv(12, "failed to allocate KV", "i3", pid="43")]
    kept = judged_start([*before, *judged, *restarts], UNIT)
    assert [e.message for e in kept] == [e.message for e in [*before, *judged]]  # type: ignore[attr-defined]
    assert judged_start([*before, *judged], UNIT) == [*before, *judged]  # read before the first restart: the same
    assert judged_start(restarts, UNIT) == restarts  # no deliberate stop in the window: nothing to leave out
