"""Each stored unit revision records the engine its ExecStart= launches."""

from __future__ import annotations

from units_testkit import SGLANG_UNIT, VLLM_UNIT

from services.store import Database
from services.units import Revisions


async def test_revisions_record_the_engine(db: Database) -> None:
    revs = Revisions(db)
    sg = await revs.observe("gpu-1", "sglang.service", SGLANG_UNIT)
    vl = await revs.observe("gpu-2", "vllm.service", VLLM_UNIT, source="deployed", by="ann")
    odd = await revs.observe("gpu-3", "x.service", "[Service]\nExecStart=/opt/tgi/bin/launcher --model-id m\n")
    assert (sg.engine, vl.engine, odd.engine) == ("sglang", "vllm", "unknown")
    again = await revs.get(vl.id)
    assert again.engine == "vllm" and again == vl
    assert [r.engine for r in await revs.list("gpu-2")] == ["vllm"]
