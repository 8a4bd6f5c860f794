#!/usr/bin/env bash
# Make sure the local PostgreSQL answers on 127.0.0.1:5432; start the machine's cluster if it does not.
# Prints the URL the tests use. Exits 0 without a URL when no PostgreSQL is installed here.
set -u
ready() { pg_isready -h 127.0.0.1 -p 5432 -q 2>/dev/null; }
if ! command -v pg_isready >/dev/null 2>&1; then
  echo "ensure-postgres: PostgreSQL client tools not installed; PostgreSQL tests will be skipped" >&2
  exit 0
fi
if ! ready; then
  if ls /etc/postgresql >/dev/null 2>&1; then
    for v in $(ls /etc/postgresql); do
      pg_ctlcluster --skip-systemctl-redirect "$v" main start >&2 2>&1 || true
    done
  fi
  for _ in $(seq 1 30); do ready && break; sleep 1; done
fi
if ready; then
  echo "postgresql+asyncpg://postgres@127.0.0.1:5432/test"
else
  echo "ensure-postgres: PostgreSQL is not answering on 127.0.0.1:5432" >&2
  exit 1
fi
