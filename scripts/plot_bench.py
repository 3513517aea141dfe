#!/usr/bin/env python3
"""Plots a `lutmm bench` CSV: speedup over dense cuBLAS per shape (log scale) and % of the physical floor.

usage: plot_bench.py BENCH.csv OUT.png [TITLE]

Shapes are in CSV order, labelled "MxNxK"; skipped shapes are left out, shapes with a wrong result are
drawn in red. Exit codes: 0 written, 2 bad usage or unreadable CSV, 3 matplotlib missing.
"""
import csv
import math
import sys


def load_rows(path):
    with open(path, newline="") as f:
        rows = [r for r in csv.DictReader(f)]
    timed = [r for r in rows if r.get("lutmm_us") and r.get("cublas_us")]
    return rows, timed


def main(argv):
    if len(argv) not in (3, 4):
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    csv_path, png_path = argv[1], argv[2]
    title = argv[3] if len(argv) == 4 else "lutmm vs cuBLAS"
    try:
        rows, timed = load_rows(csv_path)
    except (OSError, csv.Error) as e:
        print(f"plot_bench.py: cannot read {csv_path}: {e}", file=sys.stderr)
        return 2
    if not timed:
        print(f"plot_bench.py: {csv_path} has no timed shape ({len(rows)} rows)", file=sys.stderr)
        return 2
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("plot_bench.py: matplotlib is not installed (pip install matplotlib)", file=sys.stderr)
        return 3

    labels = [f"{r['m']}x{r['n']}x{r['k']}" for r in timed]
    speedup = [float(r["speedup"]) for r in timed]
    floor = [float(r["pct_floor"]) for r in timed]
    ok = [r["status"] == "ok" for r in timed]
    colors = ["tab:blue" if good else "tab:red" for good in ok]
    xs = range(len(timed))

    width = max(8.0, 0.22 * len(timed) + 2.0)
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(width, 8.0), sharex=True)

    # Bars grow from 1x: up where lutmm is faster, down where cuBLAS is.
    top.bar(xs, [s - 1.0 for s in speedup], bottom=1.0, color=colors)
    top.set_yscale("log")
    top.axhline(1.0, color="black", linewidth=0.8)
    good = [s for s, g in zip(speedup, ok) if g]
    if good:
        geo = math.exp(sum(math.log(s) for s in good) / len(good))
        top.axhline(geo, color="tab:green", linestyle="--", linewidth=0.8, label=f"geometric mean {geo:.2f}x")
        top.legend(loc="upper right")
    top.set_ylabel("speedup over cuBLAS (log)")
    top.set_title(title)
    top.grid(axis="y", which="both", alpha=0.3)

    bottom.bar(xs, floor, color=colors)
    bottom.axhline(100.0, color="black", linewidth=0.8)
    bottom.set_ylabel("% of floor")
    bottom.set_ylim(0, max(105.0, max(floor) * 1.05))
    bottom.grid(axis="y", alpha=0.3)
    bottom.set_xticks(list(xs))
    bottom.set_xticklabels(labels, rotation=90, fontsize=7)
    bottom.set_xlabel("shape M x N x K (red: wrong result)")

    fig.tight_layout()
    try:
        fig.savefig(png_path, dpi=120)
    except OSError as e:
        print(f"plot_bench.py: cannot write {png_path}: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
