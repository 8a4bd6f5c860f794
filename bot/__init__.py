"""The composition root and the chat transports: settings, CLI, Slack, console.

The only package that reads settings and builds clients; nothing happens at import time.
"""
