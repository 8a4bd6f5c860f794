"""Commands the simulated host puts first on PATH: systemctl, journalctl, nvidia-smi, sudo.

Each is a tiny executable (written by `simhost.tools.install`) that runs the matching module with
`python3 -S` (no site import: tools start in a few tens of milliseconds). They find the sim through
`SIMHOST_DIR`.
"""
