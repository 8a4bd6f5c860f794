"""The sim's `journalctl` (252): `-u UNIT`, `-k`, `-o short|short-iso|cat|json|json-pretty|json-seq`,
`-n N`, `-f`, `--since`/`--until`, `--after-cursor`, `--cursor`, `--cursor-file`, `--show-cursor`, `-a/--all`,
`--output-fields`, `-r`, `-q`, `--no-pager` (and other display flags, accepted and ignored).

`-f` and `-k` imply `-b` (the current boot only) unless `-m/--merge` is given, as systemd's do (journalctl.c);
`--no-tail` / `-n all` print every matching entry.

`-f` follows the file (polls it every 50 ms) and exits when its stdout is closed (SIGPIPE/EPIPE,
or POLLERR on the pipe while idle) or on SIGHUP/SIGTERM/SIGINT, as journalctl does under an SSH
channel that closes. `-f` without a cursor starts with the last 10 entries.
"""

from __future__ import annotations

import json
import os
import select
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path

from simhost.journal import (
    IDS_FILE,
    cursor_seqnum,
    journal_path,
    read_backwards,
    read_entries,
    short_line,
    to_json_line,
    unit_matches,
)

POLL = 0.05


class Args:
    units: list[str]
    kernel = False
    output = "short"
    lines: int | None = None
    follow = False
    since: int | None = None
    until: int | None = None
    after_cursor: str | None = None
    cursor: str | None = None
    show_cursor = False
    all = False
    reverse = False
    quiet = False
    fields: set[str] | None = None
    cursor_file: str | None = None
    no_tail = False
    merge = False
    boot: str | None = None

    def __init__(self) -> None:
        self.units = []


def parse_time(text: str) -> int:
    """journalctl time specs: `YYYY-MM-DD [HH:MM[:SS]]`, `today`, `yesterday`, `now`, `-5min`,
    `5 min ago`, `@EPOCH`; returns µs since the epoch (local time unless `UTC` is appended)."""
    from simhost.unitfile import parse_sec

    now = time.time()
    spec = text.strip()
    if spec.startswith("@"):
        return int(float(spec[1:]) * 1e6)
    if spec == "now":
        return int(now * 1e6)
    if spec in ("today", "yesterday", "tomorrow"):
        day = time.mktime((*time.localtime(now)[:3], 0, 0, 0, 0, 0, -1))
        day += {"today": 0, "yesterday": -86400, "tomorrow": 86400}[spec]
        return int(day * 1e6)
    if spec.endswith(" ago"):
        return int((now - parse_sec(spec[:-4]) / 1e6) * 1e6)
    if spec[:1] in "+-":
        delta = parse_sec(spec[1:]) / 1e6
        return int((now + (delta if spec[0] == "+" else -delta)) * 1e6)
    utc = spec.endswith(" UTC")
    spec = spec.removesuffix(" UTC")
    for fmt in ("%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H:%M", "%Y-%m-%d", "%Y-%m-%dT%H:%M:%S", "%H:%M:%S", "%H:%M"):
        try:
            parsed = time.strptime(spec, fmt)
        except ValueError:
            continue
        if fmt.startswith("%H"):
            today = time.localtime(now)
            parsed = time.struct_time(today[:3] + parsed[3:6] + (0, 0, -1))
        if utc:
            import calendar

            return int(calendar.timegm(parsed) * 1e6)
        return int(time.mktime(parsed) * 1e6)
    raise ValueError(text)


def parse_args(argv: list[str]) -> Args:
    args = Args()
    it = iter(argv)

    def value(arg: str, short: str, long: str) -> str | None:
        if arg in (short, long):
            return next(it)
        if long and arg.startswith(long + "="):
            return arg.split("=", 1)[1]
        if short and arg.startswith(short) and len(arg) > len(short) and not arg.startswith("--"):
            return arg[len(short):]
        return None

    for arg in it:
        if (v := value(arg, "-u", "--unit")) is not None:
            args.units.append(v if "." in v else f"{v}.service")
        elif (v := value(arg, "-o", "--output")) is not None:
            args.output = v
        elif (v := value(arg, "-n", "--lines")) is not None:
            args.lines = None if v == "all" else int(v.lstrip("+"))
            args.no_tail = v == "all"
        elif arg == "-n":
            args.lines = 10
        elif (v := value(arg, "-S", "--since")) is not None:
            args.since = parse_time(v)
        elif (v := value(arg, "-U", "--until")) is not None:
            args.until = parse_time(v)
        elif (v := value(arg, "", "--after-cursor")) is not None:
            args.after_cursor = v
        elif (v := value(arg, "-c", "--cursor")) is not None:
            args.cursor = v
        elif (v := value(arg, "", "--cursor-file")) is not None:
            args.cursor_file = v
            try:
                with open(v) as fh:
                    saved = fh.read().strip()
                if saved and args.after_cursor is None and args.cursor is None:
                    args.after_cursor = saved
            except OSError:
                pass
        elif (v := value(arg, "", "--output-fields")) is not None:
            args.fields = set(v.split(","))
        elif arg in ("-m", "--merge"):
            args.merge = True
        elif arg == "--no-tail":
            args.no_tail = True
        elif arg in ("-f", "--follow"):
            args.follow = True
        elif arg in ("-k", "--dmesg"):
            args.kernel = True
        elif arg == "--show-cursor":
            args.show_cursor = True
        elif arg in ("-a", "--all"):
            args.all = True
        elif arg in ("-r", "--reverse"):
            args.reverse = True
        elif arg in ("-q", "--quiet"):
            args.quiet = True
        elif arg in ("-e", "--pager-end"):
            args.lines = 1000 if args.lines is None else args.lines
        elif arg.startswith("-") and len(arg) > 2 and not arg.startswith("--") and set(arg[1:]) <= set("xeaqfrk"):
            for flag in arg[1:]:
                args = _short_flag(args, flag)
        # --no-pager, -x, -b, --utc, --no-hostname, --system...: no effect on this host
    return args


def _short_flag(args: Args, flag: str) -> Args:
    if flag == "f":
        args.follow = True
    elif flag == "a":
        args.all = True
    elif flag == "r":
        args.reverse = True
    elif flag == "q":
        args.quiet = True
    elif flag == "k":
        args.kernel = True
    elif flag == "e":
        args.lines = 1000 if args.lines is None else args.lines
    return args


def matcher(args: Args) -> Callable[[dict[str, str]], bool]:
    def match(entry: dict[str, str]) -> bool:
        if args.kernel and entry.get("_TRANSPORT") != "kernel":
            return False
        if args.units and not any(unit_matches(entry, u) for u in args.units):
            return False
        if args.boot is not None and entry.get("_BOOT_ID") != args.boot:
            return False
        real = int(entry.get("__REALTIME_TIMESTAMP", "0"))
        if args.since is not None and real < args.since:
            return False
        return not (args.until is not None and real > args.until)

    return match


def current_boot(root: Path) -> str | None:
    """The simulated host's current boot id (what `-b` means on the host itself)."""
    try:
        boot = json.loads((root / IDS_FILE).read_text()).get("boot_id")
    except (OSError, ValueError):
        return None
    return boot if isinstance(boot, str) else None


def render(entry: dict[str, str], args: Args) -> str:
    mode = args.output
    if mode in ("json", "json-seq"):
        line = to_json_line(entry, args.all, args.fields)
        return "\x1e" + line if mode == "json-seq" else line
    if mode == "json-pretty":
        return json.dumps(json.loads(to_json_line(entry, args.all, args.fields)), indent=8,
                          ensure_ascii=False).replace("\n}", "\n}")
    if mode == "cat":
        from simhost.journal import message_text

        return message_text(entry, args.all)
    return short_line(entry, iso=mode == "short-iso", show_all=args.all)


def select_start(entries: list[dict[str, str]], args: Args) -> list[dict[str, str]]:
    if args.after_cursor or args.cursor:
        target = cursor_seqnum(args.after_cursor or args.cursor or "")
        if target is not None:
            keep_equal = args.cursor is not None and args.after_cursor is None
            entries = [e for e in entries if int(e.get("__SEQNUM", "0")) > target
                       or (keep_equal and int(e.get("__SEQNUM", "0")) == target)]
        return entries
    if args.no_tail:
        return entries
    if args.lines is not None:
        return entries[-args.lines:] if args.lines > 0 else []
    if args.follow:
        return entries[-10:]
    return entries


class _Out:
    def __init__(self) -> None:
        self.fd = sys.stdout.fileno()

    def write(self, text: str) -> None:
        data = (text + "\n").encode("utf-8", "surrogateescape")
        while data:
            written = os.write(self.fd, data)
            data = data[written:]

    def closed(self) -> bool:
        try:
            poller = select.poll()
            poller.register(self.fd, select.POLLERR | select.POLLHUP)
            return bool(poller.poll(0))
        except (OSError, ValueError):
            return False


def main(argv: list[str]) -> int:
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(sig, lambda *_: os._exit(0))
    root = os.environ.get("SIMHOST_DIR")
    if not root:
        print("No journal files were found.", file=sys.stderr)
        return 1
    try:
        args = parse_args(argv)
    except (ValueError, StopIteration) as exc:
        print(f"Failed to parse argument: {exc}", file=sys.stderr)
        return 1
    if (args.after_cursor or args.cursor) and cursor_seqnum(args.after_cursor or args.cursor or "") is None:
        print("Failed to seek to cursor: Invalid argument", file=sys.stderr)  # journalctl 252's answer
        return 1
    path = journal_path(Path(root))
    if (args.follow or args.kernel) and not args.merge:
        args.boot = current_boot(Path(root))
    match = matcher(args)
    target = cursor_seqnum(args.after_cursor or args.cursor or "") if (args.after_cursor or args.cursor) else None
    if target is not None:
        entries, offset = read_backwards(path, lambda es: bool(es) and int(es[0].get("__SEQNUM", "0")) <= target)
    elif (args.lines is not None or args.follow) and args.since is None and not args.reverse and not args.no_tail:
        want = args.lines if args.lines is not None else 10
        entries, offset = read_backwards(path, lambda es: sum(1 for e in es if match(e)) >= want)
    else:
        entries, offset = read_entries(path)
    shown = select_start([e for e in entries if match(e)], args)
    if args.reverse:
        shown.reverse()
    out = _Out()
    last = None
    for entry in shown:
        out.write(render(entry, args))
        last = entry
    if not args.follow:
        if not shown and not args.quiet and not args.output.startswith("json") and args.output != "cat":
            out.write("-- No entries --")
        if args.show_cursor and last is not None:
            out.write(f"-- cursor: {last['__CURSOR']}")
        if args.cursor_file and last is not None:  # written on a normal exit only (as journalctl 252)
            with open(args.cursor_file, "w") as fh:
                fh.write(last["__CURSOR"])
        return 0
    while True:
        time.sleep(POLL)
        new, offset = read_entries(path, offset)
        for entry in new:
            if match(entry):
                out.write(render(entry, args))
        if not new and out.closed():
            return 0
