"""`pitcrew sim`: run a simulated GPU host in the foreground (`up`) and inject faults (`fault`).

Module-level imports are click only; the sim is imported inside the command bodies.
"""

from __future__ import annotations

import click

SCENARIO_NAMES = ["healthy", "seed", "stale-gpu", "port-in-use"]
FAULT_NAMES = ["stale-gpu-holder", "port-in-use", "nccl-timeout", "xid", "slow-load", "clear"]


@click.group()
def sim() -> None:
    """Simulated GPU host (SGLang or vLLM under systemd, reached over SSH) for demos and tests."""


@sim.command()
@click.option("--dir", "state_dir", type=click.Path(file_okay=False), default=None,
              help="State directory (unit files, journal, GPU ledger); default a temporary one.")
@click.option("--scenario", type=click.Choice(SCENARIO_NAMES), default="healthy", show_default=True)
@click.option("--time-scale", type=float, default=0.05, show_default=True,
              help="Speed of simulated phases (1.0 = real time); token rates are never scaled.")
@click.option("--gpus", type=int, default=4, show_default=True)
@click.option("--gpu-memory-mib", type=int, default=97887, show_default=True)
@click.option("--ssh-port", type=int, default=0, show_default=True, help="0 = a free port.")
@click.option("--name", default="sim-gpu-1", show_default=True)
@click.option("--noise", "noise_pct", type=click.FloatRange(0, 20), default=0.0, show_default=True,
              help="Per-run speed jitter of the fake server (standard deviation, percent); 0 = off.")
@click.option("--noise-seed", type=int, default=0, show_default=True, help="Seed of that jitter.")
@click.option("--engine", type=click.Choice(["sglang", "vllm", "llamacpp"]), default="sglang", show_default=True,
              help="The inference server the host runs: SGLang 0.5.9 or vLLM 0.11 (`vllm serve`), simulated, or "
                   "llama.cpp's real `llama-server` with SmolLM2 on the CPU (build it once with `make engine`).")
@click.option("--systemd", "systemd", type=click.Choice(["python", "real"]), default="python", show_default=True,
              help="The host's service manager: the sim's supervisor, or systemd 252 itself booted in private "
                   "namespaces on a throwaway overlay (needs root; reached through its own sshd as `pitcrew`).")
@click.option("--real-engine", is_flag=True,
              help="vLLM only: run the real `vllm serve` (CPU build, a real small model; built by `make vllm`) "
                   "instead of the fake server. The GPU stays simulated; everything runs in real time.")
@click.option("--vllm-version", type=click.Choice(["0.32", "0.11"]), default="0.32", show_default=True,
              help="With --real-engine: which real vLLM.")
def up(state_dir: str | None, scenario: str, time_scale: float, gpus: int, gpu_memory_mib: int,
       ssh_port: int, name: str, noise_pct: float, noise_seed: int,
       engine: str, systemd: str, real_engine: bool, vllm_version: str) -> None:
    """Start one simulated host in the foreground; prints its host entry as one JSON line when ready."""
    import asyncio
    import json
    import signal
    from pathlib import Path

    from simhost.host import SimHost

    if systemd == "real":
        from simhost.systemd import unavailable

        if (why := unavailable()) is not None:
            raise click.ClickException(f"real systemd cannot be booted here: {why} (use --systemd python)")
    if real_engine:
        from simhost.realvllm import unavailable as engine_missing

        if engine != "vllm":
            raise click.ClickException("--real-engine needs --engine vllm")
        if (why := engine_missing(vllm_version)) is not None:
            raise click.ClickException(why)

    if engine == "llamacpp":
        from simhost.llamacpp.build import EngineNotBuilt, built

        try:
            built()
        except EngineNotBuilt as exc:
            raise click.ClickException(str(exc)) from None

    async def run() -> None:
        host = SimHost(Path(state_dir) if state_dir else None, scenario=scenario, time_scale=time_scale,
                       gpus=gpus, gpu_memory_mib=gpu_memory_mib, ssh_port=ssh_port, name=name,
                       noise_pct=noise_pct, noise_seed=noise_seed, engine=engine, systemd=systemd,
                       real_engine=real_engine, vllm_version=vllm_version)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        async with host:
            click.echo(json.dumps(host.info))
            await stop.wait()

    asyncio.run(run())


@sim.command()
@click.option("--dir", "state_dir", type=click.Path(file_okay=False, exists=True), required=True,
              help="State directory of the running sim.")
@click.argument("name", type=click.Choice(FAULT_NAMES))
def fault(state_dir: str, name: str) -> None:
    """Inject a fault into a running simulated host."""
    from simhost import control

    try:
        answer = control.request(state_dir, {"op": "fault", "name": name}, timeout=30)
    except (ConnectionError, OSError) as exc:
        raise click.ClickException(f"no simulated host is running in {state_dir}") from exc
    if not answer.get("ok"):
        raise click.ClickException(str(answer.get("error", "fault failed")))
    click.echo(answer.get("message", "ok"))
