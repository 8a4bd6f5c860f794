"""The `HostPool`: the hosts pitcrew manages, by name, one `Host` (so one connection) each, closed together."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from types import TracebackType

from services.errors import NotFound, UserInputError
from services.hosts.contract import Host, HostSpec
from services.hosts.ssh import SshHost


class HostPool:
    """The hosts pitcrew manages, by name; one `Host` (so one connection) per host."""

    def __init__(self, hosts: Iterable[Host] = ()) -> None:
        self._hosts: dict[str, Host] = {}
        for host in hosts:
            self.add(host)

    @classmethod
    def from_specs(
        cls, specs: Iterable[HostSpec], factory: Callable[[HostSpec], Host] | None = None
    ) -> HostPool:
        """A pool built from specs; ``factory`` defaults to `services.hosts.ssh.SshHost`."""
        return cls((factory or SshHost)(spec) for spec in specs)

    def add(self, host: Host) -> None:
        name = host.spec.name
        if name in self._hosts:
            raise UserInputError(f"host {name!r} is defined twice")
        self._hosts[name] = host

    async def remove(self, name: str) -> None:
        host = self._hosts.pop(name, None)
        if host is not None:
            await host.close()

    def get(self, name: str) -> Host:
        try:
            return self._hosts[name]
        except KeyError:
            raise NotFound(f"no host named {name!r}", host=name) from None

    def names(self) -> list[str]:
        return sorted(self._hosts)

    def specs(self) -> list[HostSpec]:
        return [self._hosts[name].spec for name in self.names()]

    def __contains__(self, name: object) -> bool:
        return name in self._hosts

    def __len__(self) -> int:
        return len(self._hosts)

    async def close(self) -> None:
        hosts, self._hosts = list(self._hosts.values()), {}
        for host in hosts:
            await host.close()

    async def __aenter__(self) -> HostPool:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()
