"""The simulated host under real systemd 252: PID 1 in private namespaces on a throwaway overlay of `/`."""

from simhost.systemd.backend import RealSystemd
from simhost.systemd.layout import HostLayout, sudoers_rule
from simhost.systemd.namespace import SystemdNamespace, systemd_version, unavailable

__all__ = ["HostLayout", "RealSystemd", "SystemdNamespace", "sudoers_rule", "systemd_version", "unavailable"]
