"""Scenarios and faults of the simulated host: stale GPU holder, port in use, NCCL watchdog, Xid."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import aiohttp
from simhost_kit import SCALE, assert_format, messages, sh, wait_for

from simhost.host import SimHost

APPS = "nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv,noheader,nounits"


async def test_stale_gpu_scenario_names_the_holder_until_it_is_killed(tmp_path: Path) -> None:
    async with SimHost(tmp_path / "h", scenario="stale-gpu", time_scale=SCALE, ssh=False) as host:
        await wait_for(lambda: any(m.startswith("torch.OutOfMemoryError") for m in messages(host)))
        _, out, _ = await sh(host, APPS)
        listed = {int(line.split(", ")[0]): line.split(", ")[1] for line in out.splitlines()}
        oom = next(m for m in messages(host) if m.startswith("torch.OutOfMemoryError"))
        assert_format("torch.cuda_oom", oom)
        holder = int(oom.split("Process ")[1].split(" has")[0])
        assert "has 92.10 GiB memory in use." in oom
        assert listed[holder] == "sglang::scheduler_TP0"  # visible to nvidia-smi, outside the unit
        holders = [pid for pid, name in listed.items() if pid != holder and name.startswith("sglang::")]
        holders = [holder, *[p for p in holders if (await sh(host, f"ps -o pgid= -p {p}"))[1].strip() == str(p)]]
        assert len(holders) == 4
        _, out, _ = await sh(host, f"ps -o comm= -p {holder}")
        assert out.strip() == "sglang::schedul"
        await wait_for(lambda: any("restart counter is at 1." in m for m in messages(host)))
        await sh(host, "sudo kill " + " ".join(map(str, holders)))
        await host.wait_ready(30)
        _, out, _ = await sh(host, APPS)
        assert not {int(line.split(", ")[0]) for line in out.splitlines()} & set(holders)


async def test_port_in_use_then_clear(tmp_path: Path) -> None:
    async with SimHost(tmp_path / "h", scenario="port-in-use", time_scale=SCALE, ssh=False) as host:
        await wait_for(lambda: any("error while attempting to bind" in m for m in messages(host)))
        line = next(m for m in messages(host) if "error while attempting to bind" in m)
        assert_format("sglang.bind_error", line)
        assert f"('127.0.0.1', {host.server_port})" in line
        await wait_for(lambda: any("Initialization failed. warmup error:" in m for m in messages(host)))
        pitcrew = str(Path(sys.executable).with_name("pitcrew"))
        proc = await asyncio.create_subprocess_exec(pitcrew, "sim", "fault", "--dir", str(host.root), "clear",
                                                    stdout=asyncio.subprocess.PIPE)
        out, _ = await proc.communicate()
        assert proc.returncode == 0 and out.decode().strip() == "all faults cleared"
        await host.wait_ready(30)


async def test_stale_holder_fault_nccl_and_xid(tmp_path: Path) -> None:
    async with SimHost(tmp_path / "h", scenario="healthy", time_scale=SCALE, ssh=False) as host:
        await host.wait_ready(20)
        # nccl-timeout: the schedulers abort, the main process stays, /health_generate fails
        await host.fault("nccl-timeout")
        await wait_for(lambda: any("Watchdog caught collective operation timeout" in m for m in messages(host)))
        assert any(m == "terminate called after throwing an instance of 'c10::DistBackendError'"
                   for m in messages(host))
        async with aiohttp.ClientSession() as session, session.get(f"{host.server_url}/health_generate") as resp:
            assert resp.status == 503
        assert (await sh(host, "systemctl is-active sglang"))[1] == "active\n"
        # stale-gpu-holder: the next server that dies leaves its memory held by a live process
        await host.fault("stale-gpu-holder")
        await sh(host, "systemctl restart sglang")
        await wait_for(lambda: sum(m.startswith("torch.OutOfMemoryError") for m in messages(host)) >= 1)
        await host.fault("clear")
        await host.wait_ready(30)
        # xid: kernel line (journalctl -k, not -u), nvidia-smi fails, restarts fail in ServerArgs
        await host.fault("xid")
        rc, out, _ = await sh(host, "journalctl -k -o cat")
        assert_format("kernel.xid", out.strip())
        assert "NVRM" not in "".join(messages(host))
        rc, out, _ = await sh(host, "nvidia-smi")
        assert rc != 0 and out.startswith("Unable to determine the device handle for GPU")
        await wait_for(lambda: any("RuntimeError: nvidia-smi error: Unable to determine" in m for m in messages(host)))
        assert any(m == "torch.AcceleratorError: CUDA error: unspecified launch failure" for m in messages(host))
        await host.fault("clear")
        await host.wait_ready(30)
        rc, out, _ = await sh(host, APPS)
        assert rc == 0 and len(out.splitlines()) == 4
        # model path missing: transformers' error before logging is configured, exit status 1
        exits_before = messages(host).count("sglang.service: Main process exited, code=exited, status=1/FAILURE")
        await sh(host, "mv models models.away && systemctl restart sglang")
        await wait_for(lambda: any(m.startswith("OSError: Incorrect path_or_model_id: '") for m in messages(host)))
        await wait_for(lambda: messages(host).count("sglang.service: Main process exited, code=exited, "
                                                    "status=1/FAILURE") > exits_before)
