"""Load generator for the Slack ack-latency test, run as a separate process so its work does not
share the bot's event loop: it runs the fake Slack Web API, prints its base URL, then on a line
``<port> <rate> <seconds>`` from stdin fires signed slash commands at that rate and prints the
latencies (JSON) once every answer has reached the fake Slack (or a deadline passed)."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import sys
import time
import urllib.parse

import aiohttp
from support.fake_slack import FakeSlack


def _sign(secret: str, body: str, ts: int) -> str:
    return "v0=" + hmac.new(secret.encode(), f"v0:{ts}:{body}".encode(), hashlib.sha256).hexdigest()


async def main() -> None:
    secret = sys.argv[1]
    fake = FakeSlack()
    await fake.start()
    print(json.dumps({"base_url": fake.base_url, "token": fake.token}), flush=True)
    line = await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
    port, rate, seconds = int(line.split()[0]), float(line.split()[1]), float(line.split()[2])
    url = f"http://127.0.0.1:{port}/slack/events"
    n = int(rate * seconds)
    lat: list[float] = []
    statuses: list[int] = []
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:

        async def one(i: int) -> None:
            body = urllib.parse.urlencode({
                "team_id": "T0001", "channel_id": "C1", "user_id": f"U{i % 50}", "user_name": f"u{i % 50}",
                "command": "/pitcrew", "text": "status" if i % 2 else "history", "trigger_id": f"load-{i}",
                "api_app_id": "A1", "response_url": "http://127.0.0.1:9/r"})
            ts = int(time.time())
            headers = {"Content-Type": "application/x-www-form-urlencoded",
                       "X-Slack-Request-Timestamp": str(ts), "X-Slack-Signature": _sign(secret, body, ts)}
            t0 = time.perf_counter()
            async with session.post(url, data=body.encode(), headers=headers) as resp:
                await resp.read()
                statuses.append(resp.status)
            lat.append(time.perf_counter() - t0)

        start = time.monotonic()
        tasks = []
        for i in range(n):
            delay = start + i / rate - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            tasks.append(asyncio.create_task(one(i)))
        await asyncio.gather(*tasks)
        fired_s = time.monotonic() - start
    try:
        await fake.wait_for(lambda f: len(f.messages) >= n, timeout=60)
    except TimeoutError:
        pass
    drained_s = time.monotonic() - start
    print(json.dumps({"n": n, "fired_s": fired_s, "drained_s": drained_s, "lat": lat, "statuses": statuses,
                      "posted": len(fake.messages), "duplicates": fake.duplicates()}), flush=True)
    await fake.stop()


if __name__ == "__main__":
    asyncio.run(main())
