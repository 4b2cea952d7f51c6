#!/usr/bin/env bash
# bench.sh: the load generator's benchmark from issue 2 ("Must show"), rerunnable
# with `make bench-loadgen`.
#
# Starts its own nginx (one worker, a 2 KB and a 4 MiB file) on 127.0.0.1, pins
# it to one CPU and every load tool to another, and prints, each with the exact
# command it ran:
#   a) hlsbench open loop, 5000 rps, 10 s, 50 connections, against the targets;
#   b) h2load at the same rate on the same file, for comparison;
#   c) closed loop, requests per generator CPU-second, median of 5 runs, for
#      hlsbench and wrk, and their ratio;
#   d) 500 rps of checksummed 4 MiB bodies for 10 s and the generator's max RSS;
#   e) hlsbench and vegeta open loop side by side, same target, rate, pinning:
#      p50/p99/max and CPU of each (issue 24: hlsbench 7.95 ms p99, vegeta 3.57);
#   f) the stall test: the same open loop while nginx's worker is stopped
#      (SIGSTOP) for 50 ms mid-run, for both tools: every request due in the
#      stall must count the stall (max near 50 ms, from the intended send),
#      and hlsbench says whether its own loop sent late after it.
#
# Needs nginx, taskset, setsid, timeout, GNU time (/usr/bin/time), go, and
# python3 or jq. Each run also reports the user CPU that was neither the tool's
# nor nginx's, and marks a run NOISY when other work shared the machine.
# wrk and h2load are optional; without them their figures are skipped. vegeta
# v12.13.0 is taken from PATH, or installed with `go install` into a temp GOBIN
# (VEGETA=0 skips it).
# BENCH_QUICK=1 shortens every run for a smoke test; the targets then no longer
# mean what the issue says (CPU is scaled to the shorter run, the rest is as is).
set -euo pipefail

die() {
	echo "bench-loadgen: $*" >&2
	exit 1
}

here=${BASH_SOURCE[0]%/*}
[[ $here == "${BASH_SOURCE[0]}" ]] && here=.
repo=$(cd "$here/../../.." && pwd)

# --- what is needed -------------------------------------------------------

missing=()
nginx_bin=$(command -v nginx || true)
[[ -z $nginx_bin && -x /usr/sbin/nginx ]] && nginx_bin=/usr/sbin/nginx
[[ -n $nginx_bin ]] || missing+=("nginx (Debian: apt-get install nginx-light)")
command -v taskset >/dev/null || missing+=("taskset (Debian: apt-get install util-linux)")
command -v setsid >/dev/null || missing+=("setsid (Debian: apt-get install util-linux)")
command -v timeout >/dev/null || missing+=("timeout (Debian: apt-get install coreutils)")
[[ -x /usr/bin/time ]] || missing+=("GNU time at /usr/bin/time (Debian: apt-get install time)")
command -v go >/dev/null || missing+=("go (to build hlsbench)")
if command -v python3 >/dev/null; then
	json_tool=python3
elif command -v jq >/dev/null; then
	json_tool=jq
else
	missing+=("python3 or jq (to read hlsbench --json)")
fi
if ((${#missing[@]})); then
	printf 'bench-loadgen: missing: %s\n' "${missing[@]}" >&2
	exit 1
fi
wrk_bin=$(command -v wrk || true)
h2load_bin=$(command -v h2load || true)
vegeta_bin=
vegeta_version=v12.13.0

quick=${BENCH_QUICK:-0}
if [[ $quick == 1 ]]; then
	open_dur=2 closed_dur=1 closed_runs=3 big_dur=2
else
	open_dur=10 closed_dur=5 closed_runs=5 big_dur=10
fi
open_rate=5000 open_conns=50
big_rate=500 big_conns=20
big_size=$((4 * 1024 * 1024))
small_size=2048

# A run that does not stop by itself is killed this long after its duration.
grace=60

# --- temp dir and teardown ------------------------------------------------

tmp=$(mktemp -d "${TMPDIR:-/tmp}/hlsbench-bench.XXXXXX")
nginx_pid=

cleanup() {
	local rc=$?
	if [[ -n ${stall_pid:-} ]]; then
		kill "$stall_pid" 2>/dev/null || true
		[[ -n ${nginx_worker:-} ]] && kill -CONT "$nginx_worker" 2>/dev/null || true
	fi
	if [[ -n $nginx_pid ]] && kill -0 "$nginx_pid" 2>/dev/null; then
		# TERM is nginx's fast shutdown: the master stops its worker, then exits.
		kill -TERM "$nginx_pid" 2>/dev/null || true
		for _ in $(seq 50); do
			kill -0 "$nginx_pid" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL "$nginx_pid" 2>/dev/null || true
		wait "$nginx_pid" 2>/dev/null || true
	fi
	rm -rf "$tmp"
	exit "$rc"
}
trap cleanup EXIT
trap 'echo "bench-loadgen: interrupted" >&2; exit 130' INT
trap 'echo "bench-loadgen: terminated" >&2; exit 143' TERM

# --- helpers --------------------------------------------------------------

# show prints a command line the way a shell would take it back.
show() {
	printf '  $'
	printf ' %q' "$@"
	printf '\n'
}

# json FILE KEY... prints each dotted KEY of the JSON object in FILE, one a line.
json() {
	local f=$1
	shift
	if [[ $json_tool == python3 ]]; then
		python3 - "$f" "$@" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
for key in sys.argv[2:]:
    v = doc
    for part in key.split("."):
        v = v.get(part) if isinstance(v, dict) else None
    if isinstance(v, bool):
        print("true" if v else "false")
    elif v is None:
        print("null")
    elif isinstance(v, (dict, list)):
        print(json.dumps(v, separators=(",", ":"), sort_keys=True))
    else:
        print(v)
PY
	else
		local k
		for k in "$@"; do
			jq -c --arg k "$k" 'getpath($k | split(".")) | if type == "string" then . else tojson end' -r "$f"
		done
	fi
}

# calc EXPR evaluates a floating-point awk expression.
calc() {
	awk "BEGIN { printf \"%s\", $1 }"
}

# verdict VALUE OP LIMIT prints PASS or MISS.
verdict() {
	if awk -v v="$1" -v l="$3" "BEGIN { exit !(v $2 l) }"; then echo PASS; else echo MISS; fi
}

# median of the arguments.
median() {
	printf '%s\n' "$@" | sort -g | awk '{ a[NR] = $1 } END { if (NR % 2) print a[(NR + 1) / 2]; else printf "%.0f\n", (a[NR / 2] + a[NR / 2 + 1]) / 2 }'
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

# busy_pct prints how much of all CPUs was in use over the next second (%).
busy_pct() {
	local a b
	a=$(awk '/^cpu / { print $2 + $3 + $4 + $7 + $8, $5 + $6 }' /proc/stat)
	sleep 1
	b=$(awk '/^cpu / { print $2 + $3 + $4 + $7 + $8, $5 + $6 }' /proc/stat)
	awk -v a="$a" -v b="$b" 'BEGIN { split(a, x, " "); split(b, y, " "); u = y[1] - x[1]; i = y[2] - x[2];
		printf "%.0f", (u + i > 0) ? 100 * u / (u + i) : 0 }'
}

# proc_cpu PID prints the CPU seconds (user+system) PID has used so far.
proc_cpu() {
	local tck
	tck=$(getconf CLK_TCK)
	# Fields after the ")" of the command name: utime is the 12th, stime the 13th.
	awk -v t="$tck" '{ sub(/.*\) /, ""); printf "%.3f", ($12 + $13) / t }' "/proc/$1/stat" 2>/dev/null || echo 0
}

# user_cpu PID prints the user CPU seconds PID has used so far.
user_cpu() {
	awk -v t="$(getconf CLK_TCK)" '{ sub(/.*\) /, ""); printf "%.3f", $12 / t }' "/proc/$1/stat" 2>/dev/null || echo 0
}

# all_user_cpu prints the user CPU seconds every process on the machine has used.
all_user_cpu() {
	awk -v t="$(getconf CLK_TCK)" '/^cpu / { printf "%.3f", ($2 + $3) / t }' /proc/stat
}

# nginx_cpu prints the CPU seconds nginx's worker has used so far (0 if unknown).
nginx_cpu() {
	if [[ -n ${nginx_worker:-} ]]; then proc_cpu "$nginx_worker"; else echo 0; fi
}

# run_timed LABEL CMD... runs CMD under the load pin and GNU time, bounded by
# timeout (run_limit seconds); stdout goes to $tmp/LABEL.out, stderr to
# $tmp/LABEL.err, "user sys maxrss_kib" to $tmp/LABEL.time and the other work
# on the machine to $tmp/LABEL.others. Returns CMD's exit code.
run_timed() {
	local label=$1
	shift
	local cmd=(timeout --kill-after=5 "$run_limit" "${load_pin[@]}" /usr/bin/time -o "$tmp/$label.time" -f '%U %S %M' "$@")
	show "${cmd[@]}"
	local rc=0 u0 u1 n0=0 n1=0 w0 w1
	u0=$(all_user_cpu)
	[[ -n ${nginx_worker:-} ]] && n0=$(user_cpu "$nginx_worker")
	w0=$(date +%s.%N)
	"${cmd[@]}" >"$tmp/$label.out" 2>"$tmp/$label.err" || rc=$?
	w1=$(date +%s.%N)
	[[ -n ${nginx_worker:-} ]] && n1=$(user_cpu "$nginx_worker")
	u1=$(all_user_cpu)
	# GNU time notes a non-zero exit on its first line; the figures are on the last.
	tail -n 1 "$tmp/$label.time" >"$tmp/$label.time.last" 2>/dev/null || true
	mv -f "$tmp/$label.time.last" "$tmp/$label.time" 2>/dev/null || true
	# User CPU that was neither the tool's nor nginx's: other work on the machine.
	awk -v u="$(calc "$u1 - $u0")" -v n="$(calc "$n1 - $n0")" -v w="$(calc "$w1 - $w0")" \
		'{ o = u - n - $1; if (o < 0) o = 0; printf "%.2f %.0f\n", o, (w > 0 ? 100 * o / w : 0) }' \
		"$tmp/$label.time" >"$tmp/$label.others" 2>/dev/null || echo "0 0" >"$tmp/$label.others"
	return "$rc"
}

# check_rc TOOL LABEL RC stops the script, with TOOL's stderr, unless RC is 0.
check_rc() {
	local tool=$1 label=$2 rc=$3
	case $rc in
	0) return 0 ;;
	124 | 137) die "$tool did not stop within ${run_limit}s and was killed by timeout" ;;
	130) die "$tool was interrupted" ;;
	esac
	echo "bench-loadgen: $tool exited $rc; its output:" >&2
	cat "$tmp/$label.err" "$tmp/$label.out" >&2 || true
	exit 1
}

# others LABEL sets note to the other work during run_timed's run, flagged
# when it was more than 5% of a CPU, and counts the flagged runs in noisy_runs.
# (It sets a variable rather than printing: a $(...) subshell would lose the count.)
noisy_runs=0
note=
others() {
	local o pct
	read -r o pct <"$tmp/$1.others"
	if ((pct > 5)); then
		noisy_runs=$((noisy_runs + 1))
		note="NOISY: other work $o CPU-s ($pct% of a CPU)"
	else
		note="other work $o CPU-s"
	fi
}

# time_cpu LABEL prints user+sys CPU seconds from run_timed's record.
time_cpu() {
	awk '{ printf "%.3f", $1 + $2 }' "$tmp/$1.time"
}

# time_rss_mib LABEL prints max RSS in MiB from run_timed's record.
time_rss_mib() {
	awk '{ printf "%.1f", $3 / 1024 }' "$tmp/$1.time"
}

# hlsbench LABEL ARGS... runs hlsbench load ARGS --json and fails loudly if it
# did not finish (exit code other than 0, or 3: finished but invalid, which the
# JSON's valid and invalid_reasons say and the figures below report).
hlsbench() {
	local label=$1
	shift
	local rc=0
	run_timed "$label" "$bin" load "$@" --json || rc=$?
	((rc == 3)) && rc=0
	check_rc hlsbench "$label" "$rc"
	if [[ -s $tmp/$label.err ]]; then
		sed 's/^/  hlsbench: /' "$tmp/$label.err"
	fi
}

# --- pinning --------------------------------------------------------------

mapfile -t cpus < <(cpus_allowed)
if ((${#cpus[@]} >= 2)); then
	nginx_core=${cpus[0]} load_core=${cpus[1]}
	nginx_pin=(taskset -c "$nginx_core")
	load_pin=(taskset -c "$load_core")
	pin_note="nginx on CPU $nginx_core, load tools on CPU $load_core"
else
	nginx_pin=() load_pin=()
	pin_note="UNPINNED: only ${#cpus[@]} CPU available (${cpus[*]}); nginx and the load tools share it, figures are not comparable with the issue's"
	echo "bench-loadgen: fewer than 2 CPUs, running unpinned" >&2
fi

# --- build ----------------------------------------------------------------

echo "== build"
bin=$tmp/hlsbench
(cd "$repo" && go build -o "$bin" ./cmd/hlsbench) || die "go build ./cmd/hlsbench failed"
(cd "$repo" && go build -o "$tmp/mkobject" ./workloads/loadgen/bench/mkobject) ||
	die "go build ./workloads/loadgen/bench/mkobject failed"
echo "  hlsbench built from $(cd "$repo" && git describe --always --dirty 2>/dev/null || echo "an unknown commit")"
if [[ ${VEGETA:-1} != 0 ]]; then
	if command -v vegeta >/dev/null && [[ $(vegeta -version 2>&1) == *"${vegeta_version#v}"* ]]; then
		vegeta_bin=$(command -v vegeta)
	else
		vcmd=(env GOBIN="$tmp/gobin" go install "github.com/tsenart/vegeta/v12@$vegeta_version")
		show "${vcmd[@]}"
		if "${vcmd[@]}" >"$tmp/vegeta-install.log" 2>&1; then
			vegeta_bin=$tmp/gobin/vegeta
		else
			sed 's/^/  go install: /' "$tmp/vegeta-install.log" | tail -5
			echo "  vegeta $vegeta_version could not be installed: e) and f) run hlsbench alone"
		fi
	fi
	[[ -n $vegeta_bin ]] && echo "  vegeta: $vegeta_bin ($("$vegeta_bin" -version 2>&1 | head -1))"
fi

# --- objects and nginx ----------------------------------------------------

www=$tmp/www
mkdir -p "$www"
"$tmp/mkobject" -seed 2 "$www/obj-2k.bin" "$small_size" >/dev/null
crc=$("$tmp/mkobject" -seed 4 "$www/obj-4m.bin" "$big_size")
[[ $crc =~ ^[0-9a-f]{8}$ ]] || die "mkobject printed $crc, want 8 lowercase hex digits"
# nginx's worker may run as another user (nobody) when started as root.
chmod 0755 "$tmp" "$www"
chmod 0644 "$www"/*.bin

# Temp paths only for the modules this nginx was built with (nginx-light may
# lack some, and an unknown directive stops it).
nginx_v=$("$nginx_bin" -V 2>&1)
temp_paths=""
for m in client_body proxy fastcgi uwsgi scgi; do
	flag=$m
	[[ $m == client_body ]] && flag=client-body
	if [[ $nginx_v == *"--http-$flag-temp-path"* || $m == client_body ]]; then
		temp_paths+="    ${m}_temp_path $tmp/nginx-$m;"$'\n'
	fi
done

write_conf() {
	cat >"$tmp/nginx.conf" <<EOF
worker_processes 1;
daemon off;
pid $tmp/nginx.pid;
error_log $tmp/nginx-error.log warn;
events {
    worker_connections 1024;
}
http {
    access_log off;
    sendfile on;
    keepalive_requests 1000000;
    keepalive_timeout 75s;
    default_type application/octet-stream;
$temp_paths
    server {
        listen 127.0.0.1:$1;
        root $www;
        location = /obj-2k.bin { }
        location = /obj-4m.bin {
            add_header X-Hlsbench-Crc32c $crc;
        }
        # Same bytes, wrong checksum: proves the generator really checks.
        location = /obj-4m-badsum.bin {
            alias $www/obj-4m.bin;
            add_header X-Hlsbench-Crc32c 00000000;
        }
    }
}
EOF
}

free_port() {
	if command -v python3 >/dev/null; then
		python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
	else
		echo $((20000 + RANDOM % 40000))
	fi
}

# head_req PORT PATH: HEAD PATH over bash's /dev/tcp; prints the response head.
head_req() {
	local port=$1 path=$2 line
	exec 3<>"/dev/tcp/127.0.0.1/$port" || return 1
	printf 'HEAD %s HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' "$path" >&3
	while IFS= read -r -t 5 line <&3; do
		line=${line%$'\r'}
		[[ -z $line ]] && break
		echo "$line"
	done
	exec 3<&-
}

echo "== nginx"
port=
for attempt in 1 2 3 4 5; do
	p=$(free_port)
	write_conf "$p"
	"$nginx_bin" -t -q -p "$tmp" -e "$tmp/nginx-error.log" -c "$tmp/nginx.conf" ||
		die "nginx -t rejected $tmp/nginx.conf"
	# setsid: a Ctrl-C reaches the load tool, not nginx, and teardown stops nginx.
	nginx_cmd=(setsid "${nginx_pin[@]}" "$nginx_bin" -p "$tmp" -e "$tmp/nginx-error.log" -c "$tmp/nginx.conf")
	"${nginx_cmd[@]}" </dev/null >"$tmp/nginx.out" 2>&1 &
	nginx_pid=$!
	for _ in $(seq 100); do
		kill -0 "$nginx_pid" 2>/dev/null || break
		if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			port=$p
			break
		fi
		sleep 0.05
	done
	[[ -n $port ]] && break
	if kill -0 "$nginx_pid" 2>/dev/null; then
		die "nginx (pid $nginx_pid) did not listen on 127.0.0.1:$p within 5 s"
	fi
	wait "$nginx_pid" 2>/dev/null || true
	nginx_pid=
	if ! grep -q 'Address already in use' "$tmp/nginx-error.log" "$tmp/nginx.out" 2>/dev/null; then
		cat "$tmp/nginx-error.log" "$tmp/nginx.out" >&2 2>/dev/null || true
		die "nginx did not start"
	fi
	echo "  port $p was taken, trying another (attempt $attempt)"
done
[[ -n $port ]] || die "nginx found no free port in 5 attempts"
show "${nginx_cmd[@]}"
# setsid and taskset exec nginx, so $! is nginx's master itself.
[[ $(cat "/proc/$nginx_pid/comm" 2>/dev/null) == nginx ]] ||
	die "pid $nginx_pid is not nginx but $(cat "/proc/$nginx_pid/comm" 2>/dev/null)"
echo "  pid $nginx_pid, $("$nginx_bin" -v 2>&1 | sed 's/^nginx version: //'), listening on 127.0.0.1:$port"
echo "  config: worker_processes 1, sendfile on, access_log off, keepalive_requests 1000000"

url_small=http://127.0.0.1:$port/obj-2k.bin
url_big=http://127.0.0.1:$port/obj-4m.bin
url_bad=http://127.0.0.1:$port/obj-4m-badsum.bin

head_big=$(head_req "$port" /obj-4m.bin)
grep -qi "^X-Hlsbench-Crc32c: $crc\$" <<<"$head_big" ||
	die "nginx did not send X-Hlsbench-Crc32c: $crc on /obj-4m.bin; it sent: $head_big"
grep -qi "^Content-Length: $big_size\$" <<<"$head_big" ||
	die "nginx did not send Content-Length: $big_size on /obj-4m.bin"
head_small=$(head_req "$port" /obj-2k.bin)
grep -qi "^Content-Length: $small_size\$" <<<"$head_small" ||
	die "nginx did not send Content-Length: $small_size on /obj-2k.bin"

nginx_worker=$(cat "/proc/$nginx_pid/task/$nginx_pid/children" 2>/dev/null | awk '{ print $1 }')

echo
echo "== machine"
echo "  $(uname -sr), $(nproc) CPUs allowed ($(echo "${cpus[*]}" | tr ' ' ,)), $(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)"
echo "  $pin_note"
echo "  objects: 2 KB $url_small; 4 MiB $url_big (CRC-32C $crc)"
busy=$(busy_pct)
if ((busy > 10)); then
	echo "  WARNING: the machine was ${busy}% busy before the runs (load average $(cut -d' ' -f1-3 /proc/loadavg));"
	echo "           other work shares these CPUs and every figure below is suspect"
else
	echo "  idle before the runs: ${busy}% of all CPUs in use"
fi
[[ $quick == 1 ]] && echo "  BENCH_QUICK=1: shortened runs, a smoke test; figures are not the issue's"

# --- a) open loop ---------------------------------------------------------

run_limit=$((open_dur + grace))
open_reqs=$((open_rate * open_dur))
cpu_target=$(calc "0.40 * $open_dur / 10")

echo
echo "== a) hlsbench open loop: $open_rate rps, ${open_dur}s, $open_conns connections, 2 KB"
w0=$(nginx_cpu)
hlsbench open "$url_small" --rate "$open_rate" --duration "${open_dur}s" --connections "$open_conns"
mapfile -t f < <(json "$tmp/open.out" requests errors cpu_seconds schedule_lag.p50_ms schedule_lag.p99_ms \
	schedule_lag.max_ms ttfb_uncorrected.p50_ms ttfb.p50_ms ttfb.p99_ms valid invalid_reasons achieved_rps \
	pool_limited sockets_opened shard_cpu_share elapsed_s)
w1=$(nginx_cpu)
requests=${f[0]} errors=${f[1]} cpu=${f[2]}
lag50=$(calc "${f[3]} * 1000") lag99=$(calc "${f[4]} * 1000") lagmax=$(calc "${f[5]} * 1000")
uttfb50=${f[6]} ttfb50=${f[7]} ttfb99=${f[8]}
valid=${f[9]} reasons=${f[10]}
open_cpu_proc=$(time_cpu open)
printf '  requests %s, errors %s, achieved %.1f rps, sockets opened %s, pool_limited %s, shard CPU share %s\n' \
	"$requests" "$errors" "${f[11]}" "${f[13]}" "${f[12]}" "${f[14]}"
printf '  %-40s %12s %12s  %s\n' figure measured target verdict
printf '  %-40s %12.3f %12s  %s\n' "generator CPU, cpu_seconds (s)" "$cpu" "<= $cpu_target" "$(verdict "$cpu" '<=' "$cpu_target")"
printf '  %-40s %12.1f %12s  %s\n' "schedule lag p50 (us)" "$lag50" "<= 50" "$(verdict "$lag50" '<=' 50)"
printf '  %-40s %12.1f %12s  %s\n' "schedule lag p99 (us)" "$lag99" "<= 300" "$(verdict "$lag99" '<=' 300)"
printf '  %-40s %12.3f %12s  %s\n' "TTFB uncorrected p50 (ms)" "$uttfb50" "<= 0.10" "$(verdict "$uttfb50" '<=' 0.10)"
printf '  %-40s %12.3f %12s  %s\n' "TTFB corrected p99 (ms)" "$ttfb99" "<= 0.70" "$(verdict "$ttfb99" '<=' 0.70)"
printf '  %-40s %12s %12s  %s\n' "valid" "$valid" "true" "$([[ $valid == true ]] && echo PASS || echo MISS)"
printf '  %-40s %12s %12s  %s\n' "requests" "$requests" "$open_reqs" "$( ((requests >= open_reqs * 99 / 100)) && echo PASS || echo MISS)"
[[ $valid == true ]] || echo "  invalid_reasons: $reasons"
echo "  also: schedule lag max $lagmax us; TTFB corrected p50 $ttfb50 ms;"
echo "        whole process CPU under /usr/bin/time (user+sys, incl. start-up) $open_cpu_proc s;"
others open
printf '        nginx worker CPU %.3f s (%.0f%% of CPU %s); %s\n' "$(calc "$w1 - $w0")" "$(calc "($w1 - $w0) / ${f[15]} * 100")" \
	"${nginx_core:-?}" "$note"

# --- b) h2load at the same rate -------------------------------------------

echo
echo "== b) peers at $open_rate rps on the same 2 KB file"
if [[ -n $h2load_bin ]]; then
	h2_rps=$((open_rate / open_conns))
	echo "  h2load: $open_conns clients x $h2_rps rps = $open_rate rps; it sends each client's requests in bursts"
	rc=0
	w0=$(nginx_cpu)
	run_timed h2load "$h2load_bin" --h1 -c "$open_conns" -n "$open_reqs" --rps "$h2_rps" "$url_small" || rc=$?
	check_rc h2load h2load "$rc"
	w1=$(nginx_cpu)
	h2_cpu=$(time_cpu h2load)
	grep -E '^(finished in|requests:|status codes:)' "$tmp/h2load.out" | sed 's/^/  h2load: /'
	grep -E '^time for request:' "$tmp/h2load.out" | head -1 |
		awk '{ print "  h2load: time for request (from its own send): min " $4 ", max " $5 ", mean " $6 ", sd " $7 }'
	printf '  h2load CPU (user+sys, /usr/bin/time): %s s   vs hlsbench cpu_seconds %s s (process %s s)\n' \
		"$h2_cpu" "$cpu" "$open_cpu_proc"
	others h2load
	printf '  nginx worker CPU during h2load: %.3f s; %s\n' "$(calc "$w1 - $w0")" "$note"
	echo "  (the issue: h2load measured 0.48 s here, vegeta 2.10 s)"
else
	echo "  h2load not found: skipped (Debian: apt-get install nghttp2-client)"
fi
if [[ -n $wrk_bin ]]; then
	echo "  wrk: closed loop only, see c)"
else
	echo "  wrk not found: skipped in c) (Debian: apt-get install wrk)"
fi

# --- c) closed loop -------------------------------------------------------

run_limit=$((closed_dur + grace))
echo
echo "== c) closed loop: ${closed_dur}s, $open_conns connections, 2 KB, $closed_runs runs each"
echo "  hlsbench (requests / cpu_seconds; the process figure under /usr/bin/time is shown beside it)"
hl_rates=()
hl_proc_rates=()
for i in $(seq "$closed_runs"); do
	w0=$(nginx_cpu)
	hlsbench "closed$i" "$url_small" --rate 0 --duration "${closed_dur}s" --connections "$open_conns"
	w1=$(nginx_cpu)
	mapfile -t f < <(json "$tmp/closed$i.out" requests cpu_seconds errors valid achieved_rps)
	pcpu=$(time_cpu "closed$i")
	r=$(calc "int(${f[0]} / ${f[1]} + 0.5)")
	pr=$(calc "int(${f[0]} / $pcpu + 0.5)")
	hl_rates+=("$r")
	hl_proc_rates+=("$pr")
	others "closed$i"
	printf '    run %d: %8d requests / %.3f s = %7d req/CPU-s  (process %.3f s: %7d)  %8.0f rps, errors %s, valid %s, nginx CPU %.0f%%; %s\n' \
		"$i" "${f[0]}" "${f[1]}" "$r" "$pcpu" "$pr" "${f[4]}" "${f[2]}" "${f[3]}" "$(calc "($w1 - $w0) / $closed_dur * 100")" \
		"$note"
done
hl_med=$(median "${hl_rates[@]}")
hl_proc_med=$(median "${hl_proc_rates[@]}")
printf '  hlsbench median: %d req/CPU-s (target >= 170000: %s); by process CPU %d\n' \
	"$hl_med" "$(verdict "$hl_med" '>=' 170000)" "$hl_proc_med"

if [[ -n $wrk_bin ]]; then
	echo "  wrk (requests / user+sys CPU under /usr/bin/time)"
	wrk_rates=()
	for i in $(seq "$closed_runs"); do
		w0=$(nginx_cpu)
		rc=0
		run_timed "wrk$i" "$wrk_bin" -t1 -c"$open_conns" -d"${closed_dur}s" "$url_small" || rc=$?
		check_rc wrk "wrk$i" "$rc"
		w1=$(nginx_cpu)
		n=$(awk '/requests in/ { print $1; exit }' "$tmp/wrk$i.out")
		[[ -n $n ]] || { cat "$tmp/wrk$i.out" >&2; die "could not read the request count from wrk's output"; }
		errs=$(awk '/Socket errors|Non-2xx/' "$tmp/wrk$i.out" | tr -s ' ' | paste -sd ';' -)
		pcpu=$(time_cpu "wrk$i")
		r=$(calc "int($n / $pcpu + 0.5)")
		wrk_rates+=("$r")
		others "wrk$i"
		printf '    run %d: %8d requests / %.3f s = %7d req/CPU-s  %8.0f rps, nginx CPU %.0f%%%s; %s\n' \
			"$i" "$n" "$pcpu" "$r" "$(calc "$n / $closed_dur")" "$(calc "($w1 - $w0) / $closed_dur * 100")" \
			"${errs:+, $errs}" "$note"
	done
	wrk_med=$(median "${wrk_rates[@]}")
	printf '  wrk median: %d req/CPU-s (the issue: wrk 4.1 measured 161000 here)\n' "$wrk_med"
	printf '  ratio hlsbench / wrk: %.2f (by cpu_seconds), %.2f (both by process CPU)\n' \
		"$(calc "$hl_med / $wrk_med")" "$(calc "$hl_proc_med / $wrk_med")"
fi

# --- d) 4 MiB -------------------------------------------------------------

run_limit=$((big_dur + grace))
big_reqs=$((big_rate * big_dur))
echo
echo "== d) 4 MiB bodies: $big_rate rps, ${big_dur}s, $big_conns connections, every body checksummed"
echo "  first, a control: the same bytes with a wrong X-Hlsbench-Crc32c must fail as checksum"
hlsbench badsum "$url_bad" --rate 0 --requests 10 --duration 5s --connections 2
bad=$(json "$tmp/badsum.out" errors_by_kind.checksum)
[[ $bad == 10 ]] || die "the control expected 10 checksum errors, got $bad (errors_by_kind: $(json "$tmp/badsum.out" errors_by_kind))"
echo "  control: 10 of 10 counted as checksum errors, good"

w0=$(nginx_cpu)
hlsbench big "$url_big" --rate "$big_rate" --duration "${big_dur}s" --connections "$big_conns"
mapfile -t f < <(json "$tmp/big.out" errors errors_by_kind requests body_bytes achieved_rps valid invalid_reasons \
	ttfb.p99_ms total.p50_ms total.p99_ms cpu_seconds pool_limited elapsed_s schedule_lag.p99_ms connection_wait.p99_ms)
w1=$(nginx_cpu)
rss=$(time_rss_mib big)
body=${f[3]}
printf '  %-40s %14s %14s  %s\n' figure measured target verdict
printf '  %-40s %14s %14s  %s\n' "errors" "${f[0]}" "0" "$( [[ ${f[0]} == 0 ]] && echo PASS || echo MISS)"
printf '  %-40s %14s\n' "errors_by_kind" "${f[1]}"
printf '  %-40s %14s %14s  %s\n' "requests" "${f[2]}" "$big_reqs" "$( ((f[2] >= big_reqs * 99 / 100)) && echo PASS || echo MISS)"
printf '  %-40s %14s %14s  %s\n' "body bytes" "$body" "$((f[2] * big_size))" \
	"$( [[ $body == "$((f[2] * big_size))" ]] && echo PASS || echo MISS)"
printf '  %-40s %14.1f %14s  %s\n' "achieved rps" "${f[4]}" ">= $(calc "$big_rate * 0.99")" "$(verdict "${f[4]}" '>=' "$(calc "$big_rate * 0.99")")"
printf '  %-40s %14s %14s  %s\n' "valid" "${f[5]}" "true" "$([[ ${f[5]} == true ]] && echo PASS || echo MISS)"
printf '  %-40s %14.1f %14s  %s\n' "generator max RSS (MiB, /usr/bin/time)" "$rss" "< 200" "$(verdict "$rss" '<' 200)"
[[ ${f[5]} == true ]] || echo "  invalid_reasons: ${f[6]}"
printf '  also: elapsed %.2f s, %.2f GB/s of body, TTFB p99 %.1f ms, total p50 %.1f ms / p99 %.1f ms,\n' \
	"${f[12]}" "$(calc "$body / ${f[12]} / 1e9")" "${f[7]}" "${f[8]}" "${f[9]}"
printf '        schedule lag p99 %.3f ms, connection wait p99 %.1f ms, pool_limited %s,\n' "${f[13]}" "${f[14]}" "${f[11]}"
printf '        cpu_seconds %.3f (%.0f%% of its CPU), nginx worker CPU %.3f s (%.0f%%)\n' \
	"${f[10]}" "$(calc "${f[10]} / ${f[12]} * 100")" "$(calc "$w1 - $w0")" "$(calc "($w1 - $w0) / ${f[12]} * 100")"
others big
echo "        $note"

# --- e) and f) hlsbench beside vegeta, and the stall test -----------------

# vegeta_run LABEL [STALL]: vegeta's open loop at the rate, 50 connections
# at most, on the 2 KB file; vegeta counts each request from its scheduled
# tick (it starts more workers rather than send late).
vegeta_run() {
	local label=$1
	echo "GET $url_small" >"$tmp/vegeta.targets"
	local rc=0
	run_timed "$label" "$vegeta_bin" attack -targets="$tmp/vegeta.targets" -rate="$open_rate" -duration="${open_dur}s" \
		-connections="$open_conns" -max-connections="$open_conns" -keepalive=true -timeout=30s -output="$tmp/$label.bin" || rc=$?
	check_rc vegeta "$label" "$rc"
	"$vegeta_bin" report -type=json "$tmp/$label.bin" >"$tmp/$label.json" 2>"$tmp/$label.report.err" ||
		die "vegeta report failed: $(cat "$tmp/$label.report.err")"
}

# stall_at SECONDS: stop nginx's worker for 50 ms SECONDS from now, in the
# background (stall_pid); teardown continues it if the run is cut short.
stall_at() {
	[[ -n ${nginx_worker:-} ]] || die "the stall test needs nginx's worker pid"
	(
		sleep "$1"
		kill -STOP "$nginx_worker"
		sleep 0.05
		kill -CONT "$nginx_worker"
	) &
	stall_pid=$!
}

# compare LABEL_H LABEL_V TITLE prints hlsbench's and vegeta's figures of one
# run each, in ms, with their CPU.
compare() {
	local h=$1 v=$2
	mapfile -t hf < <(json "$tmp/$h.out" ttfb.p50_ms ttfb.p99_ms ttfb.max_ms total.p50_ms total.p99_ms total.max_ms \
		cpu_seconds requests errors valid schedule_lag.p99_ms schedule_lag.max_ms invalid_reasons)
	printf '  %-10s %9s %9s %9s %9s %9s %9s %8s %8s %7s\n' tool "ttfb p50" "ttfb p99" "ttfb max" "tot p50" "tot p99" "tot max" "CPU s" requests errors
	printf '  %-10s %9.3f %9.3f %9.3f %9.3f %9.3f %9.3f %8.3f %8s %7s\n' hlsbench "${hf[0]}" "${hf[1]}" "${hf[2]}" "${hf[3]}" "${hf[4]}" \
		"${hf[5]}" "$(time_cpu "$h")" "${hf[7]}" "${hf[8]}"
	if [[ -n $v ]]; then
		mapfile -t vf < <(json "$tmp/$v.json" latencies.50th latencies.99th latencies.max requests success)
		local verr
		verr=$(calc "int(${vf[3]} * (1 - ${vf[4]}) + 0.5)")
		printf '  %-10s %9s %9s %9s %9.3f %9.3f %9.3f %8.3f %8s %7s\n' vegeta - - - "$(calc "${vf[0]} / 1e6")" \
			"$(calc "${vf[1]} / 1e6")" "$(calc "${vf[2]} / 1e6")" "$(time_cpu "$v")" "${vf[3]}" "$verr"
	fi
	echo "  (vegeta measures only the whole answer, from its scheduled tick: compare it with hlsbench's total, corrected)"
	echo "  hlsbench: valid ${hf[9]}, schedule lag p99 ${hf[10]} ms, max ${hf[11]} ms; CPU is /usr/bin/time's user+sys of each process"
	[[ ${hf[9]} == true ]] || echo "  hlsbench invalid_reasons: ${hf[12]}"
	others "$h"
	echo "  hlsbench run: $note"
	if [[ -n $v ]]; then
		others "$v"
		echo "  vegeta run: $note"
	fi
}

run_limit=$((open_dur + grace))
echo
echo "== e) open loop side by side: $open_rate rps, ${open_dur}s, $open_conns connections, 2 KB, load on CPU ${load_core:-?}"
hlsbench side "$url_small" --rate "$open_rate" --duration "${open_dur}s" --connections "$open_conns"
if [[ -n $vegeta_bin ]]; then
	vegeta_run vside
	compare side vside
else
	compare side ""
fi

echo
half=$(calc "$open_dur / 2")
echo "== f) stall test: nginx's worker stopped (SIGSTOP) for 50 ms at ${half}s into each run"
echo "  at $open_rate rps about $((open_rate / 20)) requests fall due in the stall: a tool that counts from the"
echo "  intended send shows them waiting up to 50 ms (max near 50 ms, p99 moved little at 0.5 % of requests);"
echo "  one that sends late after it (a loop busy reading the burst) says so in its schedule lag"
stall_at "$half"
hlsbench hstall "$url_small" --rate "$open_rate" --duration "${open_dur}s" --connections "$open_conns"
wait "$stall_pid" 2>/dev/null || true
stall_pid=
if [[ -n $vegeta_bin ]]; then
	stall_at "$half"
	vegeta_run vstall
	wait "$stall_pid" 2>/dev/null || true
	stall_pid=
	compare hstall vstall
else
	compare hstall ""
fi

echo
if ((noisy_runs)); then
	echo "  WARNING: $noisy_runs runs shared the machine with other work (marked NOISY); rerun on an idle machine"
fi
echo "  machine busy while this was written: $(busy_pct)% (load average $(cut -d' ' -f1-3 /proc/loadavg))"
echo "== done (nginx error log: $(awk 'END { print NR }' "$tmp/nginx-error.log" 2>/dev/null) lines)"
