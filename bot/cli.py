"""The `pitcrew` command line: one click group; each command's docstring is its help line.

Commands that live in their own module are registered in `_register()`; imports inside
command bodies keep `pitcrew --help` fast and keep import time free of side effects.
"""

from __future__ import annotations

import click


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--config", "config_file", type=click.Path(dir_okay=False), envvar="PITCREW_CONFIG",
              help="TOML settings file (also PITCREW_CONFIG).")
@click.pass_context
def main(ctx: click.Context, config_file: str | None) -> None:
    """pitcrew: tune and watch LLM inference servers from chat."""
    ctx.obj = {"config_file": config_file}


def _register() -> None:
    """Attach the commands that live in other modules (one line each)."""


_register()
