"""GPU hosts: the `Host` contract (run with a deadline, stream lines, upload atomically), its asyncssh
implementation and the pool of configured hosts.

The names below are the package's public API: other packages import only these."""

from services.hosts.contract import Host, HostSpec
from services.hosts.fence import check_guard, fenced, guarded
from services.hosts.pool import HostPool
from services.hosts.sudoers import sudoers_rule

__all__ = [
    "Host",
    "HostPool",
    "HostSpec",
    "check_guard",
    "fenced",
    "guarded",
    "sudoers_rule",
]
