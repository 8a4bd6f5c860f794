"""The fake SGLang 0.5.9 server and the sim's tools, on a healthy host (steps 3)."""

from __future__ import annotations

import asyncio
import json
import signal
import sys
import time

import aiohttp
from simhost_kit import assert_format, journal, messages, sh, tool_env, wait_for

from simhost.sglang import model

STEPS = 3
ACCEPT, RATE = model.speed(STEPS)


async def stream(url: str, max_tokens: int, usage: bool = True) -> dict[str, object]:
    body = {"model": "qwen3.5-122b-a10b", "messages": [{"role": "user", "content": "Tell me about GPUs. " * 20}],
            "max_tokens": max_tokens, "ignore_eos": True, "stream": True,
            "stream_options": {"include_usage": usage}}
    chunks: list[tuple[float, str]] = []
    first_role = None
    got_usage = None
    async with aiohttp.ClientSession() as session, session.post(f"{url}/v1/chat/completions", json=body) as resp:
        assert resp.status == 200
        assert resp.headers["content-type"].startswith("text/event-stream")
        async for raw in resp.content:
            line = raw.strip()
            if not line.startswith(b"data: ") or line == b"data: [DONE]":
                continue
            data = json.loads(line[6:])
            if data.get("usage"):
                got_usage = data["usage"]
            if not data["choices"]:
                continue
            delta = data["choices"][0]["delta"]
            if first_role is None:
                first_role = delta
            if delta.get("content"):
                chunks.append((time.monotonic(), delta["content"]))
    return {"chunks": chunks, "usage": got_usage, "first": first_role}


async def test_c1_rate_chunks_and_usage(healthy_host) -> None:  # type: ignore[no-untyped-def]
    got = await stream(healthy_host.server_url, 600)
    usage = got["usage"]
    assert isinstance(usage, dict) and usage["completion_tokens"] == 600
    assert usage["total_tokens"] == usage["prompt_tokens"] + 600
    assert got["first"] == {"role": "assistant", "content": "", "reasoning_content": None, "tool_calls": None}
    chunks = got["chunks"]
    assert isinstance(chunks, list)
    per_chunk = 600 / len(chunks)
    assert abs(per_chunk - ACCEPT) / ACCEPT < 0.05  # several tokens per SSE event: the accept length
    elapsed = chunks[-1][0] - chunks[0][0]
    rate = (600 - 1) / elapsed
    assert abs(rate - RATE) / RATE < 0.02, rate


async def test_logs_metrics_and_server_info(healthy_host) -> None:  # type: ignore[no-untyped-def]
    await asyncio.gather(*(stream(healthy_host.server_url, 300) for _ in range(3)))
    msgs = messages(healthy_host)
    decode = [m for m in msgs if "Decode batch" in m]
    assert decode, "no Decode batch line"
    for line in decode:
        assert_format("sglang.decode_spec", line)
    assert any("#running-req: 3," in m for m in decode)
    accept = float(decode[-1].split("accept len: ")[1].split(",")[0])
    assert abs(accept - ACCEPT) < 0.05
    assert f"accept rate: {ACCEPT / (STEPS + 1):.2f}," in decode[-1]  # 0.5.9: accept_len / draft tokens
    for kind, needle in (("sglang.prefill", "Prefill batch"), ("sglang.access", '"POST /v1/chat/completions'),
                         ("sglang.ready", "ready to roll"), ("sglang.capacity", "max_total_num_tokens=")):
        line = next(m for m in msgs if needle in m)
        assert_format(kind, line)
    # each writing process has its own _PID/_COMM (journald reads the writer's credentials)
    decode_entries = [e for e in journal(healthy_host) if "Decode batch" in e["MESSAGE"]]
    _, tp0, _ = await sh(healthy_host, "nvidia-smi --query-compute-apps=pid --format=csv,noheader -i 0")
    assert {(e["_PID"], e["_COMM"], e["_CMDLINE"]) for e in decode_entries} == {
        (tp0.strip(), "sglang::schedul", "sglang::scheduler_TP0")}
    ready = next(e for e in journal(healthy_host) if "ready to roll" in e["MESSAGE"])
    assert ready["_COMM"] == "python3" and ready["_PID"] == str(healthy_host.supervisor.main_pid)
    cap = next(m for m in msgs if "max_total_num_tokens=" in m)
    assert "max_total_num_tokens=295931," in cap and "max_running_requests=17," in cap
    assert "speculative_num_draft_tokens is adjusted" not in msgs  # unit already says steps + 1
    server_args = next(e for e in journal(healthy_host) if "] server_args=ServerArgs(" in e["MESSAGE"])
    assert len(server_args["MESSAGE"]) > 4096  # journalctl -o json shows it as null
    async with aiohttp.ClientSession() as session:
        async with session.get(f"{healthy_host.server_url}/metrics") as resp:
            text = await resp.text()
        for name in ("sglang:num_running_reqs", "sglang:num_queue_reqs", "sglang:gen_throughput",
                     "sglang:spec_accept_length", "sglang:max_total_num_tokens", "sglang:generation_tokens_total"):
            assert f"\n{name}{{" in "\n" + text
        async with session.get(f"{healthy_host.server_url}/get_server_info") as resp:
            info = await resp.json()
        assert abs(info["internal_states"][0]["avg_spec_accept_length"] - ACCEPT) < 0.05
        assert info["speculative_num_draft_tokens"] == STEPS + 1 and info["version"] == "0.5.9"
        async with session.get(f"{healthy_host.server_url}/v1/models") as resp:
            assert (await resp.json())["data"][0]["id"] == "qwen3.5-122b-a10b"
        async with session.get(f"{healthy_host.server_url}/health_generate") as resp:
            assert resp.status == 200
    _rc, out, _ = await sh(healthy_host, "journalctl -u sglang.service -o json --all -n 200")
    objs = [json.loads(line) for line in out.splitlines()]
    assert all(isinstance(v, str) for o in objs for k, v in o.items() if k != "MESSAGE")
    blobs = [o["MESSAGE"] for o in objs if not isinstance(o["MESSAGE"], str)]  # tqdm bars: \r inside
    assert blobs and all(isinstance(b, list) and b[0] == 13 for b in blobs)


async def test_bad_flag_is_argparse_error_exit_2(healthy_host) -> None:  # type: ignore[no-untyped-def]
    cases = [(["--model-path", "/m", "--speculative-num-stepz", "3"],
              "launch_server.py: error: unrecognized arguments: --speculative-num-stepz 3"),
             (["--model-path", "/m", "--speculative-num-steps", "ten"],
              "launch_server.py: error: argument --speculative-num-steps: invalid int value: 'ten'")]
    for argv, text in cases:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "simhost.sglang.launch_server", *argv, env=tool_env(healthy_host),
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        _out, err = await proc.communicate()
        assert proc.returncode == 2
        assert err.decode().splitlines()[-1] == text
        assert err.decode().startswith("usage: launch_server.py [-h] --model-path MODEL_PATH")


async def test_tools_nvidia_smi_journalctl_systemctl(healthy_host) -> None:  # type: ignore[no-untyped-def]
    host = healthy_host
    rc, out, _ = await sh(host, "nvidia-smi --query-gpu=index,memory.used,memory.total --format=csv,noheader,nounits")
    lines = out.splitlines()
    assert rc == 0 and len(lines) == 4
    for line in lines:
        assert_format("nvidia_smi.query_gpu_nounits", line)
        assert line.endswith(", 97887")
    rc, out, _ = await sh(host, "nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv")
    header, *apps = out.splitlines()
    assert_format("nvidia_smi.compute_apps_header", header)
    rc, out, _ = await sh(host, "nvidia-smi --query-compute-apps=pid,process_name,used_memory "
                                "--format=csv,noheader,nounits")
    apps = out.splitlines()
    assert len(apps) == 4 and all(a.split(", ")[1].startswith("sglang::scheduler_TP") for a in apps)
    for line in apps:
        assert_format("nvidia_smi.compute_apps_nounits", line)
    rc, out, _ = await sh(host, "systemctl show sglang.service -p MainPID --value")
    main_pid = int(out)
    for app in apps:
        pid = int(app.split(", ")[0])
        _, pgid, _ = await sh(host, f"ps -o pgid= -p {pid}")
        assert pgid.strip() == str(main_pid)  # in the unit's process group (its "cgroup")
    rc, out, _ = await sh(host, "journalctl -u sglang.service -o json -n 3 --show-cursor --no-pager")
    *objs, cursor_line = out.splitlines()
    assert len(objs) == 3 and cursor_line.startswith("-- cursor: ")
    cursor = json.loads(objs[0])["__CURSOR"]
    assert_format("journal.cursor", cursor)
    rc, out, _ = await sh(host, f"journalctl -u sglang.service -o json --after-cursor '{cursor}'")
    assert [json.loads(x)["__CURSOR"] for x in out.splitlines()][:2] == [json.loads(o)["__CURSOR"] for o in objs[1:]]
    rc, out, _ = await sh(host, "journalctl -u sglang.service -n 2")
    for line in out.splitlines():
        assert_format("journal.short", line)
    cur = host.root / "cur"
    rc, first, _ = await sh(host, f"journalctl -u sglang -o cat -n 3 --cursor-file {cur}; journalctl -q -u sglang "
                                  f"-o cat --cursor-file {cur}; curl -s -o /dev/null {host.server_url}/health")
    assert len(first.splitlines()) == 3  # 3 lines, then nothing new
    new: list[str] = []
    for _ in range(40):
        new += (await sh(host, f"journalctl -q -u sglang -o cat --cursor-file {cur}"))[1].splitlines()
        if new:
            break
        await asyncio.sleep(0.05)
    assert len(new) == 1 and new[0].endswith('"GET /health HTTP/1.1" 200 OK')
    rc, out, _ = await sh(host, "journalctl -u sglang --since '-1h' -o cat | wc -l; journalctl -u sglang --since "
                                "'2001-01-01 00:00:00' --until '2001-01-02'")
    assert int(out.splitlines()[0]) > 50 and out.splitlines()[1] == "-- No entries --"
    rc, out, _ = await sh(host, "systemctl status sglang.service --no-pager")
    assert rc == 0
    assert_format("systemctl.status_loaded", out.splitlines()[1])
    assert_format("systemctl.status_active_failed", out.splitlines()[2])
    timings = []
    for _ in range(3):
        start = time.monotonic()
        rc, out, _ = await sh(host, "systemctl is-active sglang.service")
        timings.append(time.monotonic() - start)
        assert (rc, out) == (0, "active\n")
    assert min(timings) < 0.3, timings


async def test_journalctl_follow_ends_with_its_reader(healthy_host) -> None:  # type: ignore[no-untyped-def]
    env = tool_env(healthy_host)
    for how in ("close", "sigterm"):
        proc = await asyncio.create_subprocess_exec("journalctl", "-u", "sglang.service", "-f", "-o", "json",
                                                    env=env, stdout=asyncio.subprocess.PIPE)
        assert proc.stdout is not None
        tail = [await proc.stdout.readline() for _ in range(10)]
        assert all(json.loads(t)["_SYSTEMD_UNIT"] in ("sglang.service", "init.scope") for t in tail)
        async with aiohttp.ClientSession() as session, session.get(f"{healthy_host.server_url}/health") as resp:
            assert resp.status == 200
        live = json.loads(await asyncio.wait_for(proc.stdout.readline(), 5))
        assert '"GET /health HTTP/1.1" 200 OK' in live["MESSAGE"]
        if how == "close":
            proc._transport.get_pipe_transport(1).close()  # type: ignore[attr-defined]
        else:
            proc.send_signal(signal.SIGTERM)
        # it ends: the sim's exits 0 or dies of SIGPIPE; systemd's exits 1 on EPIPE and dies of SIGTERM
        assert await asyncio.wait_for(proc.wait(), 3) in (0, 1, -signal.SIGPIPE, -signal.SIGTERM)


async def test_stop_under_load_runs_into_stop_timeout(healthy_host) -> None:  # type: ignore[no-untyped-def]
    host = healthy_host
    tasks = [asyncio.create_task(stream(host.server_url, 5000)) for _ in range(2)]
    await wait_for(lambda: any("#running-req: 2," in m for m in messages(host)))
    rc, _, _ = await sh(host, "systemctl stop sglang.service")
    assert rc == 0
    for task in tasks:
        try:
            await task
        except (aiohttp.ClientError, asyncio.IncompleteReadError):
            pass
    msgs = messages(host)
    i = msgs.index("Stopping sglang.service - SGLang server (Qwen3.5-122B-A10B)...")
    seq = msgs[i:]
    assert any(m.endswith("SIGTERM received. signum=None frame=None. Draining requests and shutting down...")
               for m in seq)
    graceful = [m for m in seq if "Gracefully exiting..." in m]
    assert graceful and "Remaining number of requests 2." in graceful[0]
    assert_format("sglang.graceful", graceful[0])
    # systemd's own lines, in order; the server's stdout is another stream (journald's and the sim's alike), so a
    # line it wrote just before the SIGKILL can land between them (seen at load ~5, session 7)
    own = [e.get("MESSAGE", "") for e in journal(host)
           if e.get("SYSLOG_IDENTIFIER") == "systemd" or e.get("_PID") in (1, "1")]
    own = own[own.index("Stopping sglang.service - SGLang server (Qwen3.5-122B-A10B)..."):]
    j = own.index("sglang.service: State 'stop-sigterm' timed out. Killing.")
    assert own[j + 1].startswith("sglang.service: Killing process ") and "(python3) with signal SIGKILL." in own[j + 1]
    assert own[j + 2:j + 5] == ["sglang.service: Main process exited, code=killed, status=9/KILL",
                                "sglang.service: Failed with result 'timeout'.",
                                "Stopped sglang.service - SGLang server (Qwen3.5-122B-A10B)."]
    assert_format("systemd.consumed", own[j + 5])
    rc, out, _ = await sh(host, "systemctl is-active sglang; nvidia-smi --query-compute-apps=pid --format=csv,noheader")
    assert out == "failed\n"  # and no GPU memory left held
    # an idle stop is still a SIGKILL of itself (kill_process_tree): code=killed, result 'signal'
    await sh(host, "systemctl start sglang")
    await host.wait_ready(20)
    await sh(host, "systemctl stop sglang")
    assert messages(host)[-4:-1] == ["sglang.service: Main process exited, code=killed, status=9/KILL",
                                     "sglang.service: Failed with result 'signal'.",
                                     "Stopped sglang.service - SGLang server (Qwen3.5-122B-A10B)."]
