#!/usr/bin/env python3
"""Prints `make audience-sweep`'s figures from its run files: per audience
size, the measured passes' requests a second, body MB a second, the
generator's schedule lag p99 and busy share, and each test's valid passes."""
import glob
import json
import sys


def main(out, sizes):
    print("%7s %8s %8s %10s %6s  %s" % ("viewers", "rps", "MB/s", "lag p99", "busy", "valid passes per test"))
    for n in sizes:
        files = glob.glob("%s/%s/*.json" % (out, n))
        if not files:
            print("%7s  no run file" % n)
            continue
        run = json.load(open(files[0]))
        rps, mbs, lag, busy, valid = [], [], [], [], []
        for res in run["results"]:
            valid.append("%s %d/%d" % (res["test"], res["valid_passes"], res["passes"]))
            if res["test"] != "hit-ratio":
                continue
            for p in res["pass_records"]:
                if p.get("warmup"):
                    continue
                ev = p["evidence"]
                rps.append(p["achieved_rps"])
                aud = run["workloads"][0]["conditions"]["audience"]
                secs = float(aud["watch"].rstrip("s")) + float(aud["ramp"].rstrip("s"))
                mbs.append(ev["audience"]["body_bytes"] / secs / 1e6)
                lag.append(ev.get("generator", {}).get("schedule_lag_p99_ms") or 0)
                busy.append((ev.get("other_cpu") or {}).get("generator_busy_share") or 0)
        mean = lambda v: sum(v) / len(v) if v else 0
        print("%7s %8.0f %8.1f %7.2f ms %6.2f  %s" % (n, mean(rps), mean(mbs), max(lag or [0]), max(busy or [0]), ", ".join(valid)))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
