"""`SimHost`: one simulated GPU host (state dir, supervisor, SSH server, faults) as an async context.

On enter it lays out `DIR` (`etc/systemd/system/sglang.service`, or `vllm.service` with
`engine="vllm"`, or `llama-server.service` running the real llama.cpp server from `make engine`'s cache with
`engine="llamacpp"` (`simhost.llamacpp`), `models/`, `bin/` tools, the
journal, the GPU ledger), starts the control socket, the supervisor and the SSH server
(`simhost.ssh.start_ssh_server`), applies the scenario, starts the unit and writes
`DIR/host.json` (= `.info`). On exit it stops everything: the unit's process group, leftover
holders and port squatters, the SSH server (no orphan processes). Faults (`await fault(name)` or
`pitcrew sim fault --dir DIR NAME`): stale-gpu-holder, port-in-use, nccl-timeout, xid, slow-load,
clear. With `real_engine=True` (vLLM only) the unit runs the real `vllm serve` that `make vllm` built
(`simhost.realvllm`) on CPU, in real time; the GPU stays simulated, and only port-in-use and clear apply.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from simhost import control, gpu, ports, procs, realvllm, simstate
from simhost.journal import JournalWriter
from simhost.scenarios import FAULTS, SCENARIOS, unit_text
from simhost.supervisor import JobFailed, Supervisor
from simhost.tools.install import install_sglang_shim, install_tools
from simhost.tools.serve import ToolServer
from simhost.vllm.serve import install_metadata as install_vllm_metadata

if TYPE_CHECKING:
    from simhost.systemd.backend import RealSystemd

UNIT = "sglang.service"
UNITS = {"sglang": UNIT, "vllm": "vllm.service", "llamacpp": "llama-server.service"}
SYSTEMD_BACKENDS = ("python", "real")
REAL_ENGINE_FAULTS = ("port-in-use", "clear")  # the others act on the fake server's simulated GPU work
MODEL = "Qwen3.5-122B-A10B"
_SLEEPER = ("import ctypes,signal,socket,sys\n"
            "libc=ctypes.CDLL(None)\nlibc.prctl(15,sys.argv[1].encode()[:15],0,0,0)\n"
            "libc.prctl(1,9,0,0,0)\n"
            "s=None\n"
            "if len(sys.argv)>2:\n"
            " s=socket.socket();s.bind((sys.argv[2],int(sys.argv[3])));s.listen(16)\n"
            "import os\nprint('ready',os.getpid(),flush=True)\n"
            "while True: signal.pause()\n")


class SimHost:
    def __init__(self, dir: Path | None = None, *, scenario: str = "healthy", time_scale: float = 0.01,
                 gpus: int = 4, gpu_memory_mib: int = gpu.DEFAULT_MEMORY_MIB, ssh_port: int = 0,
                 name: str = "sim-gpu-1", ssh: bool = True, noise_pct: float = 0.0, noise_seed: int = 0,
                 engine: str = "sglang", systemd: str = "python", sudoers: str | None = None,
                 real_engine: bool = False, vllm_version: str = realvllm.DEFAULT_VERSION) -> None:
        if systemd not in SYSTEMD_BACKENDS:
            raise ValueError(f"unknown systemd backend {systemd!r} (one of {', '.join(SYSTEMD_BACKENDS)})")
        if engine not in UNITS:
            raise ValueError(f"unknown engine {engine!r} (one of {', '.join(UNITS)})")
        if engine == "llamacpp":  # the real engine: refuse at once, naming `make engine`, when it is not built
            from simhost.llamacpp.build import built

            built()
        if scenario not in SCENARIOS:
            raise ValueError(f"unknown scenario {scenario!r} (one of {', '.join(SCENARIOS)})")
        if real_engine and engine != "vllm":
            raise ValueError("real_engine is for vLLM (engine='vllm'): llama.cpp always runs its real server")
        self._given_dir = dir
        self.real_engine = real_engine  # the unit runs the real `vllm serve` (CPU build, `make vllm`)
        self.vllm_version = vllm_version
        if real_engine:
            time_scale = 1.0  # a real engine runs in real time: so do the unit's restart and stop timers
        self.scenario = scenario
        self.engine = engine
        self.unit_name = UNITS[engine]
        self.time_scale = time_scale
        self.gpus = gpus
        self.gpu_memory_mib = gpu_memory_mib
        self.ssh_port = ssh_port
        self.name = name
        self._want_ssh = ssh
        self.noise_pct = noise_pct  # per-run speed jitter of the fake server, sd in percent (0: off)
        self.noise_seed = noise_seed
        self.systemd = systemd  # "python": the sim's supervisor; "real": systemd 252 booted in namespaces
        self.real: RealSystemd | None = None
        self.sudoers = sudoers  # real systemd: the login user's sudoers rule (None: what pitcrew needs; "": none)
        self.root = Path(".")
        self.info: dict[str, Any] = {}
        self.supervisor: Supervisor | None = None
        self._journal: JournalWriter | None = None
        self._control: asyncio.AbstractServer | None = None
        self._tools: ToolServer | None = None
        self._ssh: Any = None
        self._owned_dir = False
        self._sleepers: list[subprocess.Popen[bytes]] = []
        self._stale_armed = False
        self.server_port = 0
        self._claimed_ports: list[int] = []  # the ports this host claimed (simhost.ports), released when it closes

    @property
    def unit_dir(self) -> Path:
        """Where the unit lives as the bot sees it: the state dir's for the supervisor, `/etc/systemd/system` for
        real systemd."""
        if self.systemd == "real":
            return Path("/etc/systemd/system")
        return self.root / "etc" / "systemd" / "system"

    @property
    def unit_path(self) -> Path:
        """The unit file as this process reaches it (for real systemd: through `/proc/<pid1>/root`)."""
        if self.real is not None:
            return self.real.unit_path
        return self.unit_dir / self.unit_name

    @property
    def server_url(self) -> str:
        return f"http://127.0.0.1:{self.server_port}"

    def received(self) -> list[dict[str, Any]]:
        """What the simulated SGLang servers received, in order: per generation request ``{"pid": the serving
        process, "stream": bool, "prompt": text, "max_tokens": n}`` (`simstate.record_received`)."""
        return simstate.received(self.root)

    @property
    def placed_pids(self) -> list[int]:
        """The pids of the processes the sim placed on the host (faults), as the host's own tools see them."""
        if self.real is not None:
            return [p.pid for p in self.real.placed]
        return [p.pid for p in self._sleepers]

    @property
    def service_env(self) -> dict[str, str]:
        return {"SIMHOST_DIR": str(self.root), "SIMHOST_TIME_SCALE": repr(self.time_scale),
                "PATH": f"{self.root / 'bin'}:{os.environ.get('PATH', os.defpath)}",
                "HOME": str(self.root), "LANG": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1",
                "SIMHOST_NOISE_PCT": repr(self.noise_pct), "SIMHOST_NOISE_SEED": str(self.noise_seed)}

    async def __aenter__(self) -> SimHost:
        self.root = await asyncio.to_thread(self._make_root)
        try:
            await self._enter()
        except BaseException:
            await self.__aexit__(None, None, None)
            raise
        return self

    @property
    def ssh_env(self) -> dict[str, str]:
        """The environment an SSH session on this host gets (the same for asyncssh and OpenSSH servers). Its home
        is the host's directory, as the unit's is: a session never writes into the home of the process running the
        sim (a sudo upload stages its file in `$HOME`: another test that checks that home found one, session 16)."""
        return {"SIMHOST_DIR": str(self.root), "LANG": "C.UTF-8", "PYTHONPATH": str(self.root / "lib" / "python"),
                "HOME": str(self.root)}

    async def _enter(self) -> None:
        if self.systemd == "python":
            # `systemctl` and `nvidia-smi` run here, for a bash client each that `_layout` writes (a real-systemd host
            # keeps the Python tools: its pids are another namespace's)
            self._tools = await ToolServer(self.root).start()
        await asyncio.to_thread(self._layout)
        if self.systemd == "real":
            await self._enter_real()
            return
        root = self.root
        self._journal = JournalWriter(root, hostname=self.name)
        self.supervisor = Supervisor(root, self._journal, self.unit_path, time_scale=self.time_scale,
                                     service_env=self.service_env, python=_venv_python(),
                                     fake_engines=not self.real_engine)
        self.supervisor.on_exit.append(self._on_server_exit)
        try:
            self._control = await control.serve(root, self._handle)
        except OSError as exc:
            raise RuntimeError(f"another simulated host is already running in {root}") from exc
        ssh_host, ssh_port, user, client_key, known_hosts = "127.0.0.1", 0, "pitcrew", "", ""
        if self._want_ssh:
            from simhost.ssh import start_ssh_server

            self._ssh = await start_ssh_server(root, env=self.ssh_env, path_prefix=[root / "bin"], port=self.ssh_port)
            ssh_host, ssh_port, user = self._ssh.host, self._ssh.port, self._ssh.user
            client_key, known_hosts = str(self._ssh.client_key), str(self._ssh.known_hosts)
        for fault in SCENARIOS[self.scenario]["faults"]:
            await self.fault(fault)
        if SCENARIOS[self.scenario]["start"]:
            await self.supervisor.start()
        self.info = {"name": self.name, "ssh_host": ssh_host, "ssh_port": ssh_port, "user": user,
                     "client_key": client_key, "known_hosts": known_hosts, "unit": self.unit_name,
                     "unit_dir": str(self.unit_dir), "server_url": self.server_url, **self._engine_info()}
        _write_json(root / "host.json", self.info)

    async def _enter_real(self) -> None:
        """Boot systemd 252 with this host inside (`simhost.systemd`); the engine unit starts after the faults."""
        from simhost.ssh import known_hosts_line, prepare_keys
        from simhost.systemd.backend import RealSystemd, repo_root
        from simhost.systemd.layout import USER, HostLayout

        root = self.root
        _, host_key, _ = await asyncio.to_thread(prepare_keys, root)
        ssh_port = self.ssh_port
        if not ssh_port:  # bound later by the namespace's sshd: claimed, not picked with bind(0) and hoped for
            ssh_port = ports.claim_port()
            self._claimed_ports.append(ssh_port)
        os.chmod(root, 0o755)  # the login user reaches the engine's files and nvidia-smi's ledger through it
        env = {k: v for k, v in self.service_env.items() if k not in ("PATH", "HOME")}
        layout = HostLayout(hostname=self.name, ssh_port=ssh_port, host_key=root / "ssh" / "host_key",
                            client_public_key=(root / "ssh" / "client_key.pub").read_text(), unit=self.unit_name,
                            unit_text=self._unit_text, sim_dir=root, repo=repo_root(), environment=env,
                            sudoers=self.sudoers,
                            reach=(realvllm.engine_dir(self.vllm_version), realvllm.model_dir())
                            if self.real_engine else ())
        self.real = RealSystemd(layout, root / "systemd")
        try:
            self._control = await control.serve(root, self._handle)
        except OSError as exc:
            raise RuntimeError(f"another simulated host is already running in {root}") from exc
        await self.real.boot()
        known = root / "ssh" / "known_hosts_systemd"
        await asyncio.to_thread(known.write_text, known_hosts_line("127.0.0.1", ssh_port, host_key) + "\n")
        for fault in SCENARIOS[self.scenario]["faults"]:
            await self.fault(fault)
        if SCENARIOS[self.scenario]["start"]:
            await self.real.start()
        self.info = {"name": self.name, "ssh_host": "127.0.0.1", "ssh_port": ssh_port, "user": USER,
                     "client_key": str(root / "ssh" / "client_key"), "known_hosts": str(known),
                     "unit": self.unit_name, "unit_dir": str(self.unit_dir), "server_url": self.server_url,
                     "sudo": True, "systemd": "real", **self._engine_info()}
        _write_json(root / "host.json", self.info)

    def _engine_info(self) -> dict[str, Any]:
        """What `.info` says about the engine: a real one names its version and its device (CPU)."""
        if not self.real_engine:
            return {}
        return {"real_engine": {"engine": "vllm", "version": self.vllm_version, "device": "cpu",
                                "model": realvllm.MODEL}}

    def _make_root(self) -> Path:
        if self._given_dir is None:
            self._owned_dir = True
            return Path(tempfile.mkdtemp(prefix="simhost-")).resolve()
        root = Path(self._given_dir).resolve()
        root.mkdir(parents=True, exist_ok=True)
        return root

    def _layout(self) -> None:
        root = self.root
        old = _read_json(root / "host.json")
        old_url = str(old.get("server_url") or "")
        if old_url.count(":") == 2:
            self.server_port = int(old_url.rsplit(":", 1)[1])
        else:
            self.server_port = ports.claim_port()
            self._claimed_ports.append(self.server_port)
        self.unit_dir.mkdir(parents=True, exist_ok=True)
        if self.real_engine:
            if (why := realvllm.unavailable(self.vllm_version)) is not None:
                raise RuntimeError(why)
            # the unit names the model through DIR (remove the link for vLLM's own missing-model error)
            link = root / "models" / realvllm.MODEL
            link.parent.mkdir(parents=True, exist_ok=True)
            if not link.is_symlink():
                link.symlink_to(realvllm.model_dir(), target_is_directory=True)
            self._unit_text = realvllm.unit_text(self.vllm_version, self.server_port, link)
        else:
            model_dir = root / "models" / MODEL
            model_dir.mkdir(parents=True, exist_ok=True)
            (model_dir / "config.json").write_text(json.dumps({"architectures": ["Qwen3_5MoeForCausalLM"],
                                                              "model_type": "qwen3_5_moe"}))
            scale = self.time_scale if self.systemd == "real" else None
            if self.engine == "llamacpp":  # the real engine from `make engine`'s cache (EngineNotBuilt without it)
                from simhost.llamacpp.layout import install

                install(root)
                model_dir = root
            self._unit_text = unit_text(SCENARIOS[self.scenario]["steps"], model_dir, self.server_port,
                                        engine=self.engine, scale=scale)
        if self.systemd == "python" and (not self.unit_path.exists() or not old):
            self.unit_path.write_text(self._unit_text)
        if self.systemd == "real":
            from simhost.systemd.backend import python_for_tools

            install_tools(root / "bin", python_for_tools())
        else:
            install_tools(root / "bin", server=(self._tools.port, self._tools.token) if self._tools else None)
        install_sglang_shim(root / "lib" / "python")
        if not self.real_engine:  # the fake's `vllm` metadata, apart: never on the path of a real vLLM
            install_vllm_metadata(root / "lib" / "vllm")
        gpu.write_shape(root, self.gpus, self.gpu_memory_mib)
        simstate.update(root, residual_gib=0.0, slow_load=False)

    async def __aexit__(self, *exc: object) -> None:
        if self.supervisor is not None:
            await self.supervisor.close()
        self._kill_sleepers()
        if self.real is not None:
            await self.real.close()
        if self._ssh is not None:
            with contextlib.suppress(Exception):
                await self._ssh.close()
        if self._tools is not None:
            await self._tools.close()
        if self._control is not None:
            self._control.close()
            with contextlib.suppress(Exception):
                await self._control.wait_closed()
        if self._journal is not None:
            self._journal.close()
        if self._owned_dir:
            shutil.rmtree(self.root, ignore_errors=True)
        while self._claimed_ports:
            ports.release_port(self._claimed_ports.pop())

    async def signal_main(self, signame: str) -> bool:
        """Send SIG`signame` (KILL, STOP, CONT, ...) to the unit's main process; False when it has none."""
        if self.real is not None:
            return await self.real.signal_main(signame)
        pid = await self.main_pid()
        if pid:
            procs.kill(pid, getattr(signal, f"SIG{signame}"))
        return bool(pid)

    async def journal_entries(self) -> list[dict[str, Any]]:
        """Every entry of the host's journal, oldest first, as `journalctl -o json` gives them (journald's own
        for real systemd, the sim's journal file for the supervisor)."""
        if self.real is not None:
            _, out, _ = await self.real.ns.run(["journalctl", "-o", "json", "--no-pager"], timeout=60)
            return [json.loads(line) for line in out.splitlines() if line.startswith("{")]
        from simhost.journal import iter_all, journal_path

        return await asyncio.to_thread(lambda: list(iter_all(journal_path(self.root))))

    # ---- readiness helper for tests and the demo ---------------------------------------------------
    async def wait_ready(self, within: float = 30.0) -> None:
        """Until `/health` answers 200 (raises TimeoutError)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + within
        while loop.time() < deadline:
            if await _health(self.server_port):
                return
            await asyncio.sleep(0.05)
        raise TimeoutError(f"{self.name}: server not ready after {within:.0f}s")

    # ---- faults ------------------------------------------------------------------------------------
    async def fault(self, name: str) -> str:
        """Inject fault `name`. On real systemd the processes are placed inside the host, signals go to the unit's
        MainPID as systemd reports it, the Xid line is sent to journald by the kernel's identifier (its
        `_TRANSPORT` is then `journal`), and a stale holder cannot be armed while the engine runs."""
        if name not in FAULTS:
            raise ValueError(f"unknown fault {name!r} (one of {', '.join(FAULTS)})")
        if self.real_engine and name not in REAL_ENGINE_FAULTS:
            raise ValueError(f"fault {name!r} needs the simulated engine (a real one takes "
                             f"{', '.join(REAL_ENGINE_FAULTS)})")
        if name == "stale-gpu-holder":
            if not await self.main_pid():  # nothing running: a leftover of an earlier run holds the memory now
                self._spawn_stale({i: 94312 for i in range(self.gpus)})
                return "a leftover process now holds GPU memory"
            if self.real is not None:
                return "the engine is running: stop it first (on real systemd a leftover holder is placed at once)"
            self._stale_armed = True
            return "armed: the next server that dies leaves its GPU memory held"
        if name == "port-in-use":
            self._spawn_sleeper("python3", "127.0.0.1", self.server_port)
            return f"port {self.server_port} is now held by another process"
        if name == "slow-load":
            simstate.update(self.root, slow_load=True)
            return "weight loading is 3x slower from the next start"
        if name == "nccl-timeout":
            return "NCCL watchdog timeout injected" if await self.signal_main("USR1") else "no server running"
        if name == "xid":
            lost = self.gpus - 1
            from simhost.tools.nvidia_smi import bus_id

            pci = bus_id(lost)[4:-2].lower()
            message = f"NVRM: Xid (PCI:{pci}): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus."
            if self.real is not None:
                fields = f"MESSAGE={message}\nSYSLOG_IDENTIFIER=kernel\nSYSLOG_FACILITY=0\nPRIORITY=4\n"
                await self.real.ns.run(["logger", "--journald"], input=fields.encode())
            else:
                assert self._journal is not None
                self._journal.append({"_TRANSPORT": "kernel", "SYSLOG_IDENTIFIER": "kernel", "SYSLOG_FACILITY": 0,
                                      "PRIORITY": 4, "_SOURCE_MONOTONIC_TIMESTAMP": 0, "MESSAGE": message})
            shape = gpu.read_shape(self.root)
            gpu.write_shape(self.root, self.gpus, self.gpu_memory_mib)
            _write_json(Path(gpu.gpu_dir(self.root), "gpus.json"), {**shape, "lost": [lost]})
            await self.signal_main("USR2")
            return f"Xid 79 on GPU {lost}"
        # clear
        self._stale_armed = False
        self._kill_sleepers()
        gpu.write_shape(self.root, self.gpus, self.gpu_memory_mib)
        simstate.update(self.root, residual_gib=0.0, slow_load=False)
        return "all faults cleared"

    async def main_pid(self) -> int:
        """The unit's main pid as the host's tools see it (0 when it has none)."""
        if self.real is not None:
            return await self.real.main_pid()
        return self.supervisor.main_pid if self.supervisor is not None else 0

    def _spawn_sleeper(self, comm: str, *bind: object) -> int:
        """A process named `comm` (optionally listening on `bind`); returns its pid as the host's tools see it."""
        if self.real is not None:
            return self.real.place(_SLEEPER, comm, *map(str, bind)).pid
        proc = subprocess.Popen([sys.executable, "-S", "-c", _SLEEPER, comm, *map(str, bind)],
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                start_new_session=True)
        assert proc.stdout is not None
        proc.stdout.readline()
        self._sleepers.append(proc)
        return proc.pid

    def _spawn_stale(self, mib: dict[int, int], names: dict[int, str] | None = None) -> None:
        for i, amount in mib.items():
            name = (names or {}).get(i, f"sglang::scheduler_TP{i}")
            pid = self._spawn_sleeper(name)
            proc = str(self.real.ns.root / "proc") if self.real is not None else "/proc"
            gpu.hold(self.root, pid, name, {i: amount}, {i: 0}, proc=proc)

    def _on_server_exit(self, invocation: str, pid: int) -> None:
        records = gpu.records_of_invocation(self.root, invocation)
        if self._stale_armed and records:
            self._stale_armed = False
            mib: dict[int, int] = {}
            names: dict[int, str] = {}
            for rec in records:
                for k, v in dict(rec.get("mib", {})).items():  # type: ignore[call-overload]
                    mib[int(k)] = int(v)
                    names[int(k)] = str(rec.get("name"))
            self._spawn_stale(mib, names)
        for rec in records:
            with contextlib.suppress(OSError):
                Path(str(rec["_path"])).unlink()

    def _kill_sleepers(self) -> None:
        for proc in self._sleepers:
            with contextlib.suppress(OSError):
                proc.kill()
            with contextlib.suppress(Exception):
                proc.wait(timeout=2)
            gpu.release(self.root, proc.pid)
        self._sleepers.clear()
        for pid in self.real.unplace() if self.real is not None else []:
            gpu.release(self.root, pid)

    # ---- control requests --------------------------------------------------------------------------
    async def _handle(self, req: dict[str, Any]) -> dict[str, Any]:
        op = req.get("op")
        if op == "fault":
            return {"ok": True, "message": await self.fault(str(req.get("name")))}
        sup = self.supervisor
        if sup is None:  # real systemd: its own systemctl answers, not this socket
            return {"ok": False, "error": "this host runs real systemd"}
        unit = req.get("unit") or self.unit_name
        if op == "daemon-reload":
            await sup.daemon_reload()
            return {"ok": True}
        if unit != self.unit_name:
            if op in ("show", "status"):
                return {"ok": True, "props": {"Id": unit, "LoadState": "not-found", "ActiveState": "inactive",
                                              "SubState": "dead", "Result": "success", "MainPID": "0"}}
            return {"ok": False, "result": "not-found"}
        changed = sup.need_daemon_reload()
        if op in ("show", "status"):
            answer: dict[str, Any] = {"ok": True, "props": sup.properties(), "changed": changed}
            if op == "status":
                pids = procs.group_members(sup.main_pid) if sup.main_pid else []
                titles = {h.pid: h.name for h in gpu.holders(self.root)}  # setproctitle'd schedulers
                answer.update(pids=[(p, titles.get(p) or " ".join(sup.unit.exec_start) if p == sup.main_pid
                                     else titles.get(p) or _cmdline(p)) for p in pids],
                              main_comm=procs.comm(sup.main_pid),
                              since=sup.stamps.get("StateChangeTimestamp", 0.0),
                              exec=" ".join(sup.unit.exec_start))
            return answer
        jobs = {"start": sup.start, "stop": sup.stop, "restart": sup.restart, "reset-failed": sup.reset_failed}
        if op not in jobs:
            return {"ok": False, "error": f"unknown operation {op}"}
        if req.get("no_block"):
            task = asyncio.create_task(jobs[op]())
            task.add_done_callback(lambda t: t.exception() if not t.cancelled() else None)
            return {"ok": True, "changed": changed}
        try:
            await jobs[op]()
        except JobFailed as exc:
            return {"ok": False, "result": exc.result, "changed": changed}
        return {"ok": True, "changed": changed}


def _venv_python() -> str:
    candidate = Path(sys.executable).with_name("python3")
    return str(candidate if candidate.exists() else Path(sys.executable))


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
    except OSError:
        return "?"


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data: dict[str, Any] = json.loads(path.read_text())
        return data
    except (OSError, ValueError):
        return {}


def _write_json(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(data))
    os.replace(tmp, path)


async def _health(port: int) -> bool:
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port), 1.0)
    except (TimeoutError, OSError):
        return False
    try:
        writer.write(b"GET /health HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n")
        line = await asyncio.wait_for(reader.readline(), 2.0)
        return b" 200 " in line
    except (TimeoutError, OSError):
        return False
    finally:
        writer.close()
