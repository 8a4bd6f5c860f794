"""A failed start whose own output reaches the follower after systemd's failure lines.

journald stamps and orders an entry when it reads it: a service's stdout stream and PID 1's native messages are read
by one event loop, and when both are pending (journald kept waiting on a busy host) the crash's last lines can land
after systemd's ``Main process exited`` and ``Failed with result`` for that same invocation. The follower hands the
monitor entries in journal order and waits while a loop is declared, so the declaring failure's own evidence is not
in the follower's lines yet: the diagnosis of the loop re-reads the unit's journal on the host for it (the demo on
systemd 252 once alerted `unknown — cause not determined` for a `kv_cache_oom` loop, session 11).
"""

from __future__ import annotations

from typing import Any

from incidents_kit import UNIT, JournalHost, start_journal_host, stop_journal_host

from services.events import EventBus
from services.hosts.contract import Host
from services.incidents.monitor import IncidentMonitor
from services.incidents.types import IncidentOpened, IncidentPolicy
from services.journal.entries import JournalEntry, entry_from_obj
from services.store.db import Database

HOST = "sim-1"


def _line(jh: JournalHost, message: str, inv: str, *, manager: bool = False, **extra: Any) -> JournalEntry:
    fields: dict[str, Any] = {"MESSAGE": message, **extra}
    if manager:
        fields.update({"_PID": "1", "SYSLOG_IDENTIFIER": "systemd", "UNIT": UNIT, "INVOCATION_ID": inv,
                       "_SYSTEMD_UNIT": "init.scope", "_TRANSPORT": "journal"})
    else:
        fields.update({"_PID": "4242", "SYSLOG_IDENTIFIER": "python3", "_SYSTEMD_UNIT": UNIT,
                       "_SYSTEMD_INVOCATION_ID": inv, "_TRANSPORT": "stdout"})
    e = entry_from_obj(jh.writer.append(fields))
    assert e is not None
    return e


Read = tuple[list[JournalEntry], list[JournalEntry]]


def _failed_start(jh: JournalHost, inv: str, n: int, *, output_last: bool) -> Read:
    """One failed start written to the host's journal: (what the follower has read, the lines still to come)."""
    started = _line(jh, "Started SGLang server (Qwen3.5-122B-A10B).", inv, manager=True, JOB_TYPE="start")
    loaded = _line(jh, "[2026-12-05 20:37:28 TP0] Load weight end. elapsed=70.13 s, avail mem=9.10 GB", inv)

    def output() -> list[JournalEntry]:
        return [_line(jh, "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. "
                          "Current value: self.server_args.mem_fraction_static=0.88", inv),
                _line(jh, "Received sigquit from a child process. It usually means the child failed.", inv)]

    first = [] if output_last else output()
    systemd = [_line(jh, f"{UNIT}: Main process exited, code=exited, status=1/FAILURE", inv, manager=True),
               _line(jh, f"{UNIT}: Failed with result 'exit-code'.", inv, manager=True)]
    late = output() if output_last else []
    restart = [_line(jh, f"{UNIT}: Scheduled restart job, restart counter is at {n}.", inv, manager=True)]
    if output_last:  # the follower is still inside the declaration when the stream's lines arrive
        return [started, loaded, *systemd], late + restart
    return [started, loaded, *first, *systemd, *restart], []


async def test_the_declaring_failures_own_output_read_after_systemds_lines_still_names_the_cause(
        journal_host: JournalHost, sqlite_db: Database) -> None:
    jh = journal_host
    opened: list[IncidentOpened] = []

    async def keep(ev: IncidentOpened) -> None:
        opened.append(ev)

    bus = EventBus()
    bus.subscribe(IncidentOpened, keep)

    def hosts(name: str) -> Host:
        assert name == HOST
        return jh.host

    m = IncidentMonitor(sqlite_db, bus, hosts, policy=IncidentPolicy(window_s=600))
    read1, _ = _failed_start(jh, "inv-1", 1, output_last=False)
    read2, _ = _failed_start(jh, "inv-2", 2, output_last=True)
    for e in read1 + read2:
        await m.on_entry(HOST, UNIT, e)
    (ev,) = opened
    assert ev.incident.cause == "kv_cache_oom", (ev.incident.cause, ev.incident.summary)
    assert any("Not enough memory" in line for line in ev.incident.evidence), ev.incident.evidence


async def test_a_loop_whose_side_evidence_cannot_be_read_says_so_in_its_summary(tmp_path, sqlite_db: Database) -> None:
    """The host's probes (`systemctl show`, `nvidia-smi`, `ps`, the kernel's journal) did not answer in time: the
    causes they decide (a stale GPU holder, the OOM killer, a taken port) cannot be named, and the alert says why
    instead of a bare `cause not determined` (a live test once alerted `unknown` for a stale GPU holder under load)."""
    slow = tmp_path / "slow-bin"
    slow.mkdir()
    (slow / "nvidia-smi").write_text("#!/bin/bash\nsleep 30\n")
    (slow / "nvidia-smi").chmod(0o755)
    jh = await start_journal_host(tmp_path / "host", extra_bin=slow)
    try:
        opened: list[IncidentOpened] = []

        async def keep(ev: IncidentOpened) -> None:
            opened.append(ev)

        bus = EventBus()
        bus.subscribe(IncidentOpened, keep)
        m = IncidentMonitor(sqlite_db, bus, lambda name: jh.host,
                            policy=IncidentPolicy(window_s=600, evidence_timeout_s=1.0))
        for inv, n in (("inv-1", 1), ("inv-2", 2)):
            read, _ = _failed_start(jh, inv, n, output_last=False)
            for e in read:
                await m.on_entry(HOST, UNIT, e)
        (ev,) = opened
        summary = ev.incident.summary
        assert ev.incident.cause == "kv_cache_oom", (ev.incident.cause, summary)  # the engine's own lines still do
        said = "The host's side evidence (systemctl, nvidia-smi, ps, the kernel's journal) could not be read in full"
        assert said in summary, summary
        assert "did not finish within 1s" in summary, summary
    finally:
        await stop_journal_host(jh)
