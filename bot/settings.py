"""Settings: the one place pitcrew reads its configuration.

Sources, highest first: init arguments, environment (`PITCREW_` prefix, `__` for nesting),
an optional TOML file (`--config FILE` or `PITCREW_CONFIG`), defaults. Secrets are `SecretStr`.
`load_settings()` turns every validation problem into one `ConfigError` line naming the field.
The composition root passes plain values down; nothing else imports this module's settings.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator, model_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

Role = Literal["viewer", "experimenter", "operator", "admin"]
_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]{0,62}$")
_UNIT = re.compile(r"^[A-Za-z0-9@._:-]{1,200}\.service$")


class ConfigError(Exception):
    """A settings problem, as one line that names the field."""


class _Section(BaseModel):
    """A settings section: a misspelled key is an error, not silently ignored."""

    model_config = ConfigDict(extra="forbid")


class DbSettings(_Section):
    url: str = "sqlite+aiosqlite:///pitcrew.db"
    echo: bool = False

    @field_validator("url")
    @classmethod
    def _known_driver(cls, v: str) -> str:
        ok = ("sqlite+aiosqlite://", "postgresql+asyncpg://")
        if not v.startswith(ok):
            raise ValueError("must start with sqlite+aiosqlite:// or postgresql+asyncpg://")
        return v


class SlackSettings(_Section):
    mode: Literal["socket", "http"] = "socket"
    bot_token: SecretStr | None = None
    app_token: SecretStr | None = None
    signing_secret: SecretStr | None = None
    api_base_url: str | None = None
    alert_channel: str | None = None
    command: str = "/pitcrew"
    http_host: str = "0.0.0.0"
    http_port: int = Field(default=3000, ge=0, le=65535)

    def missing(self) -> list[str]:
        """Names of the environment variables still needed to run this mode."""
        need = ["PITCREW_SLACK__BOT_TOKEN"] if self.bot_token is None else []
        if self.mode == "socket" and self.app_token is None:
            need.append("PITCREW_SLACK__APP_TOKEN")
        if self.mode == "http" and self.signing_secret is None:
            need.append("PITCREW_SLACK__SIGNING_SECRET")
        return need


class HostSettings(_Section):
    name: str
    address: str
    port: int = Field(default=22, ge=1, le=65535)
    user: str = "root"
    client_key: Path
    known_hosts: Path
    unit: str = "sglang.service"
    unit_dir: str = "/etc/systemd/system"
    server_url: str
    sudo: bool = False
    tags: list[str] = Field(default_factory=list)

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not _NAME.match(v):
            raise ValueError("must be lowercase letters, digits, '.', '_' or '-' (at most 63)")
        return v

    @field_validator("unit")
    @classmethod
    def _unit(cls, v: str) -> str:
        if not _UNIT.match(v):
            raise ValueError("must be a systemd service name like sglang.service")
        return v

    @field_validator("unit_dir")
    @classmethod
    def _unit_dir(cls, v: str) -> str:
        if not v.startswith("/") or ".." in v.split("/") or any(c in v for c in "\n\0"):
            raise ValueError("must be an absolute path without '..'")
        return v

    @field_validator("server_url")
    @classmethod
    def _url(cls, v: str) -> str:
        if not v.startswith(("http://", "https://")):
            raise ValueError("must be an http:// or https:// URL")
        return v.rstrip("/")


def _default_roles() -> dict[str, Role]:
    return {"*": "viewer"}  # fail closed: nobody may change anything until a role is granted


class PolicySettings(_Section):
    # Slack user id or group name -> role; "*" is everyone's default role.
    roles: dict[str, Role] = Field(default_factory=_default_roles)
    # channel id -> host names allowed from it; a channel not listed may use every host.
    channel_hosts: dict[str, list[str]] = Field(default_factory=dict)
    confirm: list[str] = Field(default_factory=lambda: ["try", "sweep", "tune", "rollback", "kill-stale"])
    auto_rollback: bool = True
    kill_stale_automatically: bool = False
    restart_loop_threshold: int = Field(default=2, ge=1, le=100)
    restart_loop_window_s: float = Field(default=600.0, gt=0)
    incident_stable_window_s: float = Field(default=600.0, gt=0)
    sweep_end: Literal["best", "start"] = "best"
    user_commands_per_minute: int = Field(default=30, ge=1)
    status_ephemeral: bool = False  # `status` answers only the asker instead of the channel
    max_queued_jobs_per_host: int = Field(default=10, ge=1)
    ready_timeout_s: float = Field(default=900.0, gt=0)
    stop_timeout_s: float = Field(default=180.0, gt=0)
    # after a start, load the server up to the top benchmark level in steps before the full benchmark
    ramp_before_benchmark: bool = True
    # on SIGTERM: how long a running job may take to reach its next safe point (and restore the unit)
    # before the bot cuts it and restores the pre-job revision itself (docs/RELIABILITY.md)
    shutdown_grace_s: float = Field(default=90.0, gt=0)


class BenchSettings(_Section):
    concurrency: list[int] = Field(default_factory=lambda: [1, 4, 16])
    # None: 4 rounds of C per level, at least 32 (services.bench.runner.default_requests)
    requests_per_level: int | None = Field(default=None, ge=1, le=100_000)
    warmup: int = Field(default=2, ge=0, le=1000)
    input_len: int = Field(default=256, ge=1, le=1_000_000)
    output_len: int = Field(default=256, ge=1, le=1_000_000)
    max_duration_s: float = Field(default=1800.0, gt=0)

    @field_validator("concurrency")
    @classmethod
    def _levels(cls, v: list[int]) -> list[int]:
        if not v or any(c < 1 or c > 1024 for c in v):
            raise ValueError("must be a non-empty list of integers from 1 to 1024")
        return v


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="PITCREW_", env_nested_delimiter="__", extra="forbid")

    db: DbSettings = Field(default_factory=DbSettings)
    slack: SlackSettings = Field(default_factory=SlackSettings)
    hosts: list[HostSettings] = Field(default_factory=list)
    policy: PolicySettings = Field(default_factory=PolicySettings)
    bench: BenchSettings = Field(default_factory=BenchSettings)
    log_json: bool = False
    metrics_port: int | None = Field(default=None, ge=0, le=65535)

    @model_validator(mode="after")
    def _unique_hosts(self) -> Settings:
        names = [h.name for h in self.hosts]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"host names must be unique (repeated: {', '.join(dupes)})")
        return self

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        sources: list[PydanticBaseSettingsSource] = [init_settings, env_settings]
        toml_file = _CONFIG_FILE.get("path")
        if toml_file:
            sources.append(TomlConfigSettingsSource(settings_cls, toml_file=toml_file))
        return tuple(sources)


_CONFIG_FILE: dict[str, Path | None] = {"path": None}


def load_settings(config_file: str | Path | None = None, **overrides: Any) -> Settings:
    """Read settings; raise `ConfigError` with one line naming the field on any problem."""
    path = config_file or os.environ.get("PITCREW_CONFIG")
    if path:
        p = Path(path)
        if not p.is_file():
            raise ConfigError(f"config file not found: {p}")
        _CONFIG_FILE["path"] = p
    else:
        _CONFIG_FILE["path"] = None
    try:
        return Settings(**overrides)
    except ValidationError as e:
        raise ConfigError(_one_line(e)) from None
    except ValueError as e:  # TOML syntax errors, JSON in env values
        raise ConfigError(f"invalid settings: {str(e).splitlines()[0]}") from None
    finally:
        _CONFIG_FILE["path"] = None


def _one_line(e: ValidationError) -> str:
    err = e.errors()[0]
    loc = ".".join(str(p) for p in err["loc"]) or "settings"
    msg = err["msg"].removeprefix("Value error, ")
    more = f" (and {e.error_count() - 1} more)" if e.error_count() > 1 else ""
    names: list[str] = []
    for part in err["loc"]:
        if isinstance(part, int):
            break  # list items come from one JSON value
        names.append(str(part).upper())
    env = "PITCREW_" + "__".join(names)
    return f"invalid setting {loc} ({env}): {msg}{more}"
