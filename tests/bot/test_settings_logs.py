"""Settings from env, TOML and defaults; one-line errors naming the field; logs redacted and JSON."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from bot.logs import JsonFormatter, RedactingFilter
from bot.settings import ConfigError, load_settings

HOST = ('[{"name": "gpu-1", "address": "10.0.0.1", "client_key": "/k", "known_hosts": "/kh", '
        '"server_url": "http://10.0.0.1:30000"}]')


def test_env_nesting_lists_and_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PITCREW_DB__URL", "postgresql+asyncpg://u@h/db")
    monkeypatch.setenv("PITCREW_HOSTS", HOST)
    monkeypatch.setenv("PITCREW_SLACK__BOT_TOKEN", "xoxb-secret-value-123")
    monkeypatch.setenv("PITCREW_POLICY__AUTO_ROLLBACK", "false")
    s = load_settings()
    assert s.db.url == "postgresql+asyncpg://u@h/db"
    assert s.hosts[0].name == "gpu-1" and s.hosts[0].unit == "sglang.service" and s.hosts[0].port == 22
    assert s.policy.auto_rollback is False
    assert "xoxb-secret-value-123" not in repr(s) and "xoxb-secret-value-123" not in str(s.model_dump())
    assert s.slack.bot_token is not None and s.slack.bot_token.get_secret_value() == "xoxb-secret-value-123"


def test_toml_file_and_env_override(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = tmp_path / "pitcrew.toml"
    cfg.write_text('[db]\nurl = "sqlite+aiosqlite:///x.db"\n[bench]\nconcurrency = [1, 8]\n'
                   '[[hosts]]\nname = "gpu-2"\naddress = "h"\nclient_key = "/k"\nknown_hosts = "/kh"\n'
                   'server_url = "http://h:30000/"\n')
    monkeypatch.setenv("PITCREW_BENCH__WARMUP", "5")
    s = load_settings(cfg)
    assert s.db.url == "sqlite+aiosqlite:///x.db"
    assert s.bench.concurrency == [1, 8] and s.bench.warmup == 5
    assert s.hosts[0].server_url == "http://h:30000"


@pytest.mark.parametrize(("env", "expected"), [
    ({"PITCREW_DB__URL": "nonsense://"}, "invalid setting db.url (PITCREW_DB__URL)"),
    ({"PITCREW_HOSTS": '[{"name": "gpu-1"}]'}, "invalid setting hosts.0.address (PITCREW_HOSTS)"),
    ({"PITCREW_HOSTS": HOST.replace("gpu-1", "GPU 1")}, "invalid setting hosts.0.name"),
    ({"PITCREW_BENCH__CONCURRENCY": "[0]"}, "invalid setting bench.concurrency"),
])
def test_bad_settings_give_one_line_naming_the_field(monkeypatch: pytest.MonkeyPatch, env: dict[str, str],
                                                     expected: str) -> None:
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    with pytest.raises(ConfigError) as e:
        load_settings()
    assert str(e.value).startswith(expected) and "\n" not in str(e.value)


def test_unknown_key_in_toml_is_named(tmp_path: Path) -> None:
    cfg = tmp_path / "pitcrew.toml"
    cfg.write_text("[policy]\nauto_rollbak = true\n")
    with pytest.raises(ConfigError) as e:
        load_settings(cfg)
    assert "policy.auto_rollbak" in str(e.value)


def test_cli_bad_setting_exits_2_without_traceback(tmp_path: Path) -> None:
    env = {**os.environ, "PITCREW_DB__URL": "nonsense://"}
    p = subprocess.run([sys.executable, "-m", "bot", "migrate"], capture_output=True, text=True, env=env,
                       cwd=tmp_path, timeout=60)
    assert p.returncode == 2
    assert p.stderr.strip().startswith("pitcrew: invalid setting db.url") and "Traceback" not in p.stderr


def test_cli_migrate_twice_on_sqlite(tmp_path: Path) -> None:
    env = {**os.environ, "PITCREW_DB__URL": f"sqlite+aiosqlite:///{tmp_path / 'p.db'}"}
    for _ in range(2):
        p = subprocess.run([sys.executable, "-m", "bot", "migrate"], capture_output=True, text=True, env=env,
                           timeout=60)
        assert p.returncode == 0, p.stderr
        assert "up to date" in p.stdout


def test_logs_are_redacted_and_json() -> None:
    record = logging.LogRecord("pitcrew.t", logging.WARNING, __file__, 1, "token %s and Bearer %s",
                               ("xoxb-1234567890-abcdef", "abc.def.ghi.jkl"), None)
    assert RedactingFilter().filter(record)
    line = JsonFormatter().format(record)
    obj = orjson.loads(line)
    assert obj["level"] == "warning" and obj["logger"] == "pitcrew.t"
    assert "xoxb-1234567890" not in line and "abc.def.ghi" not in line


def test_chatty_libraries_say_warnings_only_unless_the_bot_logs_at_debug() -> None:
    from bot.logs import CHATTY_LIBRARIES, configure_logging

    root = logging.getLogger()
    saved = (root.handlers[:], root.level, {n: logging.getLogger(n).level for n in CHATTY_LIBRARIES})
    try:
        configure_logging()
        ssh = logging.getLogger("asyncssh")
        assert not ssh.isEnabledFor(logging.INFO) and ssh.isEnabledFor(logging.WARNING)
        assert logging.getLogger("bot.serve").isEnabledFor(logging.INFO)  # pitcrew's own lines still at INFO
        configure_logging(level=logging.DEBUG)
        assert ssh.isEnabledFor(logging.DEBUG)
        configure_logging(level=logging.ERROR)
        assert not ssh.isEnabledFor(logging.WARNING)
    finally:
        root.handlers[:], root.level = saved[0], saved[1]
        for name, lvl in saved[2].items():
            logging.getLogger(name).setLevel(lvl)
