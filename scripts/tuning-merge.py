#!/usr/bin/env python3
"""Merge a retuned database into the shipped one, key by key, where an A/B run says the new choice is faster.

    scripts/tuning-merge.py SHIPPED.json RETUNED.json AB.csv [--ratio 0.99] [--note TEXT] > MERGED.json

RETUNED.json is `lutmm tune --export` of the retune; AB.csv is `scripts/gpu-ab`'s ab.csv of the same shapes,
"base" run with SHIPPED's choices and "new" with RETUNED's, alternating in one device call. The tuner's own
times are single runs on one machine; the A/B's medians of both sides on the same machine are what decides.
A key takes RETUNED's entry where new / base < RATIO, and keeps SHIPPED's otherwise (a retune's pick that
is not clearly faster is noise: docs/NOTES.md). Keys as in docs/TUNING.md (bits, group, dtype, N, K, M bucket),
each A/B row's from its own columns (the benchmark's bits, group and dtype).
"""
import argparse
import csv
import json
import sys


def m_bucket(m):
    if m <= 16:
        return m
    b = 32
    while b < m:
        b *= 2
    return b


def key_of(e):
    return (e["gpu"], e["sm_count"], e["bits"], e["group_size"], e["dtype"], e["n"], e["k"], e["m_bucket"])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("shipped")
    ap.add_argument("retuned")
    ap.add_argument("ab_csv")
    ap.add_argument("--ratio", type=float, default=0.99)
    ap.add_argument("--note", default=None, help="the merged database's note, replacing SHIPPED's (which holds its history: repeat it)")
    a = ap.parse_args()
    shipped = json.load(open(a.shipped))
    retuned = json.load(open(a.retuned))
    new_by_key = {key_of(e): e for e in retuned["entries"] if e["gpu"] == shipped["gpu"]}
    if not new_by_key:
        sys.exit(f"tuning-merge: {a.retuned} has no entry for {shipped['gpu']}")
    gpu_entry = next(iter(new_by_key.values()))
    taken = 0
    entries = {key_of(e): e for e in shipped["entries"]}
    for row in csv.DictReader(open(a.ab_csv)):
        m, n, k = int(row["m"]), int(row["n"]), int(row["k"])
        if float(row["new_over_base"]) >= a.ratio:
            continue
        key = (gpu_entry["gpu"], gpu_entry["sm_count"], int(row["bits"]), int(row["group"]), row["dtype"], n, k,
               m_bucket(m))
        if key not in new_by_key:
            sys.exit(f"tuning-merge: {m}x{n}x{k} is faster in the A/B but {a.retuned} has no entry for its key")
        old = entries.get(key, {}).get("config", "(none)")
        entries[key] = new_by_key[key]
        taken += 1
        print(f"{m}x{n}x{k}: {old} -> {new_by_key[key]['config']} ({row['new_over_base']})", file=sys.stderr)
    order = [key_of(e) for e in shipped["entries"]]  # (the shipped file's order: small diffs)
    order += [k for k in entries if k not in set(order)]
    shipped["entries"] = [entries[k] for k in order]
    if a.note:
        shipped["note"] = a.note
    json.dump(shipped, sys.stdout, indent=2)
    sys.stdout.write("\n")
    print(f"tuning-merge: {taken} keys taken from {a.retuned}", file=sys.stderr)


if __name__ == "__main__":
    main()
