"""pitcrew's own unit, deploy/pitcrew.service: systemd 252 accepts it (`systemd-analyze verify` inside a host booted
under systemd itself), its stop timeout is above the drain bound of the default policy, and it is hardened; and,
installed as the unit's header says, it runs `pitcrew serve` under systemd 252 (Slack HTTP mode against the fake
Web API, SQLite in the state directory, the engine unit of the same host over SSH), and `systemctl stop` during a
`try` drains: the engine unit is back on its pre-job revision and serving, the job is `interrupted`, exit 0."""

from __future__ import annotations

import asyncio
import json
import re
import shlex
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from bot.settings import load_settings
from simhost.host import SimHost
from simhost.systemd import unavailable

Runner = Callable[..., Awaitable[tuple[int, str, str]]]

UNIT = Path(__file__).resolve().parents[2] / "deploy" / "pitcrew.service"


def _settings(text: str) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for line in text.splitlines():
        if "=" in line and not line.lstrip().startswith(("#", "[")):
            key, value = line.split("=", 1)
            found.setdefault(key.strip(), []).append(value.strip())
    return found


def test_the_stop_timeout_is_above_the_drain_bound_and_the_service_is_hardened() -> None:
    unit = _settings(UNIT.read_text())
    p = load_settings(None).policy
    bound = p.shutdown_grace_s + p.stop_timeout_s + p.ready_timeout_s + 30  # docs/RELIABILITY.md, graceful stop
    (stop,) = unit["TimeoutStopSec"]
    assert re.fullmatch(r"\d+", stop) and int(stop) > bound, (stop, bound)
    for key, value in {"NoNewPrivileges": "yes", "ProtectSystem": "strict", "Restart": "on-failure",
                       "StateDirectory": "pitcrew", "User": "pitcrew-bot", "CapabilityBoundingSet": "",
                       # the default action (SIGSYS) killed pitcrew: numpy's OpenBLAS calls mbind() at import
                       "SystemCallErrorNumber": "EPERM"}.items():
        assert unit.get(key) == [value], key
    assert "ReadWritePaths" not in unit  # the state directory is the only writable place


@pytest.mark.skipif(unavailable() is not None, reason=f"real systemd unavailable: {unavailable()}")
async def test_systemd_252_verifies_the_unit_and_rates_its_exposure(tmp_path: Path) -> None:
    async with SimHost(tmp_path / "sim", time_scale=0.01, systemd="real") as sim:
        assert sim.real is not None
        run = sim.real.ns.run
        setup = ("useradd --system --home-dir /var/lib/pitcrew --shell /usr/sbin/nologin pitcrew-bot && "
                 "mkdir -p /opt/pitcrew/.venv/bin /etc/pitcrew && printf '#!/bin/sh\\n' > "
                 "/opt/pitcrew/.venv/bin/pitcrew && chmod 755 /opt/pitcrew/.venv/bin/pitcrew && "
                 "cat > /etc/systemd/system/pitcrew.service")
        rc, out, err = await run(["sh", "-c", setup], input=UNIT.read_bytes())
        assert rc == 0, out + err
        rc, out, err = await run(["systemd-analyze", "verify", "/etc/systemd/system/pitcrew.service"])
        said = [line for line in (out + err).splitlines() if "pitcrew.service" in line]
        assert rc == 0 and said == [], out + err
        rc, out, err = await run(["sh", "-c", "systemctl daemon-reload && "
                                              "systemd-analyze security --no-pager pitcrew.service | tail -n 1"])
        assert rc == 0, out + err
        m = re.search(r"Overall exposure level for pitcrew.service: (\d+\.\d+) (\S+)", out)
        assert m is not None, out
        print(f"systemd-analyze security: {m.group(1)} {m.group(2)}")
        assert float(m.group(1)) <= 3.0, out  # systemd calls <= 3.x "OK" (hardened), 10 "UNSAFE"


# ---- the unit running pitcrew under systemd 252, stopped mid-job ----------------------------------------------------

SECRET = "deploy-unit-signing-secret-0123456789"
ALICE = ("U1", "alice")
CHANNEL = ("C1", "gpu-ops")
VENV = "/opt/pitcrew/.venv"
STATE = "/var/lib/pitcrew"
PYTHON = f"python{sys.version_info.major}.{sys.version_info.minor}"  # the worktree venv's; the host's must match
# the job's benchmark: long enough (8 requests of 600 tokens, ~2 s each at steps 4) to be running when the stop comes
BENCH = {"concurrency": [1], "requests_per_level": 8, "warmup": 0, "input_len": 16, "output_len": 600}


def _toml(value: object) -> str:
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{json.dumps(k)} = {_toml(v)}" for k, v in value.items()) + " }"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return json.dumps(value)  # str, int: a TOML basic string is a JSON string


def _config(fake_url: str, http_port: int, host: dict[str, object]) -> str:
    """/etc/pitcrew/pitcrew.toml: Slack in HTTP mode against the fake Web API, SQLite in the state directory."""
    sections = {"db": {"url": f"sqlite+aiosqlite:///{STATE}/pitcrew.db"},
                "slack": {"mode": "http", "api_base_url": fake_url, "alert_channel": CHANNEL[0],
                          "http_host": "127.0.0.1", "http_port": http_port},
                "policy": {"roles": {"*": "viewer", ALICE[0]: "admin"}},
                "bench": BENCH}
    lines = [line for name, values in sections.items()
             for line in (f"[{name}]", *(f"{k} = {_toml(v)}" for k, v in values.items()), "")]
    lines += ["[[hosts]]", *(f"{k} = {_toml(v)}" for k, v in host.items()), ""]
    return "\n".join(lines)


def _install_script(repo: Path, sim_dir: Path) -> str:
    """What an installer does (the unit's header), as root inside the host. The venv in /opt/pitcrew is a venv of
    the host's Python 3.11 whose site-packages reach this worktree's (the worktree venv's own interpreter lives under
    /root, which ProtectHome= hides and pitcrew-bot may not enter); its `pitcrew` is the worktree's console script
    with the shebang a pip install into /opt/pitcrew/.venv writes."""
    q = shlex.quote
    site = repo / ".venv" / "lib" / PYTHON / "site-packages"
    script = (repo / ".venv" / "bin" / "pitcrew").read_text().split("\n", 1)[1]
    return "\n".join([
        "set -eu",
        "useradd --system --home-dir /var/lib/pitcrew --shell /usr/sbin/nologin pitcrew-bot",
        f"/usr/bin/python3 -m venv --without-pip {VENV}",
        f"echo {q(f'import site; site.addsitedir({str(site)!r})')} > {VENV}/lib/{PYTHON}/site-packages/pitcrew.pth",
        f"printf '%s\\n%s' {q(f'#!{VENV}/bin/python3')} {q(script)} > {VENV}/bin/pitcrew",
        f"chmod 755 {VENV}/bin/pitcrew",
        "install -d -m 750 -g pitcrew-bot /etc/pitcrew",
        f"install -m 640 -g pitcrew-bot {q(str(sim_dir / 'ssh' / 'client_key'))} /etc/pitcrew/id_ed25519",
        f"install -m 640 -g pitcrew-bot {q(str(sim_dir / 'ssh' / 'known_hosts_systemd'))} /etc/pitcrew/known_hosts",
        "install -m 640 -g pitcrew-bot /dev/stdin /etc/pitcrew/pitcrew.toml",
        f"printf '%s\\n' PITCREW_SLACK__BOT_TOKEN=xoxb-fake-token PITCREW_SLACK__SIGNING_SECRET={SECRET} "
        "| install -m 640 -g pitcrew-bot /dev/stdin /etc/pitcrew/env",
        "install -m 644 /dev/fd/3 /etc/systemd/system/pitcrew.service 3<<'PITCREW_UNIT_EOF'",
        UNIT.read_text().rstrip("\n"),
        "PITCREW_UNIT_EOF",
        # the test's own: an active unit ordered after pitcrew.service keeps it loaded once stopped (systemd unloads an
        # inactive unit nothing references, and `systemctl show` then reports a fresh unit's zeros)
        "printf '[Unit]\\nAfter=pitcrew.service\\n[Service]\\nType=oneshot\\nRemainAfterExit=yes\\n"
        "ExecStart=/bin/true\\n' > /etc/systemd/system/pitcrew-observer.service",
        "systemctl daemon-reload",
        "systemctl start pitcrew-observer.service",
    ]) + "\n"


async def _db_rows(run: Runner, sql: str, *args: object) -> list[list[object]]:
    """Rows of `sql` on pitcrew's database, read inside the host as pitcrew-bot (a root reader could leave WAL files
    pitcrew-bot cannot open)."""
    code = ("import json, sqlite3, sys; c = sqlite3.connect(sys.argv[1]); "
            "print(json.dumps(c.execute(sys.argv[2], json.loads(sys.argv[3])).fetchall()))")
    rc, out, err = await run(["runuser", "-u", "pitcrew-bot", "--", "/usr/bin/python3", "-c", code,
                              f"{STATE}/pitcrew.db", sql, json.dumps(list(args))])
    assert rc == 0, out + err
    rows: list[list[object]] = json.loads(out)
    return rows


async def _until(run: Runner, what: str, check: Callable[[], Awaitable[bool]], within: float) -> None:
    """Poll `check` until it holds; past `within` s fail with `what` and pitcrew.service's status and journal."""
    try:
        async with asyncio.timeout(within):
            while not await check():
                await asyncio.sleep(0.2)
    except TimeoutError:
        _, status, _ = await run(["systemctl", "status", "--no-pager", "pitcrew.service"])
        _, journal, _ = await run(["journalctl", "-u", "pitcrew.service", "-n", "60", "--no-pager"])
        raise AssertionError(f"not within {within:.0f} s: {what}\n{status}\n{journal}") from None


@pytest.mark.slow
@pytest.mark.timeout(300)
@pytest.mark.skipif(unavailable() is not None, reason=f"real systemd unavailable: {unavailable()}")
async def test_systemctl_stop_mid_job_restores_the_engine_unit_and_exits_0(tmp_path: Path) -> None:
    import aiohttp
    from support.fake_slack import FakeSlack
    from support.slack_http import button, button_click, signed_headers, slash_command

    from simhost.ports import claim_port, release_port
    from simhost.systemd.backend import repo_root

    host_python = subprocess.run(["/usr/bin/python3", "-c", "import sys; print(f'python{sys.version_info.major}."
                                  "{sys.version_info.minor}')"], capture_output=True, text=True, timeout=30).stdout
    if host_python.strip() != PYTHON:
        pytest.skip(f"/usr/bin/python3 is {host_python.strip()}, this venv's packages are built for {PYTHON}")
    if repo_root().resolve().is_relative_to("/tmp"):
        # the unit's PrivateTmp= gives pitcrew a /tmp of its own: a checkout under /tmp (the venv /opt/pitcrew reaches)
        # is not there, and every start dies of `No module named 'bot'` (found in a fresh clone in /tmp, session 7)
        pytest.skip(f"this checkout is under /tmp ({repo_root()}), which the unit's PrivateTmp= hides from pitcrew")
    t_begin = time.monotonic()
    fake = FakeSlack()
    fake.add_user(*ALICE)
    fake.add_channel(*CHANNEL)
    await fake.start()
    port = claim_port()  # the bot binds it inside the namespace, later
    try:
        async with SimHost(tmp_path / "sim", time_scale=0.01, systemd="real") as sim:
            assert sim.real is not None
            run, info = sim.real.ns.run, sim.info
            host = {"name": info["name"], "address": info["ssh_host"], "port": info["ssh_port"],
                    "user": info["user"], "client_key": "/etc/pitcrew/id_ed25519",
                    "known_hosts": "/etc/pitcrew/known_hosts", "unit": info["unit"],
                    "unit_dir": info["unit_dir"], "server_url": info["server_url"], "sudo": True}
            rc, out, err = await run(["bash", "-c", _install_script(repo_root(), sim.root)],
                                     input=_config(fake.base_url, port, host).encode())
            assert rc == 0, out + err
            before = sim.unit_path.read_text()
            rc, out, err = await run(["systemctl", "start", "pitcrew.service"])
            assert rc == 0, out + err
            url = f"http://127.0.0.1:{port}"
            async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10)) as http:

                async def healthy() -> bool:
                    try:
                        async with http.get(f"{url}/healthz") as r:
                            return r.status == 200
                    except aiohttp.ClientError:
                        return False

                await _until(run, "pitcrew answers /healthz", healthy, 60)
                body = slash_command("try 4 steps", user=ALICE, channel=CHANNEL)
                async with http.post(f"{url}/slack/events", data=body, headers=signed_headers(body, SECRET)) as r:
                    assert r.status == 200
                await fake.wait_for(lambda f: any(m.metadata and m.metadata.get("event_payload", {})
                                                  .get("key") == "job:1" for m in f.messages), timeout=60)
                parent = next(m for m in fake.messages if m.metadata and m.metadata["event_payload"]["key"] == "job:1")
                confirm = button(parent, "Confirm")
                assert confirm is not None, parent.blocks
                click = button_click(parent, confirm, user=ALICE)
                async with http.post(f"{url}/slack/events", data=click, headers=signed_headers(click, SECRET)) as r:
                    assert r.status == 200

                async def benchmarking() -> bool:  # the engine unit was restarted on steps 4 and is benchmarked
                    return bool(await _db_rows(run, "select id from job_steps where job_id = 1 and "
                                                    "name = 'benchmark' and state = 'running'"))

                await _until(run, "the job benchmarks the restarted engine unit", benchmarking, 120)
                # ... and the benchmark's child process has had requests answered (its progress, in the job message)
                await fake.wait_for(lambda f: re.search(r"benchmark C=1 \(([1-9]\d*)/8 requests\)", "".join(
                    m.text + json.dumps(m.blocks) for m in f.messages if m.ts == parent.ts)) is not None, timeout=60)
            assert "--speculative-num-steps 4" in sim.unit_path.read_text()
            _, pid, _ = await run(["systemctl", "show", "pitcrew.service", "-p", "MainPID", "--value"])
            t_stop = time.monotonic()
            rc, out, err = await run(["systemctl", "stop", "pitcrew.service"], timeout=300)
            stop_s = time.monotonic() - t_stop
            assert rc == 0, out + err
            rc, shown, err = await run(["systemctl", "show", "pitcrew.service", "-p",
                                        "ExecMainPID,ExecMainCode,ExecMainStatus,Result,ActiveState"])
            props = dict(line.split("=", 1) for line in shown.split())
            _, journal, _ = await run(["journalctl", "-u", "pitcrew.service", "-o", "cat", "--no-pager"])
            job = await _db_rows(run, "select state, error, summary from jobs where id = 1")
            steps = [name for (name,) in await _db_rows(run, "select name from job_steps where job_id = 1 "
                                                             "order by id")]
            _, engine, _ = await run(["systemctl", "show", info["unit"], "-p", "ActiveState", "--value"])
            after = sim.unit_path.read_text()
            async with (aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10)) as http,
                        http.get(f"{info['server_url']}/health") as r):
                health = r.status
    finally:
        await fake.stop()
        release_port(port)
    print(f"systemctl stop: {stop_s:.1f} s; the whole test {time.monotonic() - t_begin:.1f} s")
    # the main process exited 0 (CLD_EXITED = 1, status 0) and systemd calls the stop a success, in time
    assert (props["ExecMainCode"], props["ExecMainStatus"], props["Result"]) == ("1", "0", "success"), shown
    assert props["ActiveState"] == "inactive" and props["ExecMainPID"] == pid.strip() != "0", (shown, pid)
    assert stop_s < int(_settings(UNIT.read_text())["TimeoutStopSec"][0]), stop_s
    assert "timed out" not in journal and "Killing" not in journal, journal[-3000:]  # no SIGKILL after the timeout
    # the engine unit is back on the revision that was live before the job, and serves
    assert after == before and engine.strip() == "active" and health == 200, (engine, health)
    # the job is recorded as interrupted by the stop, with its restore
    ((state, error, summary),) = job
    assert state == "interrupted" and "stopped (shutdown or upgrade)" in str(error), (state, error)
    assert "back on revision" in str(summary), summary
    assert sum(n.endswith("start") for n in steps) >= 2, steps  # the deploy's start, then the restore's
    # the journal of pitcrew.service shows the drain
    assert re.search(r"stopping: job 1 on \S+ stops at its next safe point", journal), journal[-3000:]
    assert "pitcrew.service: Deactivated successfully." in journal, journal[-3000:]
    assert SECRET not in journal and "xoxb-fake-token" not in journal  # the env file's secrets stay out of the log
