"""Fleet: one bot process follows the journals of 100 hosts at once; its memory and its alert latency.

The hosts are lightweight simulated SSH endpoints (the sim's asyncssh server, its `journalctl`,
`nvidia-smi` and journal writer, without the GPU supervisor: 100 full SimHosts with their fake SGLang
servers do not fit on 2 cores). They run in one child process (`serve` mode), each with its own
journal that receives one SGLang `Decode batch` line per second, and on request a restart loop (two
failed starts: SGLang's `Not enough memory` start-up failure and systemd's exit messages). The bot side
is the production path: `JournalSupervisor` (one follower per host, leases), `IncidentMonitor`
(detection, side evidence over SSH, diagnosis, database), `IncidentNotifier` into a database outbox.

Alert latency = time the outbox got the alert − `__REALTIME_TIMESTAMP` of the journal entry that
completed the loop condition (the second failed start's `Main process exited`). Memory = the bot
process's RSS (VmRSS, and peak VmHWM) with every host followed.

    .venv/bin/python benchmarks/bench_fleet.py [--hosts 100] [--loops 30] [--interval 0.5]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

UNIT = "sglang.service"
_SELF = Path(__file__).resolve()


# --- the hosts (child process) ---------------------------------------------------------------------

def _loop_entries(inv: str, n: int) -> list[dict[str, object]]:
    mgr = {"_PID": 1, "_UID": 0, "SYSLOG_IDENTIFIER": "systemd", "_SYSTEMD_UNIT": "init.scope", "UNIT": UNIT,
           "INVOCATION_ID": inv, "_TRANSPORT": "journal"}
    svc = {"_PID": 5000 + n, "SYSLOG_IDENTIFIER": "python3", "_SYSTEMD_UNIT": UNIT,
           "_SYSTEMD_INVOCATION_ID": inv, "_TRANSPORT": "stdout", "PRIORITY": 6}
    return [
        {**mgr, "MESSAGE": "Started SGLang server (Qwen3.5-122B-A10B).", "JOB_TYPE": "start"},
        {**svc, "MESSAGE": "[2026-11-29 14:02:11] Load weight end. elapsed=118.20 s, avail mem=9.10 GB"},
        {**svc, "MESSAGE": "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. "
                           "Current value: self.server_args.mem_fraction_static=0.88"},
        {**svc, "MESSAGE": "Received sigquit from a child process. It usually means the child failed."},
        {**mgr, "MESSAGE": f"{UNIT}: Main process exited, code=exited, status=1/FAILURE", "EXIT_CODE": "exited",
         "EXIT_STATUS": 1},
        {**mgr, "MESSAGE": f"{UNIT}: Failed with result 'exit-code'.", "UNIT_RESULT": "exit-code"},
        {**mgr, "MESSAGE": f"{UNIT}: Scheduled restart job, restart counter is at {n}.", "N_RESTARTS": n},
    ]


async def serve(hosts: int, root: Path) -> None:
    """Start `hosts` SSH endpoints; print their specs as JSON; then obey `loop I` lines on stdin."""
    from simhost.journal import JournalWriter
    from simhost.ssh import start_ssh_server
    from simhost.tools.install import install_tools

    bin_dir = install_tools(root / "bin")
    servers, writers, specs = [], [], []
    for i in range(hosts):
        hroot = root / f"h{i:03d}"
        hroot.mkdir(parents=True, exist_ok=True)
        srv = await start_ssh_server(hroot, env={"SIMHOST_DIR": str(hroot), "HOME": str(hroot)},
                                     path_prefix=[bin_dir])
        servers.append(srv)
        writers.append(JournalWriter(hroot, f"gpu-{i:03d}"))
        specs.append({"name": f"gpu-{i:03d}", "address": srv.host, "port": srv.port, "user": srv.user,
                      "client_key": str(srv.client_key), "known_hosts": str(srv.known_hosts), "unit": UNIT,
                      "unit_dir": "/etc/systemd/system", "server_url": "http://127.0.0.1:1"})
    lock = threading.Lock()
    stop = threading.Event()

    def noise() -> None:
        k = 0
        while not stop.is_set():
            k += 1
            for w in writers:
                with lock:
                    w.append({"_PID": 4242, "SYSLOG_IDENTIFIER": "python3", "_SYSTEMD_UNIT": UNIT, "PRIORITY": 6,
                              "_TRANSPORT": "stdout", "MESSAGE":
                              f"[2026-11-29 14:03:49] Decode batch, #running-req: 1, #token: {k}, token usage: "
                              "0.01, accept len: 3.20, accept rate: 0.55, cuda graph: True, gen throughput "
                              "(token/s): 281.40, #queue-req: 0"})
            stop.wait(1.0)

    thread = threading.Thread(target=noise, daemon=True)
    thread.start()
    print(json.dumps(specs), flush=True)
    reader = asyncio.StreamReader()
    await asyncio.get_running_loop().connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    counters = [0] * hosts
    while line := await reader.readline():
        cmd = line.decode().split()
        if cmd[:1] != ["loop"]:
            continue
        i = int(cmd[1])
        completing = 0
        with lock:
            for _ in range(2):
                counters[i] += 1
                inv = os.urandom(16).hex()
                for fields in _loop_entries(inv, counters[i]):
                    e = writers[i].append(fields)
                    if "Main process exited" in str(fields["MESSAGE"]):
                        completing = int(e["__REALTIME_TIMESTAMP"])
        print(f"looped {i} {completing}", flush=True)
    stop.set()
    for srv in servers:
        await srv.close()


# --- the bot side ----------------------------------------------------------------------------------

class Fleet:
    """The child process with the hosts."""

    def __init__(self, proc: asyncio.subprocess.Process, specs: list[dict[str, Any]]) -> None:
        self.proc = proc
        self.specs = specs

    @classmethod
    async def start(cls, hosts: int, root: Path) -> Fleet:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, str(_SELF), "serve", "--hosts", str(hosts), "--root", str(root),
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, limit=1 << 24)
        assert proc.stdout is not None
        line = await asyncio.wait_for(proc.stdout.readline(), 120)
        return cls(proc, json.loads(line))

    async def loop(self, i: int) -> int:
        """Inject a restart loop on host i; the realtime (µs) of the entry completing the condition."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(f"loop {i}\n".encode())
        await self.proc.stdin.drain()
        while True:
            parts = (await self.proc.stdout.readline()).decode().split()
            if parts[:2] == ["looped", str(i)]:
                return int(parts[2])

    async def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            await asyncio.wait_for(self.proc.wait(), 10)
        except TimeoutError:
            self.proc.kill()
            await self.proc.wait()


class Bot:
    """The production incident path in this process, with a database outbox that timestamps alerts."""

    def __init__(self, db: Any, specs: list[dict[str, Any]], policy: Any) -> None:
        from handlers.contract import Reply
        from handlers.incident_view import IncidentNotifier
        from services.events import EventBus
        from services.hosts.contract import HostSpec
        from services.hosts.ssh import SshHost
        from services.incidents.monitor import IncidentMonitor
        from services.incidents.types import IncidentOpened
        from services.journal.fleet import JournalSupervisor
        from services.store.outbox import OutboxStore

        self.hosts = {s["name"]: SshHost(HostSpec(**{**s, "client_key": Path(s["client_key"]),
                                                     "known_hosts": Path(s["known_hosts"])}))
                      for s in specs}
        self.bus = EventBus()
        self.monitor = IncidentMonitor(db, self.bus, lambda n: self.hosts[n], policy=policy)
        store = OutboxStore(db)
        self.alerts: dict[str, float] = {}  # host -> wall time the alert reached the outbox
        self.opened: dict[int, str] = {}
        bot = self

        class TimedOutbox:
            async def send(self, key: str, reply: Reply, *, channel: str, thread_of: str | None = None) -> None:
                await store.enqueue(transport="slack", key=key, channel=channel, payload=reply.to_json(),
                                    thread_of=thread_of)
                if thread_of is None and key.startswith("incident:"):
                    host = bot.opened.get(int(key.split(":")[1]))
                    if host is not None and host not in bot.alerts:
                        bot.alerts[host] = time.time()

        async def on_open(ev: IncidentOpened) -> None:
            self.opened[ev.incident.id] = ev.incident.host

        self.bus.subscribe(IncidentOpened, on_open)  # before the notifier: the id is known at send time
        IncidentNotifier(TimedOutbox(), "C-alerts").subscribe(self.bus)
        self.supervisor = JournalSupervisor(db, list(self.hosts.values()), holder=f"bench-{os.getpid()}",
                                            on_entry_for=self.monitor.on_entry_for, bus=self.bus)

    async def wait_following(self, limit_s: float) -> float:
        started = time.monotonic()
        while True:
            st = self.supervisor.statuses()
            if len(st) == len(self.hosts) and all(s.entries > 0 for s in st):
                return time.monotonic() - started
            if time.monotonic() - started > limit_s:
                raise TimeoutError(f"only {sum(s.entries > 0 for s in st)} of {len(self.hosts)} hosts followed")
            await asyncio.sleep(0.2)

    async def close(self) -> None:
        await self.supervisor.close()
        for h in self.hosts.values():
            await h.close()


def rss_mib() -> tuple[float, float]:
    fields = dict(line.split(":", 1) for line in Path("/proc/self/status").read_text().splitlines() if ":" in line)
    return int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, max(0, round(q * (len(s) - 1))))]


async def measure(hosts: int, loops: int, interval: float, *, sequential: bool, window_s: float) -> dict[str, Any]:
    from services.incidents.types import IncidentPolicy
    from services.store.db import Database

    with tempfile.TemporaryDirectory(prefix="pitcrew-fleet-") as tmp:
        root = Path(tmp)
        fleet = await Fleet.start(hosts, root / "hosts")
        db = Database(f"sqlite+aiosqlite:///{root / 'bot.db'}")
        await db.migrate()
        bot = Bot(db, fleet.specs, IncidentPolicy(window_s=window_s, stable_window_s=3600))
        sup_task = asyncio.create_task(bot.supervisor.run())
        try:
            ready_s = await bot.wait_following(120)
            rss_idle, _ = rss_mib()
            cpu0, wall0 = time.process_time(), time.monotonic()
            latencies: list[float] = []
            order = list(range(hosts))
            random.Random(7).shuffle(order)
            pending: dict[str, int] = {}
            for k in range(loops):
                i = order[k % hosts]
                name = f"gpu-{i:03d}"
                bot.alerts.pop(name, None)
                pending[name] = await fleet.loop(i)
                if sequential:
                    await _collect(bot, pending, latencies, 15)
                    for inc in await bot.monitor.open_incidents(name):
                        await bot.monitor.store.resolve(inc.id, "bench")
                    await asyncio.sleep(window_s + 0.2)
                else:
                    await asyncio.sleep(interval)
            await _collect(bot, pending, latencies, 30)
            rss, peak = rss_mib()
            cpu_share = (time.process_time() - cpu0) / max(1e-6, time.monotonic() - wall0)
            return {"cpu_share": cpu_share, "hosts": hosts, "loops": loops, "alerts": len(latencies),
                    "ready_s": ready_s,
                    "p50_s": statistics.median(latencies), "p95_s": pct(latencies, 0.95),
                    "max_s": max(latencies), "rss_idle_mib": rss_idle, "rss_mib": rss, "peak_mib": peak,
                    "entries": sum(s.entries for s in bot.supervisor.statuses()),
                    "bad_lines": sum(s.bad_lines for s in bot.supervisor.statuses())}
        finally:
            sup_task.cancel()
            await asyncio.gather(sup_task, return_exceptions=True)
            await bot.close()
            await db.close()
            await fleet.close()


async def _collect(bot: Bot, pending: dict[str, int], latencies: list[float], limit_s: float) -> None:
    deadline = time.monotonic() + limit_s
    while pending and time.monotonic() < deadline:
        for name in [n for n in pending if n in bot.alerts]:
            latencies.append(bot.alerts[name] - pending.pop(name) / 1e6)
        await asyncio.sleep(0.01)
    if pending:
        raise TimeoutError(f"no alert for {sorted(pending)}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("mode", nargs="?", default="bench", choices=["bench", "serve"])
    ap.add_argument("--hosts", type=int, default=100)
    ap.add_argument("--loops", type=int, default=30)
    ap.add_argument("--interval", type=float, default=0.5)
    ap.add_argument("--root", type=Path)
    args = ap.parse_args()
    if args.mode == "serve":
        asyncio.run(serve(args.hosts, args.root))
        return
    r = asyncio.run(measure(args.hosts, args.loops, args.interval, sequential=False, window_s=600))
    print(f"fleet: {r['hosts']} hosts followed by one process (all followed after {r['ready_s']:.1f} s); "
          f"{r['alerts']}/{r['loops']} loops alerted")
    print(f"  alert latency  p50 {r['p50_s'] * 1000:.0f} ms   p95 {r['p95_s'] * 1000:.0f} ms   "
          f"max {r['max_s'] * 1000:.0f} ms   (goal p95 < 2000 ms)")
    print(f"  bot memory     RSS {r['rss_mib']:.0f} MiB (idle {r['rss_idle_mib']:.0f}, peak {r['peak_mib']:.0f})"
          f"   (goal < 300 MB); bot CPU {r['cpu_share'] * 100:.0f} % of one core while following")
    print(f"  journal        {r['entries']} entries processed, {r['bad_lines']} bad lines")


if __name__ == "__main__":
    main()
