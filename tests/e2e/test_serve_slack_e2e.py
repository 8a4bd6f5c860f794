"""`pitcrew serve` as its own process in HTTP mode, the fake Slack Web API and the simulated host:
a signed `/pitcrew try 4 steps`, a click on Confirm, and the job's message, progress and thread table."""

from __future__ import annotations

import asyncio
import json
import os
import re
import sqlite3
import sys
import time
from pathlib import Path

import aiohttp
from support.fake_slack import FakeSlack
from support.slack_http import FORM, button, button_click, signed_headers, slash_command

from simhost.host import SimHost
from simhost.ports import claim_port, release_port

SECRET = "e2e-signing-secret-0123456789abcdef"


def _signed(body: str, content_type: str = FORM) -> dict[str, str]:
    return signed_headers(body, SECRET, content_type)


async def test_serve_http_mode_runs_a_try_from_slash_command_to_thread_table(tmp_path: Path) -> None:
    fake = FakeSlack()
    fake.add_user("U1", "alice")
    fake.add_channel("C1", "gpu-ops")
    await fake.start()
    proc = None
    port = claim_port()  # the bot binds it in its own process, later
    try:
        async with SimHost(tmp_path / "sim", scenario="healthy", time_scale=0.01) as sim:
            info = sim.info
            host = {"name": info["name"], "address": info["ssh_host"], "port": info["ssh_port"],
                    "user": info["user"], "client_key": info["client_key"], "known_hosts": info["known_hosts"],
                    "unit": info["unit"], "unit_dir": info["unit_dir"], "server_url": info["server_url"]}
            env = {**os.environ, "PITCREW_SLACK__MODE": "http", "PITCREW_SLACK__BOT_TOKEN": fake.token,
                   "PITCREW_SLACK__SIGNING_SECRET": SECRET, "PITCREW_SLACK__API_BASE_URL": fake.base_url,
                   "PITCREW_SLACK__HTTP_HOST": "127.0.0.1", "PITCREW_SLACK__HTTP_PORT": str(port),
                   "PITCREW_SLACK__ALERT_CHANNEL": "C1",
                   "PITCREW_POLICY__ROLES": json.dumps({"*": "viewer", "U1": "admin"}),
                   "PITCREW_DB__URL": f"sqlite+aiosqlite:///{tmp_path / 'bot.db'}",
                   "PITCREW_HOSTS": json.dumps([host]),
                   "PITCREW_BENCH": json.dumps({"concurrency": [1], "requests_per_level": 3, "warmup": 1,
                                                "input_len": 32, "output_len": 48})}
            log = (tmp_path / "serve.log").open("wb")
            proc = await asyncio.create_subprocess_exec(sys.executable, "-m", "bot", "serve", env=env,
                                                        cwd=tmp_path, stdout=log, stderr=log)
            url = f"http://127.0.0.1:{port}"
            async with aiohttp.ClientSession() as http:
                for _ in range(200):
                    try:
                        async with http.get(f"{url}/healthz") as r:
                            if r.status == 200:
                                break
                    except aiohttp.ClientError:
                        pass
                    await asyncio.sleep(0.1)
                # alice opens the App Home: the fleet at a glance, read from the simulated host
                home = json.dumps({"token": "x", "team_id": "T0001", "api_app_id": "A1", "type": "event_callback",
                                   "event_id": "EvHome1", "event_time": int(time.time()),
                                   "event": {"type": "app_home_opened", "user": "U1", "channel": "D1", "tab": "home",
                                             "event_ts": str(time.time())}})
                async with http.post(f"{url}/slack/events", data=home,
                                     headers=_signed(home, "application/json")) as r:
                    assert r.status == 200
                await fake.wait_for(lambda f: "U1" in f.home_views, timeout=30)
                first_home = json.dumps(fake.home_views["U1"]["blocks"], ensure_ascii=False)
                assert info["name"] in first_home and "active/running" in first_home, first_home
                assert "sglang · steps 3" in first_home and "last result: none yet" in first_home, first_home
                body = slash_command("try 4 steps", user=("U1", "alice"), channel=("C1", "gpu-ops"))
                t0 = time.monotonic()
                async with http.post(f"{url}/slack/events", data=body, headers=_signed(body)) as r:
                    assert r.status == 200
                assert time.monotonic() - t0 < 3.0
                await fake.wait_for(lambda f: any(m.metadata and m.metadata.get("event_payload", {})
                                                  .get("key") == "job:1" for m in f.messages), timeout=60)
                parent = next(m for m in fake.messages
                              if m.metadata and m.metadata["event_payload"]["key"] == "job:1")
                # the preview shows the exact flag diff (">" may arrive escaped as "&gt;")
                assert re.search(r"--speculative-num-steps 3 -(>|&gt;) 4", json.dumps(parent.blocks)), parent.blocks
                confirm = button(parent, "Confirm")
                assert confirm is not None, parent.blocks
                click = button_click(parent, confirm, user=("U1", "alice"))
                async with http.post(f"{url}/slack/events", data=click, headers=_signed(click)) as r:
                    assert r.status == 200
                await fake.wait_for(lambda f: any(m.thread_ts == parent.ts and m.blocks and any(
                    b.get("type") in ("table", "rich_text") for b in m.blocks) for m in f.messages), timeout=90)
                def shown(m: object) -> str:
                    return str(getattr(m, "text", "")) + json.dumps(getattr(m, "blocks", None))

                await fake.wait_for(lambda f: "succeeded" in shown(next(
                    m for m in f.messages if m.ts == parent.ts)), timeout=30)
                parent = next(m for m in fake.messages if m.ts == parent.ts)
                assert parent.edits >= 2  # progress edited in place, then the final state
                assert not fake.duplicates()
                # the Home tab was republished with the job's result (steps 4, decode tok/s at C=1)
                await fake.wait_for(lambda f: re.search(r"last result: steps 4 · \d+ tok/s .*at C=1 · run 1",
                                                        json.dumps(f.home_views["U1"]["blocks"],
                                                                   ensure_ascii=False)) is not None, timeout=30)
                assert len(fake.calls_to("views.publish")) >= 2
                # the record stays: the final message still shows the exact diff and who confirmed it
                final = shown(parent)
                assert re.search(r"--speculative-num-steps 3 -(>|&gt;) 4", final), final
                assert re.search(r"confirmed by @alice at \d\d:\d\d UTC", final), final
                # progress edits coalesced to one per 3 s (besides the click receipt, confirm, start and end)
                assert not fake.early_calls()
                edits = [c.at for c in fake.calls_to("chat.update") if c.args.get("ts") == parent.ts]
                assert len(edits) <= 4 + (edits[-1] - edits[0]) / 3.0, edits
            # the audit log links the job message's permalink (built from auth.test's team URL)
            with sqlite3.connect(tmp_path / "bot.db") as conn:
                details = [json.loads(d) for (d,) in conn.execute(
                    "select detail from audit_events where action = 'chat_message'")]
            link = f"https://fake.slack.test/archives/C1/p{parent.ts.replace('.', '')}"
            assert {"job": 1, "key": "job:1", "permalink": link} in details, details
            assert "--speculative-num-steps 4" in Path(sim.unit_path).read_text()
    finally:
        if proc is not None and proc.returncode is None:
            proc.terminate()
            try:
                await asyncio.wait_for(proc.wait(), 20)
            except TimeoutError:
                proc.kill()
        await fake.stop()
        release_port(port)
