"""Commands the simulated host puts first on PATH: systemctl, journalctl, nvidia-smi, sudo.

Each is a tiny executable (written by `simhost.tools.install`). `systemctl` and `nvidia-smi` ask the host's tool
server (`simhost.tools.serve`) to run them in the host's own process, and run their module with `python3 -S` (no
site import) when it is not there; `journalctl` is systemd's own or the sim's module. They find the sim through
`SIMHOST_DIR` (`simhost.tools.streams`).
"""
