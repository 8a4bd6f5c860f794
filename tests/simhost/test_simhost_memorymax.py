"""`MemoryMax=` on the sim's own service manager: a real memory cgroup, the kernel's OOM killer, systemd's lines."""

from __future__ import annotations

from pathlib import Path

import pytest
from simhost_kit import SCALE, messages, wait_for

from simhost.cgroup import MemoryCgroup, parse_bytes
from simhost.host import SimHost


def test_memory_max_values_read_as_systemd_reads_them() -> None:
    assert [parse_bytes(v) for v in ("1G", "512M", "100K", "4096", "infinity", "1.5G", "x", "-1")] == [
        1 << 30, 512 << 20, 100 << 10, 4096, -1, 3 << 29, None, None]


def _cgroups_here() -> str | None:
    cg = MemoryCgroup("probe.service")
    cg.remove()
    return cg.error or None


@pytest.mark.skipif(_cgroups_here() is not None, reason=f"no memory cgroup here: {_cgroups_here()}")
async def test_a_unit_over_its_memory_max_is_oom_killed_with_systemds_words(tmp_path: Path) -> None:
    async with SimHost(tmp_path / "s", ssh=False, time_scale=SCALE) as host:
        text = host.unit_path.read_text().replace("[Service]\n", "[Service]\nMemoryMax=6M\n")
        host.unit_path.write_text(text)
        assert host.supervisor is not None
        await host.supervisor.daemon_reload()
        await host.supervisor.restart()
        unit = "sglang.service"
        await wait_for(lambda: f"{unit}: Failed with result 'oom-kill'." in messages(host), within=30)
        msgs = messages(host)
        i = msgs.index(f"{unit}: A process of this unit has been killed by the OOM killer.")
        assert msgs[i + 1:i + 3] == [f"{unit}: Main process exited, code=killed, status=9/KILL",
                                      f"{unit}: Failed with result 'oom-kill'."]
        assert host.supervisor.properties()["Result"] in ("oom-kill", "success")  # auto-restart may be under way
