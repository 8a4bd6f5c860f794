"""Test doubles shared by the tests and the benchmarks: the fake Slack Web API, the known-truth streaming
server and its launcher, and the journal flooder. Not part of the product (the simulated GPU host, which
the demo uses, stays in `simhost/`)."""
