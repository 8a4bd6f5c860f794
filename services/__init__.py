"""The domain: hosts, units, experiments, benchmarks, journals, diagnosis, incidents, audit, storage.

Nothing here knows about chat: no Slack, no handlers, no bot. Imports flow bot -> handlers -> services.
"""
