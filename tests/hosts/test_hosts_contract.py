"""The contract of "a host", run through `SshHost` against the asyncssh sim and a real sshd."""

from __future__ import annotations

import asyncio
import os
import shlex
import stat
import statistics
import threading
import time
from pathlib import Path

import asyncssh
import pytest
from hosts_kit import read, wait_dead, wait_for_file

from services.errors import (
    CommandFailed,
    HostError,
    HostKeyMismatch,
    HostTimeout,
    HostUnreachable,
    UserInputError,
)
from simhost.ssh import rotate_host_key

NASTY = [
    "$(touch {m}/dollar)",
    "`touch {m}/backtick`",
    "a;touch {m}/semicolon",
    "x && touch {m}/and",
    "| touch {m}/pipe",
    "'single quoted'",
    '"double quoted"',
    "it's",
    "sp ace  two",
    "*",
    "~",
    "$HOME",
    "\\",
    "",
    "-n",
    "--",
    "#hash",
    "a>{m}/redirect",
    "{a,b}",
    "tab\there",
    "é ü 漢字",
]


async def test_run_reports_exit_status_stdout_and_stderr(target):
    host = target.host()
    script = "printf 'out 1\\nout 2\\n'; printf 'oops\\n' >&2; exit 7"
    result = await host.run(["bash", "-c", script], timeout=10)
    assert (result.exit_status, result.stdout, result.stderr) == (7, "out 1\nout 2\n", "oops\n")
    assert result.argv == ("bash", "-c", script)
    assert result.duration_s > 0

    assert (await host.run(["true"], timeout=10)).ok
    killed = await host.run(["bash", "-c", "kill -KILL $$"], timeout=10)
    assert killed.exit_status == 128 + 9

    with pytest.raises(CommandFailed) as failed:
        await host.run(["bash", "-c", "echo the real reason >&2; exit 3"], timeout=10, check=True)
    assert failed.value.fields["exit_status"] == 3
    assert "the real reason" in str(failed.value) and "status 3" in str(failed.value)


async def test_run_feeds_input_and_gives_an_empty_stdin_otherwise(target):
    host = target.host()
    assert (await host.run(["cat"], timeout=10, input=b"fed\nlines\n")).stdout == "fed\nlines\n"
    started = time.monotonic()
    assert (await host.run(["cat"], timeout=10)).stdout == ""
    assert time.monotonic() - started < 5


async def test_environment_and_sudo(target):
    host = target.host()
    found = await host.run(["sh", "-c", "command -v sudo"], timeout=10)
    assert found.stdout.strip() == str(target.bin / "sudo")
    who = await host.run(["id", "-u"], timeout=10, sudo=True)
    assert who.exit_status == 0 and who.stdout.strip().isdigit()
    assert read(target.sudo_log).splitlines() == ["id"]
    assert "sudo -n -- id -u" in target.commands[-1]


async def test_stream_yields_lines_as_produced_and_closing_ends_the_process(target, tmp_path):
    host = target.host()
    pidfile = tmp_path / "stream.pid"
    script = 'echo $$ > "$1"; echo first; sleep 20; echo never'
    started = time.monotonic()
    async with host.stream(["bash", "-c", script, "sh", str(pidfile)]) as lines:
        assert await anext(lines) == "first"
        first_after = time.monotonic() - started
    assert first_after < 5  # long before the command's 20 s sleep ends
    assert await wait_dead(int(read(pidfile))), "leaving the stream did not end the remote process"

    # like `journalctl -f`: a producer that never ends on its own
    ticker = 'echo $$ > "$1"; while :; do echo tick; sleep 0.05; done'
    async with host.stream(["bash", "-c", ticker, "sh", str(pidfile)]) as lines:
        got = [await anext(lines) for _ in range(3)]
    assert got == ["tick"] * 3
    assert await wait_dead(int(read(pidfile)))


async def test_closing_ends_even_a_process_that_ignores_sigterm(target, tmp_path):
    host = target.host()
    pidfile = tmp_path / "stubborn.pid"
    script = 'trap "" TERM; echo $$ > "$1"; echo ready; while :; do sleep 0.1; done'
    async with host.stream(["bash", "-c", script, "sh", str(pidfile)]) as lines:
        assert await anext(lines) == "ready"
    assert await wait_dead(int(read(pidfile)), within=5), "SIGKILL did not follow the ignored SIGTERM"


async def test_stream_ends_with_the_command_and_reports_failure(target):
    host = target.host()
    async with host.stream(["printf", "a\\nb\\r\\nc"]) as lines:
        assert [line async for line in lines] == ["a", "b", "c"]
    seen: list[str] = []
    with pytest.raises(CommandFailed) as failed:
        async with host.stream(["bash", "-c", "echo x; echo boom >&2; exit 4"]) as lines:
            async for line in lines:
                seen.append(line)
    assert seen == ["x"]
    assert failed.value.fields["exit_status"] == 4 and "boom" in str(failed.value)


async def test_stream_deadline(target, tmp_path):
    host = target.host()
    pidfile = tmp_path / "slow.pid"
    with pytest.raises(HostTimeout):
        async with host.stream(
            ["bash", "-c", 'echo $$ > "$1"; echo one; exec sleep 30', "sh", str(pidfile)], timeout=1.0
        ) as lines:
            assert await anext(lines) == "one"
            await anext(lines)
    assert await wait_dead(int(read(pidfile)))


async def test_timeout_raises_and_ends_the_remote_process(target, tmp_path):
    host = target.host()
    pidfile = tmp_path / "sleeper.pid"
    started = time.monotonic()
    with pytest.raises(HostTimeout) as timed_out:
        await host.run(["bash", "-c", 'echo $$ > "$1"; exec sleep 30', "sh", str(pidfile)], timeout=0.8)
    assert 0.7 < time.monotonic() - started < 3
    assert "was ended" in str(timed_out.value)
    assert await wait_dead(int(read(pidfile)), within=2), "the timed-out process is still running"

    # a command fed on stdin is ended too (by the remote `timeout` backstop at worst)
    with pytest.raises(HostTimeout):
        await host.run(
            ["bash", "-c", 'echo $$ > "$1"; read x; exec sleep 30', "sh", str(pidfile)],
            timeout=0.8,
            input=b"go\n",
        )
    assert await wait_dead(int(await wait_for_file(pidfile)), within=4)
    assert (await host.run(["echo", "still usable"], timeout=5)).stdout == "still usable\n"


def _watch(path: Path, old: bytes, new: bytes, stop: threading.Event, seen: set[str]) -> None:
    while not stop.is_set():
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            seen.add("missing")
            continue
        seen.add("old" if data == old else "new" if data == new else f"partial:{len(data)}")


async def test_upload_is_atomic_and_sets_the_mode(target):
    host = target.host()
    dest = target.work / "sglang.service"
    old = b"[Service]\nExecStart=/bin/true\n" * 1000
    new = os.urandom(2 * 1024 * 1024)
    dest.write_bytes(old)
    stop, seen = threading.Event(), set[str]()
    watcher = asyncio.create_task(asyncio.to_thread(_watch, dest, old, new, stop, seen))
    await asyncio.sleep(0.01)
    await host.upload(str(dest), new, mode=0o640, timeout=20)
    stop.set()
    await watcher
    assert seen <= {"old", "new"}, f"a reader saw {seen}"
    assert dest.read_bytes() == new
    assert stat.S_IMODE(dest.stat().st_mode) == 0o640
    assert sorted(p.name for p in target.work.iterdir()) == ["sglang.service"]

    fresh = target.work / "fresh.txt"
    await host.upload(str(fresh), b"hello\n", mode=0o600, timeout=10)
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o600
    assert await host.read_file(str(fresh), timeout=10) == "hello\n"


async def test_upload_with_sudo_installs_through_a_staging_file(target):
    host = target.host(target.spec(sudo=True))
    dest = target.work / "unit.service"
    dest.write_text("old\n")
    await host.upload(str(dest), b"new\n", mode=0o644, timeout=20)
    assert dest.read_text() == "new\n"
    assert stat.S_IMODE(dest.stat().st_mode) == 0o644
    assert read(target.sudo_log).splitlines() == ["install", "mv"]
    # staged in the login user's HOME (the host's directory), never in the home of whoever runs the test: over OpenSSH
    # SFTP started in /root, where another test looking for leftovers saw this one's file (session 18)
    install = read(Path(f"{target.sudo_log}.argv")).splitlines()[0].split()
    assert Path(install[-2]).parent == target.root, install
    assert sorted(p.name for p in target.work.iterdir()) == ["unit.service"]
    for home in (target.root, Path.home()):
        assert not list(home.glob(".pitcrew-upload-*")), f"staging file left in {home}"
    assert await host.read_file(str(dest), timeout=10) == "new\n"


async def test_upload_errors(target):
    host = target.host()
    with pytest.raises(HostError) as missing_dir:
        await host.upload(str(target.work / "no-such-dir" / "f"), b"x", timeout=10)
    assert not isinstance(missing_dir.value, HostTimeout | HostUnreachable)
    with pytest.raises(CommandFailed):
        await host.read_file(str(target.work / "absent"), timeout=10)


async def test_changed_host_key_is_refused_and_nothing_runs(target):
    pinned = target.root / "pinned_known_hosts"
    pinned.write_text(read(target.server.known_hosts))
    old_key = asyncssh.read_private_key(str(target.server.host_key))
    rotate_host_key(target.root)
    await target.restart()
    new_key = asyncssh.read_private_key(str(target.server.host_key))
    assert new_key.public_data != old_key.public_data

    host = target.host(target.spec(known_hosts=pinned))
    marker = target.work / "ran"
    with pytest.raises(HostKeyMismatch) as refused:
        await host.run(["touch", str(marker)], timeout=5)
    message = str(refused.value)
    assert "changed" in message and "operator must confirm" in message
    for key in (old_key, new_key):
        blob = key.export_public_key("openssh").decode().split()[1]
        assert blob not in message and blob[:16] not in message
        assert key.get_fingerprint().split(":", 1)[1] not in message
    with pytest.raises(HostKeyMismatch):
        await host.upload(str(marker), b"x", timeout=5)
    with pytest.raises(HostKeyMismatch):
        async with host.stream(["touch", str(marker)]):
            pass
    assert target.commands == [] and not marker.exists()

    # an empty or missing pin is refused the same way
    empty = target.root / "empty_known_hosts"
    empty.write_text("")
    for known in (empty, target.root / "absent_known_hosts"):
        with pytest.raises(HostKeyMismatch) as unpinned:
            await target.host(target.spec(known_hosts=known)).run(["true"], timeout=5)
        assert "pinned" in str(unpinned.value) and "operator must" in str(unpinned.value)

    # once the operator pins the new key (the server's published line), it works again
    assert (await target.host().run(["true"], timeout=5)).ok


async def test_unreachable_and_refused_key(target, tmp_path):
    other = asyncssh.generate_private_key("ssh-ed25519")
    other_path = tmp_path / "other_key"
    other.write_private_key(str(other_path))
    with pytest.raises(HostUnreachable) as refused:
        await target.host(target.spec(client_key=other_path)).run(["true"], timeout=5)
    assert "refused" in str(refused.value)
    port = target.server.port
    await target.server.close()
    with pytest.raises(HostUnreachable):
        await target.host(target.spec(port=port)).run(["true"], timeout=5)
    target.server = None
    assert target.commands == []


async def test_metacharacters_arrive_literally(target, tmp_path):
    host = target.host()
    markers = tmp_path / "markers"
    markers.mkdir()
    nasty = [arg.replace("{m}", str(markers)) for arg in NASTY]
    result = await host.run(["printf", "%s\\n", *nasty], timeout=10)
    assert result.stdout == "".join(arg + "\n" for arg in nasty)
    counted = await host.run(["bash", "-c", 'echo "$#"', "sh", *nasty], timeout=10)
    assert counted.stdout == f"{len(nasty)}\n"
    assert list(markers.iterdir()) == [], "a metacharacter was interpreted by a shell"
    assert all(f"; touch {markers}" not in cmd for cmd in target.commands)
    assert shlex.split(target.commands[0])[-len(nasty) - 2 :] == ["printf", "%s\\n", *nasty]

    odd_name = target.work / "we ird;$(touch x)`y`.service"
    await host.upload(str(odd_name), b"odd\n", timeout=10)
    assert odd_name.read_text() == "odd\n"
    assert await host.read_file(str(odd_name), timeout=10) == "odd\n"
    assert list(markers.iterdir()) == []


@pytest.mark.parametrize("bad", ["a\nb", "a\x00b", "a\rb"], ids=["newline", "nul", "cr"])
async def test_nul_and_newline_are_refused_before_sending(target, bad):
    host = target.host()
    with pytest.raises(UserInputError):
        await host.run(["echo", bad], timeout=5)
    with pytest.raises(UserInputError):
        await host.run([bad], timeout=5)
    with pytest.raises(UserInputError):
        async with host.stream(["echo", bad]):
            pass
    with pytest.raises(UserInputError):
        await host.upload(str(target.work / f"f{bad}"), b"x", timeout=5)
    for path in ("relative/path", f"{target.work}/../escape", f"{target.work}/"):
        with pytest.raises(UserInputError):
            await host.upload(path, b"x", timeout=5)
    assert target.commands == []


async def test_reconnects_after_the_server_drops_the_connection(target):
    host = target.host()
    assert (await host.run(["echo", "one"], timeout=5)).stdout == "one\n"
    await target.server.drop_connections()
    assert (await host.run(["echo", "two"], timeout=5)).stdout == "two\n"
    await target.server.drop_connections()
    await asyncio.sleep(0.2)
    assert (await host.run(["echo", "three"], timeout=5)).stdout == "three\n"

    # a connection lost mid-stream is reported, not hidden
    with pytest.raises(HostUnreachable):
        async with host.stream(["bash", "-c", "while :; do echo tick; sleep 0.05; done"]) as lines:
            await anext(lines)
            await target.server.drop_connections()
            async for _ in lines:
                pass

    # the host disappears and comes back on the same address
    port = target.server.port
    await target.server.close()
    with pytest.raises(HostUnreachable):
        await host.run(["true"], timeout=5)
    await target.start(port)
    assert (await host.run(["echo", "back"], timeout=5)).stdout == "back\n"


async def test_concurrent_commands_share_one_connection(target):
    host = target.host()
    results = await asyncio.gather(*(host.run(["echo", str(i)], timeout=20) for i in range(24)))
    assert [r.stdout for r in results] == [f"{i}\n" for i in range(24)]


async def test_round_trip_of_a_trivial_command(target, record_property):
    host = target.host()
    await host.run(["true"], timeout=5)  # connect
    samples = []
    for _ in range(30):
        started = time.perf_counter()
        await host.run(["true"], timeout=5)
        samples.append(time.perf_counter() - started)
    median_ms = statistics.median(samples) * 1000
    record_property("round_trip_ms", round(median_ms, 2))
    print(f"\n{target.kind}: run(['true']) round trip median {median_ms:.2f} ms "
          f"(min {min(samples) * 1000:.2f}, max {max(samples) * 1000:.2f})")
    assert median_ms < 250
