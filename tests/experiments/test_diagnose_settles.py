"""A failed start is diagnosed from its own end: systemd's state can run ahead of the journal on a busy host, and a
diagnosis read before the start's lines arrived judged the start by the stop before it ("operator_action")."""

from __future__ import annotations

from services.experiments.previews import start_has_ended
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
