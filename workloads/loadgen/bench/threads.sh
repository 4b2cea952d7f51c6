#!/usr/bin/env bash
# threads.sh: where a command's CPU goes, thread by thread.
#
#   threads.sh [-d DELAY] [-s SECONDS] -- COMMAND [ARGS...]
#
# Starts COMMAND, waits DELAY seconds (default 40: an engine's start and a
# warm-up), then reads /proc/PID/task/*/schedstat and status twice, SECONDS
# apart (default 30), and prints the busiest threads of COMMAND's own process
# (not its children): CPU share, run-queue wait, timeslices a second and
# voluntary and involuntary context switches a second. COMMAND's output goes to
# threads.out in the current directory; its exit code is this script's.
# Used to find the Go runtime's monitor (sysmon) on the generator's CPU: see
# workloads/loadgen/sys_linux.go. Linux only; needs python3.
set -euo pipefail

delay=40 secs=30
while getopts d:s: o; do
	case $o in
	d) delay=$OPTARG ;;
	s) secs=$OPTARG ;;
	*) echo "usage: threads.sh [-d DELAY] [-s SECONDS] -- COMMAND [ARGS...]" >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
if (($# == 0)); then
	echo "threads.sh: no COMMAND given (usage: threads.sh [-d DELAY] [-s SECONDS] -- COMMAND [ARGS...])" >&2
	exit 2
fi
[[ $delay =~ ^[0-9]+$ ]] || { echo "threads.sh: -d takes whole seconds, not $delay" >&2; exit 2; }
[[ $secs =~ ^[1-9][0-9]*$ ]] || { echo "threads.sh: -s takes whole seconds above 0, not $secs" >&2; exit 2; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$@" >threads.out 2>&1 &
pid=$!
trap 'kill "$pid" 2>/dev/null; rm -rf "$tmp"' INT TERM

snap() {
	local t
	for t in /proc/"$pid"/task/*; do
		printf '%s %s %s\n' "${t##*/}" "$(cat "$t/schedstat" 2>/dev/null)" \
			"$(awk '/ctxt_switches/ {printf "%s ", $2}' "$t/status" 2>/dev/null)"
	done >"$1"
}

sleep "$delay"
if kill -0 "$pid" 2>/dev/null; then
	snap "$tmp/a"
	t0=$(date +%s.%N)
	sleep "$secs"
	snap "$tmp/b"
	t1=$(date +%s.%N)
	python3 - "$tmp/a" "$tmp/b" "$t0" "$t1" <<'PY'
import sys

def read(path):
    rows = {}
    for line in open(path):
        f = line.split()
        if len(f) >= 6:
            rows[f[0]] = [int(x) for x in f[1:6]]
    return rows

a, b = read(sys.argv[1]), read(sys.argv[2])
dt = float(sys.argv[4]) - float(sys.argv[3])
rows = sorted(((b[t][0] - a[t][0], t, [y - x for x, y in zip(a[t], b[t])]) for t in b if t in a), reverse=True)
print("over %.1f s, the busiest threads:" % dt)
print("%8s %6s %10s %9s %7s %9s" % ("tid", "cpu", "wait ms", "slices/s", "vol/s", "invol/s"))
for _, tid, d in rows[:8]:
    print("%8s %5.1f%% %10.0f %9.0f %7.0f %9.0f" % (tid, d[0] / dt / 1e7, d[1] / 1e6, d[2] / dt, d[3] / dt, d[4] / dt))
PY
else
	echo "threads.sh: the command ended within $delay s: nothing sampled (lower -d)" >&2
fi
wait "$pid"
