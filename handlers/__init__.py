"""Where chat ends: the chat contract, the command grammar, the router and the command handlers.

Transports (Slack, console, tests) turn what a person typed into a `ChatMessage`, call
`handlers.router.dispatch`, and render the `Reply`; later messages go through an `Outbox`.
No Slack, asyncssh or SQLAlchemy here.
"""
