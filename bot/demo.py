"""`pitcrew demo`: the whole product locally — a simulated GPU host, SQLite, and a console chat.

Starts a simulated SGLang host (scenario `seed` by default: healthy at 5 steps, and 10 steps
leads to the field notes' crash loop) — or, with `engine="vllm"`, a simulated vLLM 0.11 host, or with
`engine="llamacpp"` a host running llama.cpp's real `llama-server` (SmolLM2 on the CPU, `make engine`) — in a
temporary directory, builds the bot around it exactly
as `pitcrew serve` does, and opens the console chat. With `--script FILE` (or when stdin is not a
terminal) it runs the commands in order, waiting for each one's jobs, confirms its own previews,
and exits when every job has finished and every incident is settled.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import tempfile
import time
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.panel import Panel

from bot.app import Core, build_core
from bot.console import CONSOLE_USER, TRANSPORT, ConsoleChat, ConsoleDeliverer, ConsoleView, read_lines
from bot.delivery import run_delivery
from bot.logs import configure_logging
from bot.settings import load_settings
from services.events import EventBus
from services.incidents import IncidentOpened, IncidentResolved

BANNER = """[bold]pitcrew demo[/bold] — a simulated GPU host running SGLang under {systemd} ({scenario}), and this \
chat.
Try:  [bold]status[/bold]   ·   [bold]try 4 steps[/bold]   ·   [bold]sweep steps 1..5[/bold]   ·   \
[bold]try 10 steps[/bold] (the field notes' crash loop)   ·   [bold]help[/bold]
Confirm a preview with [bold]yes[/bold] or its number; [bold]quit[/bold] to leave."""
BANNER_VLLM = """[bold]pitcrew demo[/bold] — a simulated GPU host running vLLM 0.11 under {systemd} ({scenario}), \
and this chat.
Try:  [bold]status[/bold]   ·   [bold]try 4 spec tokens[/bold]   ·   [bold]sweep spec tokens 2..5[/bold]   ·   \
[bold]try context 262144[/bold] (a KV cache too small for it)   ·   [bold]help flags[/bold]
Confirm a preview with [bold]yes[/bold] or its number; [bold]quit[/bold] to leave."""
BANNER_REAL_VLLM = """[bold]pitcrew demo[/bold] — a simulated GPU host whose engine is \
[bold]real vLLM {version}[/bold] running on this machine's CPU ({model}; the GPU is simulated), under {systemd}, \
and this chat.
Try:  [bold]status[/bold]   ·   [bold]try 4 spec tokens[/bold] (0.32: n-gram speculation)   ·   \
[bold]try context 100000[/bold] (a KV cache too small for it)   ·   [bold]try --max-num-seqz 8[/bold]   ·   \
[bold]help flags[/bold]
Confirm a preview with [bold]yes[/bold] or its number; [bold]quit[/bold] to leave. \
A real start takes a minute or more."""

BANNER_LLAMACPP = """[bold]pitcrew demo[/bold] — a host running llama.cpp's real llama-server (SmolLM2-135M on \
the CPU; the GPU is simulated) under {systemd} ({scenario}), and this chat.
Try:  [bold]status[/bold]   ·   [bold]try 2 draft tokens[/bold]   ·   [bold]sweep draft tokens 1..6[/bold]   ·   \
[bold]try context 131072[/bold] (more than the unit's MemoryMax= holds)   ·   [bold]try --draft-max 8[/bold]
Confirm a preview with [bold]yes[/bold] or its number; [bold]quit[/bold] to leave."""
BANNERS = {"vllm": BANNER_VLLM, "llamacpp": BANNER_LLAMACPP}

DEMO_BENCH = {"concurrency": [1, 8], "requests_per_level": 8, "warmup": 1, "input_len": 128, "output_len": 128}
# the real engine on 2 shared CPU cores decodes ~45 tokens/s per request: fewer, shorter requests, at C=1 and its
# two slots
DEMO_BENCH_ENGINE = {"llamacpp": {"concurrency": [1, 2], "requests_per_level": 4, "warmup": 1, "input_len": 64,
                                  "output_len": 64}}


def host_entry(info: dict[str, Any]) -> dict[str, Any]:
    """A `hosts` settings entry from a simulated host's `.info` (its `host.json`): the one mapping of the two."""
    return {"name": info["name"], "address": info["ssh_host"], "port": info["ssh_port"], "user": info["user"],
            "client_key": info["client_key"], "known_hosts": info["known_hosts"], "unit": info["unit"],
            "unit_dir": info["unit_dir"], "server_url": info["server_url"], "sudo": bool(info.get("sudo"))}


def demo_settings(workdir: Path, info: dict[str, Any], *, time_scale: float, engine: str = "sglang") -> Any:
    return load_settings(None, db={"url": f"sqlite+aiosqlite:///{workdir / 'pitcrew.db'}"}, hosts=[host_entry(info)],
                         bench=DEMO_BENCH_ENGINE.get(engine, DEMO_BENCH),
                         policy={"incident_stable_window_s": 120.0, "restart_loop_window_s": 600.0,
                                 # the demo's own console user is its admin (roles fail closed)
                                 "roles": {"*": "viewer", CONSOLE_USER: "admin"}})


class IncidentsTold:
    """The incidents whose opening was told and whose resolution is not yet: subscribed after the notifier, so an
    incident leaves `untold` once the notifier has put its resolution in the outbox (the database says resolved a
    moment before that: a demo that read only the database could finish in between and never show it)."""

    def __init__(self, bus: EventBus) -> None:
        self.untold: set[int] = set()
        bus.subscribe(IncidentOpened, self._opened)
        bus.subscribe(IncidentResolved, self._resolved)

    async def _opened(self, ev: IncidentOpened) -> None:
        self.untold.add(ev.incident.id)

    async def _resolved(self, ev: IncidentResolved) -> None:
        self.untold.discard(ev.incident.id)


async def wait_idle(core: Core, *, timeout_s: float, settle_incidents: bool, quiet_s: float = 1.0,
                    told: IncidentsTold | None = None) -> bool:
    """Until no job is queued or running and the outbox is drained; with `settle_incidents`, also no
    incident open (nor one whose resolution `told` has not seen reach the outbox) and every unit running without a
    new restart for `quiet_s`."""
    t_end = time.monotonic() + timeout_s
    quiet_since: float | None = None
    last: list[tuple[str, str, int, int]] | None = None
    while time.monotonic() < t_end:
        busy = bool(await core.jobs.queue()) or await core.store.depth(TRANSPORT) > 0
        if not busy and settle_incidents:
            busy = core.incidents is not None and bool(await core.incidents.open_incidents(None))
            busy = busy or bool(told is not None and told.untold)
            states = []
            for name in core.hosts.names():
                with contextlib.suppress(Exception):
                    st = await core.experiments.ops(name).state()
                    states.append((name, st.active_state, st.n_restarts, st.main_pid))
            busy = busy or any(s[1] != "active" for s in states) or states != last
            last = states
        if busy:
            quiet_since = None
        else:
            quiet_since = quiet_since or time.monotonic()
            if time.monotonic() - quiet_since > (quiet_s if settle_incidents else 1.0):
                return True
        await asyncio.sleep(0.25)
    return False


async def run_demo(*, script_lines: list[str] | None, scenario: str, time_scale: float, keep: Path | None,
                   interactive: bool, timeout_s: float = 900.0, files_dir: Path | None = Path("pitcrew-demo"),
                   noise_pct: float = 0.0, engine: str = "sglang", systemd: str = "python",
                   real_engine: bool = False, vllm_version: str = "0.32") -> int:
    from simhost.host import SimHost

    console = Console(highlight=False, width=None if interactive else 160)
    configure_logging(level=logging.ERROR)
    with contextlib.ExitStack() as sync_stack:
        workdir = keep or Path(sync_stack.enter_context(tempfile.TemporaryDirectory(prefix="pitcrew-demo-")))
        workdir.mkdir(parents=True, exist_ok=True)
        async with AsyncExitStack() as stack:
            if real_engine:
                time_scale = 1.0  # a real engine runs in real time
            what = f"real vLLM {vllm_version} on CPU" if real_engine else engine
            console.print(f"starting the simulated host ({what}, {scenario}, time scale {time_scale}, "
                          f"{'systemd 252' if systemd == 'real' else 'the simulator'}'s service manager) …",
                          style="dim")
            sim = await stack.enter_async_context(SimHost(workdir / "sim", scenario=scenario, time_scale=time_scale,
                                                          noise_pct=noise_pct, engine=engine, systemd=systemd,
                                                          real_engine=real_engine, vllm_version=vllm_version))
            settings = demo_settings(workdir, sim.info, time_scale=time_scale, engine=engine)
            core = await build_core(settings, stack, transport=TRANSPORT, time_scale=time_scale)
            told = IncidentsTold(core.bus)  # after build_core's notifier
            view = ConsoleView(console, files_dir=files_dir)
            stop = asyncio.Event()
            delivery = asyncio.create_task(run_delivery(core.store, ConsoleDeliverer(view), holder=core.holder,
                                                        stop=stop, wake=core.wake, poll_s=0.1))
            stack.push_async_callback(_stop_task, delivery, stop)
            if real_engine:  # a real engine's --help takes its imports' time: read it now, not at the first preview
                warm = asyncio.create_task(_read_engine_flags(core, sim.info["name"]))
                stack.push_async_callback(_cancel, warm)
            chat = ConsoleChat(core.router.dispatch, view)
            manager = "systemd 252 (real, in private namespaces)" if systemd == "real" else "systemd (simulated)"
            banner = BANNER_REAL_VLLM if real_engine else BANNERS.get(engine, BANNER)
            real = sim.info.get("real_engine") or {}
            console.print(Panel(banner.format(scenario=scenario, systemd=manager, version=real.get("version"),
                                              model=real.get("model"))))
            if interactive and script_lines is None:
                return await _interactive(chat, core, stop)
            lines = script_lines if script_lines is not None else [ln async for ln in read_lines(stop)]
            return await _scripted(chat, core, lines, timeout_s=timeout_s, quiet_s=max(2.0, 200 * time_scale),
                                   told=told)
    return 0


async def _read_engine_flags(core: Core, host: str) -> None:
    """Fill preflight's flag table of `host`'s engine (the same read a preview makes, waited for here)."""
    from services.experiments import check_flags
    from services.units import read_exec_start

    ops = core.experiments.ops(host)
    with contextlib.suppress(Exception):  # a failed read is the preview's to report, as it would without this
        await check_flags(core.experiments.engine_flags, ops.host, read_exec_start(await ops.read_unit()).argv)


async def _cancel(task: asyncio.Task[None]) -> None:
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError, Exception):
        await task


async def _stop_task(task: asyncio.Task[None], stop: asyncio.Event) -> None:
    stop.set()
    with contextlib.suppress(asyncio.CancelledError, Exception):
        await asyncio.wait_for(task, 5)


async def _scripted(chat: ConsoleChat, core: Core, lines: list[str], *, timeout_s: float, quiet_s: float,
                    told: IncidentsTold) -> int:
    t_end = time.monotonic() + timeout_s
    for line in lines:
        if line.strip().lower() in ("quit", "exit"):
            break
        await chat.say(line, echo=True)
        pending = await core.jobs.pending_confirmation(chat.user.user_id, chat.channel)
        if pending is not None:
            await chat.say(f"yes {pending.id}", echo=True)
        if not await wait_idle(core, timeout_s=max(t_end - time.monotonic(), 1), settle_incidents=False):
            chat.view.console.print("demo: timed out waiting for jobs", style="red")
            return 1
    settled = await wait_idle(core, timeout_s=max(t_end - time.monotonic(), 1), settle_incidents=True,
                              quiet_s=quiet_s, told=told)
    chat.view.console.print("demo finished." if settled else "demo: incidents still open at the time limit",
                            style="bold" if settled else "red")
    return 0 if settled else 1


async def _interactive(chat: ConsoleChat, core: Core, stop: asyncio.Event) -> int:
    chat.view.console.print("> ", end="")
    async for line in read_lines(stop):
        if line.strip().lower() in ("quit", "exit"):
            break
        await chat.say(line)
        await asyncio.sleep(0.05)
        chat.view.console.print("> ", end="")
    return 0
