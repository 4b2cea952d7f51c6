#!/usr/bin/env bash
# null.sh: does the null engine outrun NGINX here? Rerunnable with `make bench-null`.
#
# Starts three servers of the same 2 KB object (the origin's media playlist,
# /stream/index.m3u8) on 127.0.0.1, all pinned to one CPU: hlsbench's Go
# net/http origin (no first-byte delay, no pacing), `hlsbench serve-null`
# (the null engine, its copy taken from that origin at start) and nginx with
# one worker (a copy of the same bytes on disk). Then, at each rate of RATES,
# it runs `hlsbench load` open loop against each in turn, pinned to another
# CPU, and prints the rate carried, TTFB p99, the generator's CPU, the
# server's CPU (nginx's worker) and whether the pass was valid, with the exact
# command. Only one server is loaded at a
# time; the other two wait idle in epoll or accept.
#
# A pass that carried less than its rate, or is invalid because of the
# generator's own lateness, says what ran out: when null and nginx both stop
# at the same rate with the generator's CPU near 1 s per second, the
# generator is the ceiling, not them.
#
# Needs nginx, taskset, timeout, curl, go and python3.
# RATES (default "10000 20000 30000 40000 60000"), DURATION (seconds, default
# 3), CONNS (default 50) and REPEAT (passes per server and rate, interleaved,
# default 3) change the runs. The summary gives, per server and rate, the
# median of its passes: the rate carried and the server's CPU-ms per 1000
# requests answered.
#
# Then, when wrk is installed, the ceiling any generator could show here:
# wrk's closed loop (one thread, CONNS connections, pinned where hlsbench
# was) against null and nginx in turn, REPEAT times each, with the requests
# each carried and the server's CPU per 1000 requests split into user (the
# server's own code) and system (the kernel's TCP on loopback, which no
# server can do without). When the server's core is busy and most of its
# time is the kernel's, null cannot stand far above nginx on this host,
# however cheap the generator.
set -euo pipefail

die() {
	echo "bench-null: $*" >&2
	exit 1
}

here=${BASH_SOURCE[0]%/*}
[[ $here == "${BASH_SOURCE[0]}" ]] && here=.
repo=$(cd "$here/../../.." && pwd)

missing=()
nginx_bin=$(command -v nginx || true)
[[ -z $nginx_bin && -x /usr/sbin/nginx ]] && nginx_bin=/usr/sbin/nginx
[[ -n $nginx_bin ]] || missing+=("nginx (Debian: apt-get install nginx-light)")
for t in taskset timeout curl go python3; do
	command -v "$t" >/dev/null || missing+=("$t")
done
if ((${#missing[@]})); then
	printf 'bench-null: missing: %s\n' "${missing[@]}" >&2
	exit 1
fi

rates=(${RATES:-10000 20000 30000 40000 60000})
dur=${DURATION:-3}
conns=${CONNS:-50}
repeat=${REPEAT:-3}
# A run that does not stop by itself is killed this long after its duration.
grace=30

tmp=$(mktemp -d "${TMPDIR:-/tmp}/hlsbench-bench-null.XXXXXX")
pids=()

# stop PID ends one process this script started: TERM, then KILL.
stop() {
	local pid=$1
	kill -0 "$pid" 2>/dev/null || return 0
	kill -TERM "$pid" 2>/dev/null || true
	for _ in $(seq 50); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
}

cleanup() {
	local rc=$?
	for pid in "${pids[@]}"; do
		stop "$pid"
	done
	rm -rf "$tmp"
	exit "$rc"
}
trap cleanup EXIT
trap 'echo "bench-null: interrupted" >&2; exit 130' INT
trap 'echo "bench-null: terminated" >&2; exit 143' TERM

show() {
	printf '  $'
	printf ' %q' "$@"
	printf '\n'
}

# free_port prints a loopback port nobody listens on now.
free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# wait_url URL waits up to 15 s for URL to answer 200.
wait_url() {
	for _ in $(seq 150); do
		curl -fsS -o /dev/null "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	die "$1 did not answer within 15 s"
}

# cpus_allowed prints the CPUs this process may run on, one a line.
cpus_allowed() {
	local list part
	list=$(taskset -pc $$ | sed 's/.*: *//')
	IFS=, read -ra parts <<<"$list"
	for part in "${parts[@]}"; do
		if [[ $part == *-* ]]; then
			seq "${part%-*}" "${part#*-}"
		else
			echo "$part"
		fi
	done
}

mapfile -t cpus < <(cpus_allowed)
if ((${#cpus[@]} >= 2)); then
	server_core=${cpus[0]} load_core=${cpus[1]}
	server_pin=(taskset -c "$server_core")
	load_pin=(taskset -c "$load_core")
	echo "== servers on CPU $server_core, hlsbench load on CPU $load_core"
else
	server_pin=() load_pin=()
	echo "== UNPINNED: only ${#cpus[@]} CPU; servers and generator share it" >&2
fi

echo "== build"
bin=$tmp/hlsbench
(cd "$repo" && go build -o "$bin" ./cmd/hlsbench) || die "go build ./cmd/hlsbench failed"
echo "  hlsbench built from $(cd "$repo" && git describe --always --dirty 2>/dev/null || echo "an unknown commit")"

path=/stream/index.m3u8

echo "== servers"
origin_port=$(free_port)
ctl_port=$(free_port)
cmd=("${server_pin[@]}" "$bin" origin --listen "127.0.0.1:$origin_port" --control "127.0.0.1:$ctl_port"
	--first-byte-delay 0 --transfer-rate 0)
show "${cmd[@]}"
setsid "${cmd[@]}" >"$tmp/origin.log" 2>&1 &
pids+=($!)
wait_url "http://127.0.0.1:$origin_port$path"

null_port=$(free_port)
cmd=("$bin" serve-null --listen "127.0.0.1:$null_port" --origin "http://127.0.0.1:$origin_port" --threads 1)
[[ -n ${server_core:-} ]] && cmd+=(--cpus "$server_core")
show "${cmd[@]}"
setsid "${cmd[@]}" >"$tmp/null.log" 2>&1 &
pids+=($!)
wait_url "http://127.0.0.1:$null_port/_hlsbench/ready"

www=$tmp/www
mkdir -p "$www/stream"
curl -fsS -o "$www$path" "http://127.0.0.1:$origin_port$path"
chmod 0755 "$tmp" "$www" "$www/stream"
chmod 0644 "$www$path"
nginx_port=$(free_port)
cat >"$tmp/nginx.conf" <<EOF
worker_processes 1;
daemon off;
pid $tmp/nginx.pid;
error_log $tmp/nginx-error.log warn;
events { worker_connections 1024; }
http {
    access_log off;
    client_body_temp_path $tmp/nginx-client_body;
    keepalive_requests 1000000;
    server {
        listen 127.0.0.1:$nginx_port reuseport;
        root $www;
        default_type application/vnd.apple.mpegurl;
    }
}
EOF
cmd=("${server_pin[@]}" "$nginx_bin" -c "$tmp/nginx.conf" -e "$tmp/nginx-error.log")
show "${cmd[@]}"
setsid "${cmd[@]}" >"$tmp/nginx.log" 2>&1 &
pids+=($!)
wait_url "http://127.0.0.1:$nginx_port$path"

# The process whose CPU is each server's: nginx's one worker.
nginx_worker=$(cat "/proc/${pids[2]}/task/${pids[2]}/children" 2>/dev/null | awk '{ print $1 }')
[[ -n $nginx_worker ]] || die "nginx's worker not found under its master ${pids[2]}"
declare -A spid=([origin]=${pids[0]} [null]=${pids[1]} [nginx]=$nginx_worker)

# proc_cpu PID prints the CPU seconds (user+system) PID has used so far.
proc_cpu() {
	awk -v t="$(getconf CLK_TCK)" '{ sub(/.*\) /, ""); printf "%.3f", ($12 + $13) / t }' "/proc/$1/stat" 2>/dev/null || echo 0
}

declare -A url=([null]="http://127.0.0.1:$null_port$path" [nginx]="http://127.0.0.1:$nginx_port$path"
	[origin]="http://127.0.0.1:$origin_port$path")

echo "== open loop, ${dur} s per pass, $conns connections, 2048-byte answers"
printf '%-7s %8s %10s %10s %10s %10s %8s  %s\n' server offered carried "p99 TTFB" "gen CPU-s" "srv CPU-s" valid "why not"
for rate in "${rates[@]}"; do
	for rep in $(seq "$repeat"); do
	for srv in null nginx origin; do
		cmd=(timeout --kill-after=5 $((dur + grace)) "${load_pin[@]}" "$bin" load --rate "$rate"
			--duration "${dur}s" --connections "$conns" --json "${url[$srv]}")
		echo "  \$ ${cmd[*]}" >>"$tmp/commands"
		rc=0
		c0=$(proc_cpu "${spid[$srv]}")
		"${cmd[@]}" >"$tmp/out.json" 2>"$tmp/err" || rc=$?
		c1=$(proc_cpu "${spid[$srv]}")
		case $rc in
		0 | 3) ;;
		124 | 137) die "hlsbench load did not stop within $((dur + grace)) s" ;;
		*)
			cat "$tmp/err" >&2
			die "hlsbench load exited $rc"
			;;
		esac
		python3 - "$tmp/out.json" "$srv" "$rate" "$c0" "$c1" "$tmp/summary" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
cpu = float(sys.argv[5]) - float(sys.argv[4])
with open(sys.argv[6], "a") as f:
    print(sys.argv[2], sys.argv[3], d["carried_rps"], 1e6 * cpu / max(d["ok"], 1), d["valid"], file=f)
p99 = d["ttfb"]["p99_ms"]
why = "; ".join(d.get("invalid_reasons") or [])
if d["errors"]:
    why = f"{d['errors']} errors; " + why
print(f"{sys.argv[2]:<7} {float(sys.argv[3]):8.0f} {d['carried_rps']:10.0f} "
      f"{'—' if p99 is None else f'{p99:.3f} ms':>10} {d['cpu_seconds']:10.2f} {float(sys.argv[5]) - float(sys.argv[4]):10.2f} "
      f"{str(d['valid']).lower():>8}  {why[:160]}")
PY
	done
	done
done
echo "== summary: median of $repeat passes per server and rate"
python3 - "$tmp/summary" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    srv, rate, carried, cpu, valid = line.split()
    r = rows.setdefault((srv, int(rate)), {"carried": [], "cpu": [], "valid": 0})
    r["carried"].append(float(carried)); r["cpu"].append(float(cpu)); r["valid"] += valid == "True"
print(f"{'server':<7} {'offered':>8} {'carried':>10} {'CPU-ms/1000 req':>16} {'valid passes':>13}")
for (srv, rate), r in sorted(rows.items(), key=lambda kv: (kv[0][1], ["null", "nginx", "origin"].index(kv[0][0]))):
    print(f"{srv:<7} {rate:8d} {statistics.median(r['carried']):10.0f} {statistics.median(r['cpu']):16.1f} "
          f"{r['valid']:>6} of {len(r['carried'])}")
PY
if wrk_bin=$(command -v wrk); then
	echo "== closed loop with wrk: ${dur} s, $conns connections, one thread on CPU ${load_core:-any}"
	# proc_ticks PID prints the user and system clock ticks PID has used.
	proc_ticks() {
		awk '{ sub(/.*\) /, ""); print $12, $13 }' "/proc/$1/stat"
	}
	printf '%-7s %10s %10s %12s %12s %10s\n' server carried "srv busy" "user ms/1k" "sys ms/1k" "wrk errors"
	for rep in $(seq "$repeat"); do
		for srv in null nginx; do
			cmd=(timeout --kill-after=5 $((dur + grace)) "${load_pin[@]}" "$wrk_bin" -t1 -c"$conns" -d"${dur}s" "${url[$srv]}")
			echo "  \$ ${cmd[*]}" >>"$tmp/commands"
			read -r u0 s0 < <(proc_ticks "${spid[$srv]}")
			"${cmd[@]}" >"$tmp/wrk.out" 2>&1 || die "wrk exited $? against $srv: $(tail -3 "$tmp/wrk.out")"
			read -r u1 s1 < <(proc_ticks "${spid[$srv]}")
			n=$(awk '/requests in/ { print $1; exit }' "$tmp/wrk.out")
			[[ -n $n && $n -gt 0 ]] || die "wrk against $srv: no request count in its output: $(cat "$tmp/wrk.out")"
			errs=$(awk '/Socket errors|Non-2xx/' "$tmp/wrk.out" | tr -s ' ' | paste -sd ';' -)
			python3 - "$srv" "$n" "$dur" "$u0" "$s0" "$u1" "$s1" "$(getconf CLK_TCK)" "${errs:-none}" "$tmp/wrk-summary" <<'PY'
import sys
srv, n, dur, u0, s0, u1, s1, tck, errs, out = sys.argv[1:]
n, dur, tck = int(n), float(dur), float(tck)
user, sys_ = (int(u1) - int(u0)) / tck, (int(s1) - int(s0)) / tck
print(f"{srv:<7} {n / dur:10.0f} {100 * (user + sys_) / dur:9.0f}% {1e6 * user / n:12.2f} {1e6 * sys_ / n:12.2f} {errs:>10}")
with open(out, "a") as f:
    print(srv, n / dur, 1e6 * user / n, 1e6 * sys_ / n, file=f)
PY
		done
	done
	python3 - "$tmp/wrk-summary" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    srv, rps, user, sys_ = line.split()
    r = rows.setdefault(srv, ([], [], []))
    r[0].append(float(rps)); r[1].append(float(user)); r[2].append(float(sys_))
m = {srv: [statistics.median(v) for v in r] for srv, r in rows.items()}
for srv, (rps, user, sys_) in m.items():
    print(f"  {srv}: median {rps:.0f} rps carried; {user:.2f} + {sys_:.2f} CPU-ms per 1000 (user + system), "
          f"system {100 * sys_ / (user + sys_):.0f} %")
if "null" in m and "nginx" in m:
    print(f"  null / nginx, wrk's closed loop: {m['null'][0] / m['nginx'][0]:.2f}x the requests carried; "
          f"a server with no user time at all would carry at most "
          f"{(m['nginx'][1] + m['nginx'][2]) / m['null'][2]:.2f}x nginx's (nginx's CPU per request over null's system share)")
PY
else
	echo "== wrk not found: the closed-loop ceiling is skipped (Debian: apt-get install wrk)"
fi
echo "== commands"
awk '!seen[$0]++' "$tmp/commands"
