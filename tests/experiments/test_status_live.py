"""`status` over real SSH to the simulated host: the unit's state and configuration read by services.status."""

from __future__ import annotations

import asyncio
from typing import Any

from handlers.contract import Reply


async def test_status_reads_the_live_unit_and_shares_the_read(make_bot: Any) -> None:
    bot = await make_bot()
    await bot.sim.wait_ready(60)
    reply = await bot.say("status")
    assert reply.text.startswith("Status") and reply.tables, reply.text
    (row,) = reply.tables[0].rows
    host, unit, engine, state, restarts, config, job, incidents, last = row
    # SGLang logs no version and no start is recorded: the running server names it (/get_server_info)
    assert (host, unit, engine) == (bot.sim.info["name"], bot.sim.info["unit"], "SGLang 0.5.9")
    assert state == "active/running" and restarts.isdigit() and config == "steps 3"
    assert (job, incidents, last) == ("—", "—", "—")
    many: list[Reply] = await asyncio.gather(*(bot.say("status") for _ in range(20)))
    assert {r.tables[0].rows for r in many} == {reply.tables[0].rows}
