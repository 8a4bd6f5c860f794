"""Logging for the bot process: plain text by default, one JSON object per line when asked
(`PITCREW_LOG_JSON=true`), and every message redacted of secrets before it is written."""

from __future__ import annotations

import logging
import sys
from datetime import UTC, datetime

import orjson

from services.redact import redact


class RedactingFilter(logging.Filter):
    """Masks tokens and keys in the rendered message (arguments included) and in exception text."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:
            message = str(record.msg)
        record.msg, record.args = redact(message), None
        if record.exc_info and record.exc_info[1] is not None:
            record.exc_text = redact(logging.Formatter().formatException(record.exc_info))
            record.exc_info = None
        return True


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        obj = {"at": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
               "level": record.levelname.lower(), "logger": record.name, "message": record.getMessage()}
        if record.exc_text:
            obj["exception"] = record.exc_text
        return orjson.dumps(obj).decode()


# Libraries that log every connection, request or scheduled run at INFO (asyncssh: each SSH connection, auth and
# channel; httpx: each request; APScheduler: each run of a periodic task): a job of pitcrew's would bury its own lines
# in hundreds of theirs. They say WARNING and above unless the bot logs at DEBUG.
CHATTY_LIBRARIES = ("asyncssh", "httpx", "httpcore", "apscheduler")


def configure_logging(*, json: bool = False, level: int = logging.INFO) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.addFilter(RedactingFilter())
    handler.setFormatter(JsonFormatter() if json else
                         logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    for name in CHATTY_LIBRARIES:
        logging.getLogger(name).setLevel(logging.NOTSET if level <= logging.DEBUG else max(level, logging.WARNING))
