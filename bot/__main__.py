"""`python -m bot` is the `pitcrew` command."""

from bot.cli import main

main()
