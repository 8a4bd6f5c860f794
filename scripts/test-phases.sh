#!/usr/bin/env bash
# `make test`: the suite in four steps, the first with the wall-clock scenarios beside it.
#
#   phase 1    pytest -n WORKERS -m "not serial and not wallclock and not alone and not sweep"
#              CPU-bound (both cores busy for ~5 minutes), run with `chrt --idle`: its processes (and every host, server and bot they start) get a core only when
#              nothing else wants one
#   beside it  pytest -n WALLCLOCK -m wallclock   real-time tests that mostly wait (whole-bot scenarios on lease TTLs of
#              seconds, Slack's 429 bursts; at nice 19 the tunes, whose answers compare real-time throughput, and the
#              overlap scenario's twenty concurrent tries), at
#              normal priority: they
#              mostly wait, and when one wakes it takes a core from a phase-1 process at once (the kernel preempts a
#              SCHED_IDLE task for any other on wakeup)
#   alone      pytest -m alone   the measurement that loads both cores itself (200 slash commands/s), by itself: beside
#              the serial phase it bent the measurement next to it
#   phase 2    pytest -n SERIAL -m serial   the tests that assert a figure (time, rates against a ground truth), alone
#              once these are done: SCHED_IDLE is not enough for them (caches and loopback softirqs are shared whatever
#              the priority)
#   sweeps     pytest -n SWEEP -m sweep   the sweeps, whose plateau call rides on ~2.4 % between two measured steps,
#              by themselves: beside the measurements (even at nice 10) a step read slow enough about one run in eight
#
# tests/support/xdist_groups.py says which test is which. The `wallclock` report is printed after phase 1's (two
# progress lines interleaved would say nothing). Exits non-zero when any part fails; Ctrl-C stops them all.
#
# usage: scripts/test-phases.sh PYTEST WORKERS WALLCLOCK_WORKERS SERIAL_WORKERS SWEEP_WORKERS [pytest args...]
set -u
pytest=$1 workers=$2 wallclock=$3 serial=$4 sweep=$5
shift 5
if command -v chrt >/dev/null 2>&1 && chrt --idle 0 true 2>/dev/null; then
  idle=(chrt --idle 0)
else  # no chrt (or SCHED_IDLE refused): the lowest niceness is the nearest thing
  idle=(nice -n 19)
fi
log=$(mktemp "${TMPDIR:-/tmp}/pitcrew-wallclock.XXXXXX")
# the freeze watchdog's dumps (tests/support/freeze_watch.py): printed at the end when a worker wrote any
PITCREW_FREEZE_DIR=$(mktemp -d "${TMPDIR:-/tmp}/pitcrew-freezes.XXXXXX")
export PITCREW_FREEZE_DIR
beside=""
stop() {
  [ -n "$beside" ] && kill -INT "$beside" 2>/dev/null
  wait
  rm -f "$log"
  rm -rf "$PITCREW_FREEZE_DIR"
  exit 130
}
trap stop INT TERM

"$pytest" -q -n "$wallclock" --dist loadgroup -m wallclock "$@" >"$log" 2>&1 &
beside=$!
phase1="not serial and not wallclock and not alone and not sweep"
echo "== phase 1 (-m \"$phase1\", $workers workers, ${idle[*]}), the wallclock scenarios beside it"
t0=$SECONDS
"${idle[@]}" "$pytest" -q -n "$workers" --dist loadgroup -m "$phase1" "$@"
rc1=$?
s1=$((SECONDS - t0))
wait "$beside"
rcw=$?
sw=$((SECONDS - t0))
beside=""
echo
echo "== the wallclock scenarios (-m wallclock, $wallclock workers, normal priority, beside phase 1)"
cat "$log"
rm -f "$log"
echo
echo "== the measurement that loads both cores (-m alone, by itself)"
t0=$SECONDS
"$pytest" -q -m alone "$@"
rca=$?
sa=$((SECONDS - t0))
echo
echo "== phase 2 (-m serial, $serial workers, alone)"
t0=$SECONDS
"$pytest" -q -n "$serial" --dist loadgroup -m serial "$@"
rc2=$?
s2=$((SECONDS - t0))
echo
echo "== the sweeps (-m sweep, $sweep workers, by themselves)"
t0=$SECONDS
"$pytest" -q -n "$sweep" --dist loadgroup -m sweep "$@"
rcs=$?
ss=$((SECONDS - t0))
if [ -n "$(find "$PITCREW_FREEZE_DIR" -name '*.txt' -size +0 2>/dev/null)" ]; then
  echo
  echo "== a test process ran no Python for 20 s (frozen, or starved of CPU): the stacks faulthandler wrote"
  for f in "$PITCREW_FREEZE_DIR"/*.txt; do [ -s "$f" ] && { echo "-- pid $(basename "$f" .txt)"; head -n 150 "$f"; }; done
fi
rm -rf "$PITCREW_FREEZE_DIR"
# each step's verdict with its wall time, pytest's start and collection included (the wallclock side's counts from
# phase 1's start: it ran beside it)
verdict() { { [ "$1" -eq 0 ] && echo -n passed || echo -n "FAILED (exit $1)"; } && echo " in $2 s"; }
echo
echo "phase 1: $(verdict $rc1 $s1); wallclock: $(verdict $rcw $sw); alone: $(verdict $rca $sa);" \
  "phase 2: $(verdict $rc2 $s2); sweeps: $(verdict $rcs $ss)"
[ "$rc1" -eq 0 ] && [ "$rcw" -eq 0 ] && [ "$rca" -eq 0 ] && [ "$rc2" -eq 0 ] && [ "$rcs" -eq 0 ]
