#!/usr/bin/env python3
"""Summarises the lines that kernels compiled with -DLUTMM_TIMELINE=1 print (device/lutmm/ptx/timeline.cuh).

  LUTMM_NVRTC_OPTIONS=-DLUTMM_TIMELINE=1 LUTMM_TUNE=off lutmm bench --shapes FILE --config NAME --replays 1 \
      > run.txt; scripts/timeline.py run.txt

For the first and the last block of each launch: the median SM cycles (and microseconds at --ghz) from block
entry to the dependency wait's end, the first k tile in shared memory, the main loop's end, the tile staged
for the epilogue, and exit; then the median launch period (globaltimer of consecutive launches' first blocks)
and the median lifetime of each block. Give it one shape's run (a run is split only where the family changes).

--trace FILE: the CSV of `lutmm bench --trace FILE` over kernels built with -DLUTMM_TIMELINE=3 (every block of
every launch, no printf: the benchmark's back-to-back launches as they run): per launch, its span and the blocks'
phases, and between consecutive launches of a shape, when the next one's blocks entered and passed their
dependency wait against the last exit of this one (negative: before it, PDL's overlap); for Stream-K blocks whose run
covers parts of two tiles, the switch between them (the first item's main loop end to its tile staged, to its epilogue
done, to the next item's first tile); the blocks' main loop end by when they entered (2 us or more before the previous
launch's end, or later); for split-K grids, which split's block exits last and how long after its own tile was staged
and its tile's other splits exited. Cycles
become time at the SM clock measured from the records unless --ghz says otherwise.

--blocks: for one launch of a kernel built with -DLUTMM_TIMELINE=2 (every block prints; e.g. `lutmm verify
--shape M,N,K`), how the blocks spread: quantiles of entry, exit, first tile, main loop and epilogue, and the
main loop by how many of the launch's blocks shared the block's SM.
"""
import argparse
import collections
import csv
import statistics
import sys

MARKS = ["dep wait", "1st tile", "main loop", "staged", "exit"]


def quantiles(values):
    v = sorted(values)
    return " ".join(f"{name} {v[int(q * (len(v) - 1))]:6.2f}" for name, q in
                    (("min", 0), ("p10", 0.1), ("med", 0.5), ("p90", 0.9), ("max", 1)))


def blocks_report(recs, ghz):
    """Every block of one launch (-DLUTMM_TIMELINE=2)."""
    t0 = min(r["entry"] for r in recs)
    per_sm = collections.Counter(r["sm"] for r in recs)
    us = lambda cyc: cyc / ghz / 1000
    print(f"{len(recs)} blocks on {len(per_sm)} SMs; SMs by blocks they ran: "
          + ", ".join(f"{n}: {c}" for n, c in sorted(collections.Counter(per_sm.values()).items())))
    print("  entry after the first (us)   ", quantiles([(r["entry"] - t0) / 1000 for r in recs]))
    print("  exit after the first entry   ", quantiles([(r["exit"] - t0) / 1000 for r in recs]))
    print("  first tile after entry (us)  ", quantiles([us(r["cyc"][1]) for r in recs]))
    print("  main loop (us)               ", quantiles([us(r["cyc"][2] - r["cyc"][1]) for r in recs]))
    print("  main loop end to exit (us)   ", quantiles([us(r["cyc"][4] - r["cyc"][2]) for r in recs]))
    for n in sorted(set(per_sm.values())):
        loops = [us(r["cyc"][2] - r["cyc"][1]) for r in recs if per_sm[r["sm"]] == n]
        print(f"  main loop on SMs that ran {n} block(s): median {statistics.median(loops):.2f} us ({len(loops)} blocks)")


def measured_ghz(lives):
    """The SM clock the blocks ran at, from (globaltimer ns from entry to exit, SM cycles over the same) per block:
    the median over blocks that lived at least 2 us (globaltimer ticks every 32 ns on the H200). Under a decode
    GEMM's load the H200's SMs ran at ~1.78 GHz, not the 1.98 of its boost clock (docs/NOTES.md v1.30): a fixed 1.98
    made the phases measured in cycles ~10% short and mixed them wrongly with the globaltimer marks. 1.98 where no
    block lived long enough."""
    rates = [cycles / ns for ns, cycles in lives if ns >= 2000 and cycles > 0]
    ghz = statistics.median(rates) if rates else 1.98
    print(f"SM clock {ghz:.3f} GHz (cycles over globaltimer, median over the blocks)")
    return ghz


def mark_ns(r, mark, ghz):
    """A block's mark (a cycle count from its entry, e.g. "cyc_main_loop") as globaltimer ns (cycles / GHz = ns)."""
    return r["entry_ns"] + r[mark] / ghz


def trace_report(path, ghz):
    """Every block of every launch (-DLUTMM_TIMELINE=3, `lutmm bench --trace`)."""
    recs = []
    for row in csv.DictReader(open(path)):
        recs.append({k: int(v) for k, v in row.items()})
    if not recs:
        print("no records (were the kernels built with -DLUTMM_TIMELINE=3?)")
        return 1
    recs.sort(key=lambda r: r["entry_ns"])
    # A launch's blocks all enter before the next launch's first (it launches once all of them have started), so
    # the entry-ordered records cut into launches of grid_blocks each.
    launches, i = [], 0
    while i < len(recs):
        n = recs[i]["grid_blocks"]
        launches.append(recs[i:i + n])
        i += n
    if ghz is None:
        ghz = measured_ghz((r["exit_ns"] - r["entry_ns"], r["cyc_exit"]) for r in recs)
    us = lambda cyc: cyc / ghz / 1000
    # runs of consecutive launches of one grid, at most 50 us apart (one shape's graph replays)
    runs, cur = [], [launches[0]]
    for a, b in zip(launches, launches[1:]):
        gap = b[0]["entry_ns"] - max(r["exit_ns"] for r in a)
        if len(b) == len(a) and b[0]["tag"] == a[0]["tag"] and gap < 50_000:
            cur.append(b)
        else:
            runs.append(cur)
            cur = [b]
    runs.append(cur)
    med = statistics.median
    for run in runs:
        if len(run) < 3:
            continue  # (warm-up and verification launches)
        first = run[0]
        print(f"sm{first[0]['tag']} kernel, {len(first)} blocks a launch, {len(run)} back-to-back launches "
              f"(first at {first[0]['entry_ns']} ns)")
        ends = [max(r["exit_ns"] for r in l) for l in run]
        starts = [min(r["entry_ns"] for r in l) for l in run]
        print(f"  period (last exit to last exit): median {med([b - a for a, b in zip(ends, ends[1:])]) / 1000:.2f} us;"
              f" span (first entry to last exit) median {med([e - s for s, e in zip(starts, ends)]) / 1000:.2f} us")
        waits = [[r["dependency_ns"] for r in l if r["dependency_ns"] > 0] for l in run]
        entry_gap = [(b[0]["entry_ns"] - e) / 1000 for e, b in zip(ends, run[1:])]
        wait_first = [(min(w) - e) / 1000 for e, w in zip(ends, waits[1:]) if w]
        wait_last = [(max(w) - e) / 1000 for e, w in zip(ends, waits[1:]) if w]
        print(f"  next launch against this one's last exit: first entry {med(entry_gap):6.2f} us, dependency met "
              f"(first block) {med(wait_first):6.2f}, (last block) {med(wait_last):6.2f}")
        # the last exit of a launch against its blocks' phases (medians over the launches)
        phases = collections.defaultdict(list)
        for l, e in zip(run, ends):
            for r in l:
                phases["entry to dependency met"].append(us(r["cyc_dependency"]))
                phases["dependency met to first tile"].append(us(r["cyc_first_tile"] - r["cyc_dependency"]))
                phases["main loop"].append(us(r["cyc_main_loop"] - r["cyc_first_tile"]))
                phases["main loop end to exit"].append(us(r["cyc_exit"] - r["cyc_main_loop"]))
                phases["exit before the launch's last"].append((e - r["exit_ns"]) / 1000)
            w = [r["dependency_ns"] for r in l if r["dependency_ns"] > 0]
            if w:
                loop_end = max(mark_ns(r, "cyc_main_loop", ghz) for r in l)
                phases["launch: last dependency met to last main loop end"].append((loop_end - max(w)) / 1000)
                phases["launch: last main loop end to last exit"].append((e - loop_end) / 1000)
        # the blocks that entered only after the previous launch had ended: their prologue is on the critical path
        late = collections.defaultdict(list)
        for e, l in zip(ends, run[1:]):
            for r in l:
                if r["entry_ns"] <= e:
                    continue
                late["late blocks: entry after the previous launch's end"].append((r["entry_ns"] - e) / 1000)
                copies, table = r.get("cyc_prologue_copies", -1), r.get("cyc_prologue_table", -1)
                if copies >= 0 and table >= 0:
                    late["late blocks: entry to W copies issued"].append(us(copies))
                    late["late blocks: W copies to table built"].append(us(table - copies))
                    late["late blocks: table built to dependency met"].append(us(r["cyc_dependency"] - table))
                else:
                    late["late blocks: entry to dependency met"].append(us(r["cyc_dependency"]))
        # Stream-K blocks whose run covers parts of two or more tiles: the switch from the first item to the next
        switch = collections.defaultdict(list)
        for l in run:
            for r in l:
                if r.get("items", 1) < 2 or r.get("cyc_first_item_done", -1) < 0:
                    continue
                switch["switch: first item's main loop end to tile staged"].append(
                    us(r["cyc_first_item_staged"] - r["cyc_first_item_main_loop"]))
                switch["switch: tile staged to epilogue done"].append(
                    us(r["cyc_first_item_done"] - r["cyc_first_item_staged"]))
                switch["switch: epilogue done to the last item's first tile"].append(
                    us(r["cyc_first_tile"] - r["cyc_first_item_done"]))
        # the blocks' main loop end (after the previous launch's end) by when they entered against it: early entrants
        # copy their first stages while the previous launch drains, so with equal runs they finish first
        by_entry = collections.defaultdict(list)
        for e, l in zip(ends, run[1:]):
            for r in l:
                entered = (r["entry_ns"] - e) / 1000
                group = "entered >= 2 us before" if entered <= -2 else "entered later"
                by_entry[f"loop end after prev end, {group}"].append(
                    (mark_ns(r, "cyc_main_loop", ghz) - e) / 1000)
        blocks = sum(len(l) for l in run[1:])
        for name, v in list(phases.items()) + list(late.items()) + list(switch.items()) + list(by_entry.items()):
            share = f" ({len(v)} of {blocks} blocks)" if name.startswith("late") and "entry after" in name else ""
            print(f"  {name:52s} {quantiles(v)}{share}")
        if any(r["block_z"] > 0 for r in first):  # a split-K grid: blockIdx.z is the split
            last_exit_report(run, ghz)
            split_phases_report(run, ends, ghz)
        sm_pairs_report(run, us)
    return 0


def sm_pairs_report(run, us):
    """SMs that ran two blocks of one launch: the older block's main loop against the younger's. The older is the
    one that entered first (at equal entries the lower block index, the one the hardware placed first). Decode grids
    of 8-warp blocks on an H100 (docs/NOTES.md v1.43): the older streamed ~10% faster on 98% of the SMs, so the
    launch's main loops end with the younger blocks alone on their SMs."""
    older, younger = [], []
    for l in run:
        by_sm = collections.defaultdict(list)
        for r in l:
            by_sm[r["sm"]].append(r)
        for blocks in by_sm.values():
            if len(blocks) != 2:
                continue
            a, b = sorted(blocks, key=lambda r: (r["entry_ns"], r["block_z"], r["block_y"], r["block_x"]))
            older.append(us(a["cyc_main_loop"] - a["cyc_first_tile"]))
            younger.append(us(b["cyc_main_loop"] - b["cyc_first_tile"]))
    if not older:
        return
    longer = sum(y > o for o, y in zip(older, younger)) / len(older)
    for name, values in (("older", older), ("younger", younger)):
        label = f"SM of two blocks: the {name} one's main loop"
        print(f"  {label:52s} {quantiles(values)}")
    print(f"  SM of two blocks: the younger one's main loop is the longer on {100 * longer:.0f}% of {len(older)}")


def split_phases_report(run, ends, ghz):
    """Split-K grids: per split (blockIdx.z, dispatched in that order), when its blocks entered, ended their main loop
    and exited, in us after the previous launch's last exit (medians over its blocks of every launch but the first):
    whether the split dispatched last is the one the launch waits for (docs/NOTES.md v1.45)."""
    by_split = collections.defaultdict(lambda: collections.defaultdict(list))
    for e, l in zip(ends, run[1:]):
        for r in l:
            z = by_split[r["block_z"]]
            z["entry"].append((r["entry_ns"] - e) / 1000)
            z["loop end"].append((mark_ns(r, "cyc_main_loop", ghz) - e) / 1000)
            z["exit"].append((r["exit_ns"] - e) / 1000)
    med = statistics.median
    for split, z in sorted(by_split.items()):
        print(f"  split {split}: after the previous launch's end, us: entry med {med(z['entry']):6.2f} "
              f"max {max(z['entry']):6.2f}; main loop end med {med(z['loop end']):6.2f} max {max(z['loop end']):6.2f};"
              f" exit med {med(z['exit']):6.2f} max {max(z['exit']):6.2f}")


def last_exit_report(run, ghz):
    """Split-K grids (blockIdx.z the split): which split's block exits last, and how long after its tile was staged,
    against the exits of the same tile's other splits (whose partial values it waits for, if it sums)."""
    splits, staged_to_exit, others_to_staged = collections.Counter(), [], []
    for l in run:
        last = max(l, key=lambda r: r["exit_ns"])
        splits[last["block_z"]] += 1
        staged = mark_ns(last, "cyc_staged", ghz)
        staged_to_exit.append((last["exit_ns"] - staged) / 1000)
        mates = [r["exit_ns"] for r in l if (r["block_x"], r["block_y"]) == (last["block_x"], last["block_y"])
                 and r is not last]
        if mates:
            others_to_staged.append((max(mates) - staged) / 1000)
    print("  last exit by split: " + ", ".join(f"{z}: {n}" for z, n in sorted(splits.items())) + " launches")
    print(f"  {'last exit: its tile staged to its exit':52s} {quantiles(staged_to_exit)}")
    if others_to_staged:
        name = "last exit: its tile's other splits' last exit after"
        print(f"  {name:52s} {quantiles(others_to_staged)}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("log", nargs="?", default="-")
    ap.add_argument("--ghz", type=float, default=None,
                    help="SM clock for cycles -> us (default: measured from the records' cycles and globaltimer)")
    ap.add_argument("--blocks", action="store_true", help="every block of one launch (-DLUTMM_TIMELINE=2)")
    ap.add_argument("--trace", action="store_true", help="LOG is the CSV of `lutmm bench --trace` (-DLUTMM_TIMELINE=3)")
    args = ap.parse_args()
    if args.trace:
        return trace_report(args.log, args.ghz)
    lines = (sys.stdin if args.log == "-" else open(args.log)).read().splitlines()
    runs = []  # consecutive launches of one kernel: (key, [records])
    for line in lines:
        f = line.split()
        if len(f) != 17 or f[0] != "TL":
            continue
        rec = {"tag": int(f[1]), "blk": tuple(map(int, f[3:6])), "sm": int(f[7]), "entry": int(f[9]),
               "exit": int(f[10]), "cyc": [int(v) for v in f[12:17]]}
        key = rec["tag"]
        if not runs or runs[-1][0] != key:
            runs.append((key, []))
        runs[-1][1].append(rec)
    if not runs:
        print("no TL lines (was the kernel compiled with -DLUTMM_TIMELINE=1?)")
        return 1
    if args.ghz is None:
        args.ghz = measured_ghz((r["exit"] - r["entry"], r["cyc"][4]) for _, recs in runs for r in recs)
    if args.blocks:
        for key, recs in runs:
            print(f"sm{key} kernel:", end=" ")
            blocks_report(recs, args.ghz)
        return 0
    for key, recs in runs:
        firsts = [r for r in recs if r["blk"] == (0, 0, 0)]
        lasts = [r for r in recs if r["blk"] != (0, 0, 0)]
        grid = max((r["blk"] for r in recs), default=(0, 0, 0))
        print(f"sm{key} kernel, last block {grid}: {len(firsts)} launches")
        for name, group in (("first block", firsts), ("last block", lasts)):
            if not group:
                continue
            cols = []
            for i, mark in enumerate(MARKS):
                vals = [r["cyc"][i] for r in group if r["cyc"][i] >= 0]
                if vals:
                    c = statistics.median(vals)
                    cols.append(f"{mark} {c:7.0f} cyc {c / args.ghz / 1000:6.2f} us")
            life = statistics.median(r["exit"] - r["entry"] for r in group) / 1000
            print(f"  {name:11s} " + " | ".join(cols) + f" | lifetime {life:6.2f} us (globaltimer)")
        starts = [r["entry"] for r in firsts]
        periods = [b - a for a, b in zip(starts, starts[1:]) if 0 < b - a < 1_000_000]
        if periods:
            print(f"  launch period (first blocks' entries): median {statistics.median(periods) / 1000:.2f} us")
        if firsts and lasts and len(firsts) == len(lasts):
            spans = [max(l["exit"], f["exit"]) - min(l["entry"], f["entry"]) for f, l in zip(firsts, lasts)]
            print(f"  first entry to last exit: median {statistics.median(spans) / 1000:.2f} us")
    return 0


if __name__ == "__main__":
    sys.exit(main())
