"""`make image-check`: the container image built and run on this machine (issue 27), every step timed.

1. tooling  — the Docker engine and mmdebstrap from Debian's packages (`apt-get install docker.io mmdebstrap` when
              missing); an engine that already answers is used, else this script starts its own `dockerd` (overlay2,
              `--iptables=false --bridge=none`; runs use `--network host`) on its own socket, with its images kept in
              ~/.cache/pitcrew/images/docker, and stops it at the end;
2. base     — a Debian bookworm root filesystem made by mmdebstrap from this machine's own apt sources (python3,
              python3-venv, curl, openssh-client, the machine's local CA certificates), cached as a tarball under
              ~/.cache/pitcrew/images keyed by that recipe, imported as `pitcrew-base:bookworm`;
3. image    — `docker build --network host --build-arg BASE=pitcrew-base:bookworm -t pitcrew:check .` (the
              Dockerfile's default BASE stays the public Python image for users); pip installs the lock from PyPI;
4. host     — a simulated GPU host under systemd 252 itself (`SimHost(systemd="real")`), its key and pin copied to a
              directory owned by the image's user, a pitcrew.toml for it;
5. doctor   — `docker run --network host -v DIR:/etc/pitcrew:ro pitcrew:check pitcrew doctor` as the image's
              non-root user: exit 0 and every check ✓;
6. serve    — the image's default command (`pitcrew serve`, HTTP mode) against PostgreSQL on 127.0.0.1:5432 (db
              `test`, in a role and schema of its own, dropped at the end) and the project's fake Slack Web API,
              until Docker's own HEALTHCHECK reports it healthy; then `docker stop` and a clean exit.

It cleans up only what it started (containers, the host, the fake Slack, the role and schema, its dockerd). Exit 0:
all passed; 1: a step failed (the image does not build, doctor or the health check fails); 77: skipped, the
container tooling cannot be installed or started here, or real systemd cannot boot (the reason is printed).

    .venv/bin/python scripts/image_check.py [--keep-engine] [--rebuild-base]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import fcntl
import hashlib
import json
import os
import secrets
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

CACHE = Path.home() / ".cache" / "pitcrew" / "images"
SKIP = 77
SUITE = "bookworm"
BASE_TAG = f"pitcrew-base:{SUITE}"
IMAGE_TAG = "pitcrew:check"
IMAGE_UID = 10001  # the Dockerfile's `pitcrew` user
# what the image needs from Debian: Python 3.11 and venv (the lock goes into a venv), curl (the HEALTHCHECK), ssh
# (the Dockerfile's tools), passwd (useradd), the CA store (pip verifies PyPI against the system's store)
PACKAGES = ("python3", "python3-venv", "ca-certificates", "curl", "openssh-client", "passwd")
# the machine's own trust (its local CAs) and pip told to use the system's store, as apt and curl do
HOOKS = (
    'for f in /usr/local/share/ca-certificates/*.crt; do [ -e "$f" ] && cp "$f" "$1/usr/local/share/ca-certificates/"; '
    'done; chroot "$1" update-ca-certificates >/dev/null',
    'printf "[global]\\ncert = /etc/ssl/certs/ca-certificates.crt\\n" > "$1/etc/pip.conf"',
    'rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*.bin',
)
OWN_SOCKET_DIR = Path("/run/pitcrew-docker")
PG_ADMIN = "postgresql://postgres@127.0.0.1:5432/test"
PG_ROLE = "pitcrew_image_check"  # its own schema of the same name comes first in its search_path ("$user")


class Skip(Exception):
    """This machine cannot run the check (tooling cannot be installed or started)."""


class Failed(Exception):
    """A step failed."""


class Steps:
    """Times each step and prints it as it ends."""

    def __init__(self) -> None:
        self.rows: list[tuple[str, float, str]] = []
        self.t0 = time.monotonic()

    @contextlib.asynccontextmanager
    async def step(self, name: str) -> AsyncIterator[dict[str, str]]:
        print(f"== {name}", flush=True)
        note: dict[str, str] = {"note": ""}
        t0 = time.monotonic()
        yield note
        self.record(name, time.monotonic() - t0, note["note"])

    def record(self, name: str, seconds: float, note: str) -> None:
        self.rows.append((name, seconds, note))
        print(f"   {name}: {seconds:.1f} s {note}".rstrip(), flush=True)

    def table(self) -> str:
        lines = [f"  {name:<8} {s:7.1f} s  {note}".rstrip() for name, s, note in self.rows]
        return "\n".join(["timings:", *lines, f"  {'total':<8} {time.monotonic() - self.t0:7.1f} s"])


async def run(argv: Sequence[str], *, timeout: float, env: dict[str, str] | None = None, check: bool = True,
              log: Path | None = None) -> tuple[int, str]:
    """Run a command to its end within `timeout` seconds; its output (stdout and stderr) as text, or into `log`."""
    sink = log.open("ab") if log is not None else None
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv, env=env, stdin=asyncio.subprocess.DEVNULL,
            stdout=sink if sink is not None else asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
        try:
            out, _ = await asyncio.wait_for(proc.communicate(), timeout)
        except TimeoutError:
            proc.kill()
            await proc.wait()
            raise Failed(f"`{' '.join(argv[:3])} …` took more than {timeout:.0f} s") from None
    finally:
        if sink is not None:
            sink.close()
    text = (out or b"").decode(errors="replace") if log is None else log.read_text(errors="replace")
    rc = proc.returncode if proc.returncode is not None else -1
    if check and rc != 0:
        raise Failed(f"`{' '.join(argv)}` exited {rc}:\n{tail(text)}")
    return rc, text


def tail(text: str, n: int = 25) -> str:
    return "\n".join("   | " + line for line in text.rstrip().splitlines()[-n:])


# -- 1. tooling ------------------------------------------------------------------------------------------------------

async def install_tooling() -> str:
    missing = [p for p, binary in (("docker.io", "dockerd"), ("mmdebstrap", "mmdebstrap")) if not shutil.which(binary)]
    if not shutil.which("docker") and "docker.io" not in missing:
        missing.append("docker.io")
    if not missing:
        return "(already installed)"
    if os.geteuid() != 0:
        raise Skip(f"{', '.join(missing)} missing and installing them needs root")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for argv, limit in ((["apt-get", "update", "-qq"], 300.0),
                        (["apt-get", "install", "-y", "-qq", "--no-install-recommends", *missing], 600.0)):
        rc, out = await run(argv, timeout=limit, env=env, check=False)
        if rc != 0:
            raise Skip(f"`{' '.join(argv)}` failed ({rc}):\n{tail(out)}")
    return f"(installed {' '.join(missing)})"


class DockerEngine:
    """A Docker engine to talk to: one that already answers, or our own `dockerd`, stopped by `stop()`."""

    def __init__(self, work: Path) -> None:
        self.work = work
        self.env = dict(os.environ)
        self.proc: asyncio.subprocess.Process | None = None

    async def docker(self, *args: str, timeout: float = 60.0, check: bool = True,
                     log: Path | None = None) -> tuple[int, str]:
        return await run(["docker", *args], timeout=timeout, env=self.env, check=check, log=log)

    async def _answers(self) -> bool:
        rc, _ = await self.docker("info", "--format", "{{.ServerVersion}}", timeout=20.0, check=False)
        return rc == 0

    async def start(self) -> str:
        if await self._answers():
            return "(an engine already running)"
        if os.geteuid() != 0:
            raise Skip("no Docker engine answers and starting dockerd needs root")
        OWN_SOCKET_DIR.mkdir(parents=True, exist_ok=True)
        (CACHE / "docker").mkdir(parents=True, exist_ok=True)
        sock = OWN_SOCKET_DIR / "docker.sock"
        self.env["DOCKER_HOST"] = f"unix://{sock}"
        log = (self.work / "dockerd.log").open("wb")
        self.proc = await asyncio.create_subprocess_exec(
            "dockerd", "--data-root", str(CACHE / "docker"), "--exec-root", str(OWN_SOCKET_DIR / "exec"),
            "--pidfile", str(OWN_SOCKET_DIR / "dockerd.pid"), "-H", self.env["DOCKER_HOST"],
            "--storage-driver", "overlay2", "--iptables=false", "--ip6tables=false", "--bridge=none",
            stdin=asyncio.subprocess.DEVNULL, stdout=log, stderr=asyncio.subprocess.STDOUT, start_new_session=True)
        log.close()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and self.proc.returncode is None:
            if await self._answers():
                return f"(started dockerd, pid {self.proc.pid}, images in {CACHE / 'docker'})"
            await asyncio.sleep(0.5)
        text = (self.work / "dockerd.log").read_text(errors="replace")
        await self.stop()
        raise Skip(f"dockerd did not come up:\n{tail(text)}")

    async def stop(self) -> None:
        """End our dockerd (by its pid) and undo what it leaves in its exec root; an engine we found is left alone."""
        proc, self.proc = self.proc, None
        if proc is None:
            return
        if proc.returncode is None:
            proc.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(proc.wait(), 30)
            except TimeoutError:
                proc.kill()
                await proc.wait()
        netns = OWN_SOCKET_DIR / "exec" / "netns" / "default"
        if os.path.ismount(netns):
            await run(["umount", str(netns)], timeout=10.0, check=False)
        shutil.rmtree(OWN_SOCKET_DIR, ignore_errors=True)


# -- 2. base ---------------------------------------------------------------------------------------------------------

def apt_sources() -> list[Path]:
    """The machine's active apt sources (what apt itself reads: sources.list and sources.list.d/*.list|*.sources)."""
    main = Path("/etc/apt/sources.list")
    found = [main] if main.exists() and any(
        line.strip().startswith("deb") for line in main.read_text().splitlines()) else []
    d = Path("/etc/apt/sources.list.d")
    found += sorted(p for p in d.glob("*") if p.suffix in (".list", ".sources")) if d.is_dir() else []
    return found


def base_key(sources: list[Path]) -> str:
    cas = sorted(Path("/usr/local/share/ca-certificates").glob("*.crt"))
    recipe = {"suite": SUITE, "variant": "minbase", "packages": PACKAGES, "hooks": HOOKS,
              "sources": {str(p): p.read_text() for p in sources}, "cas": {p.name: p.read_text() for p in cas}}
    return hashlib.sha256(json.dumps(recipe, sort_keys=True).encode()).hexdigest()[:16]


async def base_image(engine: DockerEngine, rebuild: bool) -> str:
    sources = apt_sources()
    if not sources:
        raise Failed("no apt sources on this machine (/etc/apt/sources.list*)")
    key = base_key(sources)
    _, label = await engine.docker("image", "inspect", "-f", '{{index .Config.Labels "pitcrew.base"}}', BASE_TAG,
                                   check=False)
    if label.strip() == key and not rebuild:
        return f"(cached image {BASE_TAG}, key {key})"
    tar = CACHE / f"base-{SUITE}-{key}.tar"
    note = f"(cached rootfs {tar.name})"
    if rebuild or not tar.exists():
        partial = tar.with_suffix(".partial.tar")
        hooks = [f"--customize-hook={h}" for h in HOOKS]
        await run(["mmdebstrap", "--variant=minbase", "--format=tar", f"--include={','.join(PACKAGES)}", *hooks,
                   SUITE, str(partial), *map(str, sources)], timeout=1200.0, log=engine.work / "mmdebstrap.log")
        partial.replace(tar)
        for old in CACHE.glob(f"base-{SUITE}-*.tar"):
            if old != tar:
                old.unlink()
        note = f"(mmdebstrap from {', '.join(map(str, sources))}: {tar.stat().st_size >> 20} MiB rootfs)"
    await engine.docker("import", "--change", f"LABEL pitcrew.base={key}", "--change", 'CMD ["/bin/bash"]', str(tar),
                        BASE_TAG, timeout=300.0)
    return note


# -- 3. image --------------------------------------------------------------------------------------------------------

async def build_image(engine: DockerEngine, own_engine: bool) -> str:
    log = engine.work / "build.log"
    await engine.docker("build", "--network", "host", "--build-arg", f"BASE={BASE_TAG}", "-t", IMAGE_TAG, str(ROOT),
                        timeout=1800.0, log=log)
    text = log.read_text(errors="replace")
    steps, cached = text.count("\nStep "), text.count("Using cache")
    if own_engine:  # the images replaced by this build; only in our own engine's store
        await engine.docker("image", "prune", "-f", check=False)
    _, size = await engine.docker("image", "inspect", "-f", "{{.Size}}", IMAGE_TAG)
    _, user = await engine.docker("image", "inspect", "-f", "{{.Config.User}}", IMAGE_TAG)
    if user.strip() in ("", "root", "0"):
        raise Failed(f"the image runs as {user.strip() or 'root'}, not as a non-root user")
    _, uid = await engine.docker("run", "--rm", "--network", "host", IMAGE_TAG, "id", "-u")
    if uid.strip() != str(IMAGE_UID):
        raise Failed(f"the image's user has uid {uid.strip()}, expected {IMAGE_UID}")
    return (f"({cached} of {steps} build steps cached; {int(size) >> 20} MiB; "
            f"runs as {user.strip()}, uid {uid.strip()})")


# -- 4.-6. host, doctor, serve ---------------------------------------------------------------------------------------

def write_config(etc: Path, entry: dict[str, Any]) -> None:
    """pitcrew.toml for the container: the host's key and pin copied beside it, owned by the image's user."""
    etc.mkdir(mode=0o700)
    shutil.copy(entry["client_key"], etc / "client_key")
    shutil.copy(entry["known_hosts"], etc / "known_hosts")
    host = {**entry, "client_key": "/etc/pitcrew/client_key", "known_hosts": "/etc/pitcrew/known_hosts"}
    lines = ["[db]", f'url = "postgresql+asyncpg://{PG_ROLE}@127.0.0.1:5432/test"', "", "[[hosts]]"]
    lines += [f"{k} = {json.dumps(v)}" for k, v in host.items()]
    (etc / "pitcrew.toml").write_text("\n".join(lines) + "\n")
    for p in (etc, *etc.iterdir()):
        os.chown(p, IMAGE_UID, IMAGE_UID)
    (etc / "client_key").chmod(0o600)


def doctor_verdict(rc: int, out: str) -> tuple[int, str | None]:
    """How many checks a `pitcrew doctor` run printed ✓, and why it did not pass (exit 0, every check ✓) or None."""
    marks = [line.strip()[0] for line in out.splitlines()
             if line.startswith("  ") and line.strip()[:1] in ("✓", "⚠", "✗")]  # the check lines, not their fixes
    ticks = sum(m == "✓" for m in marks)
    if rc != 0:
        return ticks, f"exit {rc}"
    if not marks or ticks != len(marks):
        return ticks, f"{ticks} of {len(marks)} checks ✓"
    return ticks, None


async def doctor(engine: DockerEngine, etc: Path) -> str:
    rc, out = await engine.docker("run", "--rm", "--network", "host", "-v", f"{etc}:/etc/pitcrew:ro",
                                  "-e", "PITCREW_CONFIG=/etc/pitcrew/pitcrew.toml", IMAGE_TAG, "pitcrew", "doctor",
                                  timeout=180.0, check=False)
    print("\n".join("   " + line for line in out.rstrip().splitlines()), flush=True)
    ticks, why = doctor_verdict(rc, out)
    if why is not None:
        raise Failed(f"`pitcrew doctor` inside the image did not pass: {why}")
    return f"(exit 0, all {ticks} checks ✓)"


@contextlib.asynccontextmanager
async def pg_role() -> AsyncIterator[None]:
    """A login role with its own schema in db `test` (the bot's tables go there), dropped afterwards."""
    import asyncpg

    async def admin(*sql: str) -> None:
        conn = await asyncpg.connect(PG_ADMIN, timeout=10)
        try:
            for statement in sql:
                await conn.execute(statement, timeout=30)
        finally:
            await conn.close(timeout=10)

    drop = (f"DROP SCHEMA IF EXISTS {PG_ROLE} CASCADE", f"DROP ROLE IF EXISTS {PG_ROLE}")
    try:
        await admin(*drop, f"CREATE ROLE {PG_ROLE} LOGIN", f"CREATE SCHEMA {PG_ROLE} AUTHORIZATION {PG_ROLE}")
    except (OSError, asyncpg.PostgresError) as e:
        raise Failed(f"PostgreSQL on 127.0.0.1:5432 (db test): {e}") from e
    try:
        yield
    finally:
        await admin(*drop)


async def serve(engine: DockerEngine, etc: Path) -> str:
    from support.fake_slack import FakeSlack

    from simhost.ports import claim_port, release_port

    fake = FakeSlack()
    fake.add_user("U1", "admin")
    fake.add_channel("C1", "gpu-ops")
    await fake.start()
    port, name = claim_port(), f"pitcrew-image-check-{os.getpid()}"
    env_file = etc.parent / "pitcrew.env"
    env_file.write_text("\n".join([
        "PITCREW_CONFIG=/etc/pitcrew/pitcrew.toml", "PITCREW_SLACK__MODE=http",
        f"PITCREW_SLACK__BOT_TOKEN={fake.token}", f"PITCREW_SLACK__SIGNING_SECRET={secrets.token_hex(16)}",
        f"PITCREW_SLACK__API_BASE_URL={fake.base_url}", "PITCREW_SLACK__HTTP_HOST=127.0.0.1",
        f"PITCREW_SLACK__HTTP_PORT={port}", "PITCREW_SLACK__ALERT_CHANNEL=C1",
        'PITCREW_POLICY__ROLES={"*": "viewer", "U1": "admin"}']) + "\n")
    env_file.chmod(0o600)
    started = False
    try:
        async with pg_role():
            t0 = time.monotonic()
            # the image's own HEALTHCHECK command; probed every 2 s here instead of its 30 s
            await engine.docker("run", "-d", "--name", name, "--network", "host", "--env-file", str(env_file),
                                "-v", f"{etc}:/etc/pitcrew:ro", "--health-interval", "2s", IMAGE_TAG)
            started = True
            health = await wait_healthy(engine, name, timeout=180.0)
            healthy_s = time.monotonic() - t0
            if not fake.calls_to("auth.test"):
                raise Failed("the bot in the image never called the Slack API (auth.test)")
            await engine.docker("stop", "-t", "60", name, timeout=90.0)
            _, code = await engine.docker("inspect", "-f", "{{.State.ExitCode}}", name)
            if code.strip() != "0":
                raise Failed(f"`pitcrew serve` exited {code.strip()} on docker stop:\n{tail(await logs(engine, name))}")
    except Failed:
        if started:
            print(tail(await logs(engine, name), 40), flush=True)
        raise
    finally:
        if started:
            await engine.docker("rm", "-f", name, check=False)
        await fake.stop()
        release_port(port)
    last = health["Log"][-1]["Output"].strip() if health.get("Log") else ""
    return f"(healthy after {healthy_s:.1f} s: {last}; stopped cleanly, exit 0)"


async def logs(engine: DockerEngine, name: str) -> str:
    return (await engine.docker("logs", name, check=False))[1]


async def wait_healthy(engine: DockerEngine, name: str, *, timeout: float) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        _, out = await engine.docker("inspect", "-f", "{{json .State}}", name)
        state = json.loads(out)
        health = state.get("Health") or {}
        if health.get("Status") == "healthy":
            return dict(health)
        if health.get("Status") == "unhealthy" or not state.get("Running"):
            raise Failed(f"the container is {health.get('Status') or state.get('Status')}: "
                         f"{json.dumps(health.get('Log', [])[-1:])}")
        await asyncio.sleep(1.0)
    raise Failed(f"the HEALTHCHECK did not report healthy within {timeout:.0f} s")


async def check(work: Path, keep_engine: bool, rebuild_base: bool, steps: Steps) -> None:
    from bot.demo import host_entry
    from simhost.host import SimHost
    from simhost.systemd import unavailable

    why = unavailable()
    if why is not None:
        raise Skip(f"real systemd cannot boot here, so there is no test host for doctor: {why}")
    async with steps.step("tooling") as s:
        s["note"] = await install_tooling()
    engine = DockerEngine(work)
    try:
        async with steps.step("engine") as s:
            s["note"] = await engine.start()
        async with steps.step("base") as s:
            s["note"] = await base_image(engine, rebuild_base)
        async with steps.step("image") as s:
            s["note"] = await build_image(engine, own_engine=engine.proc is not None)
        print("== host", flush=True)
        t0 = time.monotonic()
        async with SimHost(work / "sim", time_scale=0.01, systemd="real") as host:
            await host.wait_ready(60)
            write_config(work / "etc", host_entry(host.info))
            steps.record("host", time.monotonic() - t0,
                         f"(systemd 252, {host.info['name']} on ssh port {host.info['ssh_port']})")
            async with steps.step("doctor") as s:
                s["note"] = await doctor(engine, work / "etc")
            async with steps.step("serve") as s:
                s["note"] = await serve(engine, work / "etc")
    finally:
        if keep_engine and engine.proc is not None:
            print(f"dockerd kept running (pid {engine.proc.pid}): DOCKER_HOST={engine.env['DOCKER_HOST']}")
        else:
            await engine.stop()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--keep-engine", action="store_true", help="leave the dockerd this script started running")
    ap.add_argument("--rebuild-base", action="store_true", help="make the base root filesystem again")
    a = ap.parse_args()
    CACHE.mkdir(parents=True, exist_ok=True)
    with (CACHE / ".lock").open("w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            print("another image check is running here; waiting for it", flush=True)
            fcntl.flock(lock, fcntl.LOCK_EX)
        work = Path(tempfile.mkdtemp(prefix="pitcrew-image-check-"))
        steps = Steps()
        try:
            asyncio.run(check(work, a.keep_engine, a.rebuild_base, steps))
        except Skip as e:
            print(f"image check SKIPPED: {e}", flush=True)
            shutil.rmtree(work, ignore_errors=True)
            return SKIP
        except Failed as e:
            for made in (work / "etc", work / "sim", work / "pitcrew.env"):  # the logs stay; the key copy goes
                if made.is_dir():
                    shutil.rmtree(made, ignore_errors=True)
                else:
                    made.unlink(missing_ok=True)
            print(f"image check FAILED: {e}\n{steps.table()}\n(logs kept in {work})", flush=True)
            return 1
        load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
        print(f"{steps.table()}\nmachine load average (1, 5, 15 min): {load} on {os.cpu_count()} cores\n"
              f"image check passed: {IMAGE_TAG} built on {BASE_TAG}; doctor all ✓; HEALTHCHECK healthy", flush=True)
        shutil.rmtree(work, ignore_errors=True)
        return 0


if __name__ == "__main__":
    sys.exit(main())
