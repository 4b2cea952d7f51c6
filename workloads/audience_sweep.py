#!/usr/bin/env python3
"""Prints `make audience-sweep`'s figures from its run files: per audience
size, the measured passes' requests a second, body MB a second, the
generator's schedule lag p99 and busy share, and each test's valid passes.
A figure no pass recorded prints as n/a, never 0."""
import glob
import json
import re
import sys

UNITS = {"h": 3600, "m": 60, "s": 1, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}


def seconds(d):
    """Seconds in a Go duration string such as "1m30s" or "500ms"."""
    parts = re.findall(r"([0-9.]+)(h|ms|us|µs|ns|m|s)", d)
    if not parts or "".join(n + u for n, u in parts) != d:
        raise ValueError("not a Go duration: %r" % d)
    return sum(float(n) * UNITS[u] for n, u in parts)


def mean(v, fmt):
    return fmt % (sum(v) / len(v)) if v else "n/a"


def most(v, fmt):
    return fmt % max(v) if v else "n/a"


def main(out, sizes):
    print("%7s %8s %8s %10s %6s  %s" % ("viewers", "rps", "MB/s", "lag p99", "busy", "valid passes per test"))
    for n in sizes:
        files = glob.glob("%s/%s/*.json" % (out, n))
        if not files:
            print("%7s  no run file" % n)
            continue
        run = json.load(open(files[0]))
        aud = run["workloads"][0]["conditions"]["audience"]
        secs = seconds(aud["watch"]) + seconds(aud["ramp"])
        rps, mbs, lag, busy, valid = [], [], [], [], []
        for res in run["results"]:
            valid.append("%s %d/%d" % (res["test"], res["valid_passes"], res["passes"]))
            if res["test"] != "hit-ratio":
                continue
            for p in res["pass_records"]:
                if p.get("warmup"):
                    continue
                ev = p.get("evidence") or {}
                if p.get("achieved_rps"):
                    rps.append(p["achieved_rps"])
                if (ev.get("audience") or {}).get("body_bytes") is not None:
                    mbs.append(ev["audience"]["body_bytes"] / secs / 1e6)
                if (ev.get("generator") or {}).get("schedule_lag_p99_ms") is not None:
                    lag.append(ev["generator"]["schedule_lag_p99_ms"])
                if (ev.get("other_cpu") or {}).get("generator_busy_share") is not None:
                    busy.append(ev["other_cpu"]["generator_busy_share"])
        print("%7s %8s %8s %10s %6s  %s" % (n, mean(rps, "%.0f"), mean(mbs, "%.1f"), most(lag, "%.2f ms"),
                                             most(busy, "%.2f"), ", ".join(valid)))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
