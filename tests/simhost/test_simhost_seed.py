"""Acceptance: the field notes' story replayed on the `seed` scenario, driven over SSH only.

Deploy steps 10 by editing `ExecStart`, daemon-reload, restart; it serves C=1 at 270-293 tok/s
with accept len ≈ 5.5; load at C=8 kills it (CUDA OOM); `journalctl -o json` and
`systemctl show -p NRestarts` show the crash and then the restart loop (`Not enough memory`);
restoring steps 5 recovers. HTTP goes to the server as the bot's benchmark would.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import aiohttp
import asyncssh
from simhost_kit import SCALE, assert_format

from simhost.host import SimHost


def message(entry: dict[str, object]) -> str:
    """MESSAGE as journalctl -o json prints it: a string, a byte array, or null (>= 4096 bytes)."""
    value = entry.get("MESSAGE")
    if isinstance(value, list):
        return bytes(value).decode("utf-8", "replace")
    return value if isinstance(value, str) else ""


async def stream(url: str, tokens: int) -> tuple[int, int, float]:
    """(completion tokens, content chunks, decode tok/s) of one streamed request."""
    loop = asyncio.get_running_loop()
    body = {"model": "qwen3.5-122b-a10b", "prompt": "Explain speculative decoding. " * 30, "max_tokens": tokens,
            "ignore_eos": True, "stream": True, "stream_options": {"include_usage": True}}
    stamps: list[float] = []
    total = 0
    async with aiohttp.ClientSession() as session, session.post(f"{url}/v1/completions", json=body) as resp:
        async for raw in resp.content:
            line = raw.strip()
            if not line.startswith(b"data: {"):
                continue
            data = json.loads(line[6:])
            if data.get("usage"):
                total = data["usage"]["completion_tokens"]
            if data["choices"] and data["choices"][0]["text"]:
                stamps.append(loop.time())
    return total, len(stamps), (total - 1) / (stamps[-1] - stamps[0])


async def test_seed_story_over_ssh(tmp_path: Path) -> None:
    async with SimHost(tmp_path / "seed", scenario="seed", time_scale=SCALE) as host:
        info = host.info
        conn = await asyncssh.connect(info["ssh_host"], info["ssh_port"], username=info["user"],
                                      client_keys=[info["client_key"]], known_hosts=info["known_hosts"],
                                      config=[], agent_path=None)
        async with conn:
            async def run(cmd: str) -> str:
                result = await conn.run(cmd, check=True, timeout=30)
                return str(result.stdout)

            async def wait_ready() -> None:
                for _ in range(400):
                    out = await run(f"journalctl -u {info['unit']} -o cat -n 1")
                    if "ready to roll" in out or "POST /generate" in out:
                        await host.wait_ready(10)
                        return
                    await asyncio.sleep(0.05)
                raise AssertionError("server did not become ready")

            async def nrestarts() -> int:
                return int(await run("systemctl show sglang.service -p NRestarts --value"))

            unit_path = f"{info['unit_dir']}/{info['unit']}"

            async def deploy(old: str, new: str) -> None:
                text = await run(f"cat {unit_path}")
                assert old in text
                async with conn.start_sftp_client() as sftp, sftp.open(f"{unit_path}.new", "w") as fh:
                    await fh.write(text.replace(old, new))
                await run(f"mv {unit_path}.new {unit_path}")
                status = await conn.run("systemctl is-active sglang.service; systemctl status sglang.service",
                                        check=False)
                assert_format("systemctl.changed_on_disk", str(status.stderr).splitlines()[0])
                await run("sudo systemctl daemon-reload && sudo systemctl restart sglang.service")

            await wait_ready()
            assert await nrestarts() == 0
            await deploy("--speculative-num-steps 5 --speculative-eagle-topk 1 --speculative-num-draft-tokens 6",
                         "--speculative-num-steps 10 --speculative-eagle-topk 1 --speculative-num-draft-tokens 11")
            await wait_ready()
            tokens, chunks, rate = await stream(host.server_url, 330)
            assert tokens == 330 and 270 <= rate <= 293, rate
            assert abs(tokens / chunks - 5.5) < 0.3  # accept length ~5.5 tokens per SSE event
            last = json.loads((await run("journalctl -u sglang.service -o json -n 1")).strip())
            cursor = last["__CURSOR"]
            decode = [m for m in (await run("journalctl -u sglang.service -o cat -n 200")).splitlines()
                      if "Decode batch" in m]
            accept = float(decode[-1].split("accept len: ")[1].split(",")[0])
            assert abs(accept - 5.5) < 0.25
            assert f"accept rate: {accept / 11:.2f}," in decode[-1]  # 0.5.9 definition, 11 draft tokens
            follower = await conn.create_process(
                f"journalctl -u sglang.service -o json -f --after-cursor '{cursor}'")
            results = await asyncio.gather(*(stream(host.server_url, 400) for _ in range(8)),
                                           return_exceptions=True)
            assert all(isinstance(r, Exception) for r in results)  # the server died under C=8
            followed: list[str] = []
            while "restart counter is at 2." not in "".join(followed[-3:]):
                line = await asyncio.wait_for(follower.stdout.readline(), 20)
                followed.append(message(json.loads(line)))
            follower.close()
            assert any(m.startswith("torch.OutOfMemoryError: CUDA out of memory.") for m in followed)
            assert await nrestarts() >= 2
            for _ in range(200):
                if await nrestarts() >= 3:
                    break
                await asyncio.sleep(0.05)
            entries = [json.loads(x) for x in
                       (await run(f"journalctl -u sglang.service -o json --after-cursor '{cursor}'")).splitlines()]
            msgs = [message(e) for e in entries]
            oom = next(i for i, m in enumerate(msgs) if m.startswith("torch.OutOfMemoryError"))
            assert_format("torch.cuda_oom", msgs[oom])
            assert_format("sglang.sigquit_serving", msgs[oom + 1])
            assert msgs[oom + 2] == "sglang.service: Main process exited, code=killed, status=9/KILL"
            assert msgs[oom + 3] == "sglang.service: Failed with result 'signal'."
            after = msgs[oom:]
            nem = [m for m in after if m.startswith("RuntimeError: Not enough memory.")]
            assert len(nem) >= 2
            assert_format("sglang.not_enough_memory", nem[0])
            assert nem[0].endswith("Current value: self.server_args.mem_fraction_static=0.88")
            restarts = [int(e["N_RESTARTS"]) for e in entries if "N_RESTARTS" in e]
            assert restarts[:3] == [1, 2, 3]
            manager = [e for e in entries if e.get("_PID") == "1"]
            assert all(e["_SYSTEMD_UNIT"] == "init.scope" and e["UNIT"] == "sglang.service" for e in manager)
            service = [e for e in entries if e.get("_SYSTEMD_UNIT") == "sglang.service"]
            assert len({e["_SYSTEMD_INVOCATION_ID"] for e in service}) >= 3  # a fresh invocation per start
            # restore steps 5: recovers and takes concurrent load again
            await deploy("--speculative-num-steps 10 --speculative-eagle-topk 1 --speculative-num-draft-tokens 11",
                         "--speculative-num-steps 5 --speculative-eagle-topk 1 --speculative-num-draft-tokens 6")
            await wait_ready()
            assert await nrestarts() == 0
            results = await asyncio.gather(*(stream(host.server_url, 100) for _ in range(8)))
            assert all(r[0] == 100 for r in results)
            assert (await run("systemctl is-active sglang.service")).strip() == "active"
            apps = (await run("nvidia-smi --query-compute-apps=pid,process_name,used_memory "
                              "--format=csv,noheader,nounits")).splitlines()
            assert len(apps) == 4
