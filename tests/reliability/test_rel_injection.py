"""Injection (issue 8 item 9): shell metacharacters, newlines, `..` and NUL in flag values, host names,
unit names and file names are refused with a clear message and never reach a host unquoted.

Every command string the bot's `SshHost` sends is recorded (`on_command`); after all the hostile
input, none of it contains the payloads, and the refusals are in the audit log. At the SSH layer
itself, metacharacters inside one argument arrive as that literal argument (quoted), and NUL,
newline and `..` in paths are refused before anything is sent.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from rel_kit import host_entry

from bot.settings import ConfigError, load_settings
from services.errors import UserInputError
from services.hosts.contract import HostSpec
from services.hosts.ssh import SshHost
from services.store.audit import AuditQuery

HOSTILE = [
    "try steps=4;touch /tmp/PWNED", "try steps=$(touch /tmp/PWNED)", "try steps=`touch /tmp/PWNED`",
    "try 4 steps on sim-gpu-1;touch /tmp/PWNED", "try steps=4\ntouch /tmp/PWNED", "try steps=4\x00PWNED",
    "try steps=4\rPWNED", "try mem=0.8|PWNED", "try --chunked-prefill-size 4096&&PWNED",
    "try --speculative-num-steps=4' ; PWNED '", "try --served-model-name \"a b;PWNED\"",
    "status sim-gpu-1$(PWNED)", "status sim-gpu-1>/tmp/PWNED", "logs sim-gpu-1;PWNED", "logs sim-gpu-1 50|PWNED",
    "rollback sim-gpu-1 to 1;PWNED", "diff sim-gpu-1\nPWNED", "kill-stale sim-gpu-1 12;PWNED",
    "sweep steps 1..3 on sim-gpu-1<PWNED", "bench c=1,4\\PWNED",
]
UNKNOWN = ["status ../../etc/PWNED", "logs ../PWNED", "try 4 steps on ../PWNED", "status sim-gpu-1/../PWNED",
           "try --model-path /models/../../etc/PWNED", "rollback sim-gpu-1 to ../PWNED"]


async def test_hostile_chat_input_is_refused_and_never_sent(rel_bot, any_db_url: str) -> None:
    bot = await rel_bot("healthy", db_url=any_db_url)
    host = bot.core.hosts.get(bot.sim.info["name"])
    sent: list[str] = []
    host._on_command = sent.append  # the SSH layer's command recorder
    for text in HOSTILE + UNKNOWN:
        reply = await bot.say(text)
        assert reply.tone in ("warning", "error"), (text, reply.text)
        assert "Job" not in reply.text, (text, reply.text)
        if text in HOSTILE:
            assert "never accepts shell characters" in reply.text, (text, reply.text)
    # a legitimate command afterwards still works and goes through the recorder
    ok = await bot.say(f"status {bot.sim.info['name']}")
    assert ok.tone not in ("warning", "error"), ok.text
    assert sent, "status should have run commands over SSH"
    assert not any("PWNED" in cmd for cmd in sent), [c for c in sent if "PWNED" in c]
    assert not Path("/tmp/PWNED").exists()  # noqa: ASYNC240
    refused = [e for e in await bot.core.audit.query(AuditQuery(limit=1000)) if e.outcome == "rejected"]
    assert len(refused) >= len(HOSTILE)


async def test_ssh_layer_quotes_metacharacters_and_refuses_nul_newline_dotdot(tmp_path: Path) -> None:
    from simhost.host import SimHost

    async with SimHost(tmp_path / "sim", time_scale=0.002) as sim:
        info = sim.info
        spec = HostSpec(name=info["name"], address=info["ssh_host"], port=info["ssh_port"], user=info["user"],
                        client_key=info["client_key"], known_hosts=info["known_hosts"], unit=info["unit"],
                        unit_dir=info["unit_dir"], server_url=info["server_url"])
        sent: list[str] = []
        h = SshHost(spec, on_command=sent.append)
        marker = tmp_path / "PWNED"
        try:
            payload = f"a;b && touch {marker} $(touch {marker}) `touch {marker}` | > {marker} ' \" \\ * ~"
            res = await h.run(["printf", "%s", payload], timeout=10.0)
            assert res.stdout == payload  # one literal argument, not shell syntax
            assert not marker.exists()
            n = len(sent)
            for bad in (["printf", "a\nb"], ["printf", "a\x00b"], ["printf", "a\rb"], "printf a;b"):
                with pytest.raises(UserInputError):
                    await h.run(bad, timeout=10.0)  # type: ignore[arg-type]
            for path in (f"{info['unit_dir']}/../../../etc/passwd", f"{info['unit_dir']}/x\x00y",
                         f"{info['unit_dir']}/x\ny", "relative/path", f"{info['unit_dir']}/./x"):
                with pytest.raises(UserInputError):
                    await h.read_file(path, timeout=10.0)
                with pytest.raises(UserInputError):
                    await h.upload(path, b"x", timeout=10.0)
            assert len(sent) == n, sent[n:]  # nothing was sent for any refused call
        finally:
            await h.close()


@pytest.mark.parametrize("field,value", [
    ("name", "gpu-1;id"), ("name", "../gpu"), ("name", "gpu\n1"), ("unit", "sglang.service;id"),
    ("unit", "../x.service"), ("unit", "a b.service"), ("unit_dir", "/etc/../tmp"), ("unit_dir", "/etc/sys\x00x"),
    ("unit_dir", "relative/dir"), ("server_url", "file:///etc/passwd"),
])
def test_hostile_host_settings_are_refused_with_the_field_named(field: str, value: str, tmp_path: Path) -> None:
    entry = host_entry({"name": "gpu-1", "ssh_host": "127.0.0.1", "ssh_port": 22, "user": "u",
                        "client_key": str(tmp_path / "k"), "known_hosts": str(tmp_path / "kh"),
                        "unit": "sglang.service", "unit_dir": "/etc/systemd/system",
                        "server_url": "http://127.0.0.1:1"})
    entry[field] = value
    with pytest.raises(ConfigError, match=rf"hosts\.0\.{field}"):
        load_settings(None, hosts=[entry])
