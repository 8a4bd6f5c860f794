"""Exactly-once journal following against systemd's own journal: 100,000 entries, 20 SSH cuts, 3 rotations.

The simulated host's journal is written by systemd-journal-remote (`simhost.journal_real`) and read by
systemd's `/usr/bin/journalctl` over the sim's SSH server (in a child process). A flood process appends
COUNT entries of the unit (`support.journal_flood --rotate-every`, journald's rotation: the active file
is archived under its journald name and a new one started) while the bot's `JournalFollower` reads them;
the SSH server drops every connection CUTS times, spread over the read. Ground truth is systemd's own
listing of the files afterwards (`journalctl --directory DIR -u UNIT -o json`): the handled entries must
be exactly that list, in that order — checked by count and by the real cursors' (seqnum id, seqnum).

    .venv/bin/python benchmarks/bench_journal_real.py [--entries 100000] [--cuts 20] [--rotations 3]

Prints the figures and exits 1 when an entry was missed or handled twice.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.append(str(ROOT / "tests"))  # the test doubles in tests/support

from support.truth_launch import child_env  # noqa: E402

from services.hosts import HostSpec  # noqa: E402
from services.hosts.ssh import SshHost  # noqa: E402
from services.journal import JournalEntry  # noqa: E402
from services.journal.follower import JournalFollower  # noqa: E402
from services.store import Database  # noqa: E402
from simhost.journal_real import JOURNALCTL, backend, real_dir  # noqa: E402
from simhost.tools.install import install_tools  # noqa: E402

UNIT = "sglang.service"
_SERVER = r"""
import asyncio, signal, sys
from pathlib import Path
from simhost.ssh import start_ssh_server

async def main():
    root = Path(sys.argv[1])
    server = await start_ssh_server(root, env={"SIMHOST_DIR": str(root), "HOME": str(root)},
                                    path_prefix=[root / "bin"])
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    loop.add_signal_handler(signal.SIGUSR1, lambda: loop.create_task(server.drop_connections()))
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    print(server.port, flush=True)
    await stop.wait()
    await server.close()

asyncio.run(main())
"""


def seq_key(cursor: str) -> tuple[str, int]:
    parts = dict(p.split("=", 1) for p in cursor.split(";") if "=" in p)
    return parts["s"], int(parts["i"], 16)


async def run(entries: int, cuts: int, rotations: int, rate: float) -> int:
    with tempfile.TemporaryDirectory(prefix="bench-journal-") as tmp:
        root = Path(tmp) / "host"
        root.mkdir()
        install_tools(root / "bin")
        server = await asyncio.create_subprocess_exec(sys.executable, "-c", _SERVER, str(root), cwd=str(ROOT),
                                                      stdout=asyncio.subprocess.PIPE)
        assert server.stdout is not None
        port = int(await asyncio.wait_for(server.stdout.readline(), 30))
        ssh = root / "ssh"
        host = SshHost(HostSpec(name="sim-1", address="127.0.0.1", port=port, user="pitcrew",
                                client_key=ssh / "client_key", known_hosts=ssh / "known_hosts", unit=UNIT,
                                unit_dir="/etc/systemd/system", server_url="http://127.0.0.1:1"),
                       keepalive_interval=2.0, keepalive_count_max=2)
        db = Database(f"sqlite+aiosqlite:///{Path(tmp) / 'bench.db'}")
        await db.migrate()
        handled: list[JournalEntry] = []

        async def on_entry(entry: JournalEntry) -> None:
            handled.append(entry)

        follower = JournalFollower(db, host, UNIT, on_entry=on_entry, holder="bench", flush_interval_s=0.5,
                                   backoff_initial_s=0.02, backoff_max_s=0.2)
        task = asyncio.create_task(follower.run())
        try:
            while not follower.status().connected:
                await asyncio.sleep(0.02)
            await asyncio.sleep(0.5)
            started = time.monotonic()
            argv = [sys.executable, "-m", "support.journal_flood", str(root), UNIT, str(entries),
                    "--rotate-every", str(entries // (rotations + 1) + 1)]
            if rate > 0:
                argv += ["--rate", str(rate)]
            flood = await asyncio.create_subprocess_exec(*argv, cwd=str(ROOT), stdout=asyncio.subprocess.PIPE,
                                                         env=child_env())
            for n in range(cuts):
                mark = (n + 1) * entries // (cuts + 1)
                while len(handled) <= mark:
                    await asyncio.sleep(0.005)
                server.send_signal(10)  # SIGUSR1: drop every SSH connection mid-stream
            await flood.communicate()
            written_s = time.monotonic() - started
            deadline = time.monotonic() + 120
            while len(handled) < entries and time.monotonic() < deadline:
                await asyncio.sleep(0.02)
            elapsed = time.monotonic() - started
            await asyncio.sleep(0.5)  # anything extra would show up now
        finally:
            follower.stop()
            await asyncio.wait_for(task, 30)
            await host.close()
            server.terminate()
            await server.wait()
            await db.close()
        listing = await asyncio.to_thread(
            subprocess.run, [str(JOURNALCTL), f"--directory={real_dir(root)}", "-u", UNIT, "-o", "json"],
            capture_output=True, text=True, timeout=300, check=True)
        truth_out = listing.stdout
        truth = [json.loads(line)["__CURSOR"] for line in truth_out.splitlines()]
        files = sorted(p.name for p in real_dir(root).glob("*.journal"))
    got = [e.cursor for e in handled]
    keys = [seq_key(c) for c in got]
    dups = len(keys) - len(set(keys))
    missing = len(set(map(seq_key, truth)) - set(keys))
    per_file: dict[str, list[int]] = {}
    for sid, seq in keys:
        per_file.setdefault(sid, []).append(seq)
    contiguous = all(s == list(range(s[0], s[0] + len(s))) for s in per_file.values())
    status = follower.status()
    print(f"journal backend: {backend()} ({JOURNALCTL} reading files written by systemd-journal-remote)")
    print(f"entries written: {entries}, in systemd's listing: {len(truth)}, journal files: {len(files)} "
          f"({len(files) - 1} rotations)")
    print(f"handled: {len(got)}, handled twice: {dups}, missed: {missing}, order == systemd's: {got == truth}, "
          f"seqnums contiguous per file: {contiguous}")
    print(f"SSH cuts: {cuts}, follower reconnects: {status.reconnects}, gaps reported: {status.gaps}")
    print(f"flood wrote for {written_s:.1f} s; all handled after {elapsed:.1f} s "
          f"({len(got) / elapsed:,.0f} entries/s end to end)")
    ok = got == truth and dups == 0 and missing == 0 and len(truth) == entries and len(files) == rotations + 1
    print("RESULT:", "every entry handled exactly once" if ok else "FAILED")
    return 0 if ok else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--cuts", type=int, default=20)
    parser.add_argument("--rotations", type=int, default=3)
    parser.add_argument("--rate", type=float, default=0.0, help="entries per second (0: as fast as possible)")
    args = parser.parse_args()
    if backend() != "journald":
        print("systemd-journal-remote is not installed (apt-get install systemd-journal-remote)", file=sys.stderr)
        return 2
    return asyncio.run(run(args.entries, args.cuts, args.rotations, args.rate))


if __name__ == "__main__":
    sys.exit(main())
