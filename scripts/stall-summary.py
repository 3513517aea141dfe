#!/usr/bin/env python3
"""Where a kernel's warps stall, per SASS opcode: the summary of ncu's source page.

    ncu --section WarpStateStats --section SourceCounters -k regex:lutmm_gemm -c 1 -o R lutmm verify --shape M,N,K
    ncu --import R.ncu-rep --page source --csv --print-source sass > R.csv
    scripts/stall-summary.py R.csv [--top 14]

Prints the share of the warp-state samples each stall reason holds over the whole kernel, then per opcode (the
mnemonic without its modifiers and predicate: LDS, PRMT, HMMA, ...) its share of the samples, how often it ran, and
its three largest stall reasons. `scripts/gpu-check profile` runs all three steps (docs/NOTES.md v1.23: 33% of the
decode kernel's samples sit on its table loads).
"""
import argparse
import collections
import csv
import re
import sys

from sass_opcode import opcode  # (this folder is on sys.path: the script's own)


def number(text):
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return 0.0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv", help="ncu --page source --csv --print-source sass output")
    ap.add_argument("--top", type=int, default=14, help="opcodes to list (most samples first)")
    a = ap.parse_args()
    rows = list(csv.reader(open(a.csv, newline="")))
    samples_column = "Warp Stall Sampling (All Samples)"
    header_at = next((i for i, r in enumerate(rows) if "Source" in r and samples_column in r), None)
    if header_at is None:
        sys.exit(f"stall-summary: {a.csv} has no source-page header (Source, Warp Stall Sampling (All Samples))")
    header = rows[header_at]
    col = {name: i for i, name in enumerate(header)}
    reasons = [h for h in header if h.startswith("stall_") and "(Not Issued)" not in h]
    total = 0.0
    by_reason = collections.Counter()
    samples = collections.Counter()
    executed = collections.Counter()
    reasons_of = collections.defaultdict(collections.Counter)
    for r in rows[header_at + 1:]:
        if len(r) < len(header):
            continue
        op = opcode(r[col["Source"]])
        s = number(r[col[samples_column]])
        total += s
        samples[op] += s
        if "Instructions Executed" in col:
            executed[op] += number(r[col["Instructions Executed"]])
        for reason in reasons:
            v = number(r[col[reason]])
            by_reason[reason] += v
            reasons_of[op][reason] += v
    if total == 0:
        sys.exit(f"stall-summary: {a.csv} holds no warp-state samples (profile with --section WarpStateStats "
                 "--section SourceCounters)")
    print(f"{total:.0f} samples")
    for reason, v in by_reason.most_common(10):
        if v > 0:
            print(f"  {reason[6:]:<18} {100 * v / total:5.1f}%")
    print("by opcode: share of samples, instructions executed, largest stall reasons")
    for op, v in samples.most_common(a.top):
        top = ", ".join(f"{k[6:]} {100 * x / v:.0f}%" for k, x in reasons_of[op].most_common(3) if v > 0 and x > 0)
        print(f"  {op:<8} {100 * v / total:5.1f}%  {executed[op]:12.0f}  {top}")


if __name__ == "__main__":
    main()
