"""The one error tree of pitcrew.

Every `PitcrewError` carries a message that is safe to show a user as is (no secrets, no
tracebacks, no internal paths beyond what the user supplied). Anything that is not a
`PitcrewError` is a bug: the router shows a short reference id instead and logs the details.
"""

from __future__ import annotations

from typing import Any


class PitcrewError(Exception):
    """Base of every expected error; ``str(err)`` is user-safe text."""

    def __init__(self, message: str, **fields: Any) -> None:
        super().__init__(message)
        self.message = message
        self.fields = fields

    def __str__(self) -> str:
        return self.message


class UserInputError(PitcrewError):
    """The command, flag or value the user typed is not acceptable."""


class UnknownCommand(UserInputError):
    """No command of that name; ``fields['suggestion']`` may hold a 'did you mean'."""


class NotAuthorized(PitcrewError):
    """The actor lacks the role (or channel permission) the action needs."""


class NotFound(PitcrewError):
    """A job, revision, host or incident that was named does not exist."""


class Conflict(PitcrewError):
    """The action cannot run now (host busy, lease held, job already finished...)."""


class RateLimited(PitcrewError):
    """Too many commands or queued jobs for this user or host."""


class HostError(PitcrewError):
    """Something went wrong talking to a host."""


class HostUnreachable(HostError):
    """The host did not answer, refused the connection or dropped it."""


class HostKeyMismatch(HostError):
    """The host presented a key that does not match the pinned one: we refuse to talk to it."""


class HostTimeout(HostError):
    """A command on the host did not finish before its deadline (the remote process was ended)."""


class CommandFailed(HostError):
    """A command on the host exited non-zero."""


class SudoRefused(CommandFailed):
    """sudo on the host refused to run a command for pitcrew's user (its sudoers rule lacks it); nothing ran."""


class UnitError(PitcrewError):
    """A systemd unit file could not be read or edited as asked."""


class DeployFailed(PitcrewError):
    """The deploy did not reach a serving state."""


class BenchmarkError(PitcrewError):
    """The benchmark could not run (server unreachable, bad parameters...)."""


class JobCancelled(PitcrewError):
    """A job was cancelled at a safe point."""


class LeaseLost(PitcrewError):
    """This process no longer holds the lease of the host a job acts on: the job must stop touching it."""


class DatabaseUnavailable(PitcrewError):
    """The database did not answer; the bot is degraded and retrying."""
