#!/usr/bin/env python3
"""evict_shapes.py [--sim PATH] [--seeds K] [--epochs E] [--orders LIST] [--ratios LIST] [--jobs J]

Epoch bounds over dataset shapes that no test names, in the simulator's
two-tier model (tierfs-sim --ram-size, the daemon's own policy code and
tier wiring): small tiers of one-chunk, two-chunk and four-chunk files,
files of 10 KB to 256 KiB in one dataset, and whole 4 MiB chunks.  For
each shape, order (listing, or a new seeded shuffle each epoch), N/C and
policy, every file is read whole once an epoch for E epochs (10; long
enough for the SSD tier's frequency sketch to halve its counters two or
three times, which the epoch after each halving feels); the figure
printed is the worst of epochs 2-E over seeds 1..K, as bytes fetched
over the bound 1.05 x (1 - C/N) (C the SSD tier; the tiers are
inclusive).  Above 1.000 an epoch fetched more than the bound.  LRU in
both tiers is printed beside the default.

Exit status 0 when the default stays within every bound, 1 otherwise.
Needs build/tierfs-sim (or --sim).
"""

import argparse
import math
import os
import random
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

# name, dataset MiB, smallest and largest file (bytes), chunk, RAM tier
SHAPES = [
    ("60 KB, one chunk", 5.625, 61440, 61440, 65536, "1M"),
    ("100 KB, two chunks", 9.375, 100000, 100000, 65536, "1M"),
    ("200 KB, four chunks", 18.75, 200000, 200000, 65536, "1M"),
    ("10 KB-256 KiB", 16, 10000, 262144, 65536, "1M"),
    ("100 KB, 32 MiB", 32, 100000, 100000, 65536, "1M"),
    ("4 MiB, one chunk", 256, 4194304, 4194304, 4194304, "16M"),
]
EPOCHS = 10


def trace(total_mib, lo, hi, chunk, order, seed):
    """The trace's lines (tierfs trace format 2) and one epoch's length."""
    r = random.Random(seed)
    total = int(total_mib * 1048576)
    sizes, s = [], 0
    while s < total:
        x = int(math.exp(math.log(lo) + r.random() * (math.log(hi) - math.log(lo))))
        x = max(lo, min(x, total - s))
        sizes.append(x)
        s += x
    idx = list(range(len(sizes)))
    lines, epoch_len = ["# tierfs trace 2"], 0
    for e in range(EPOCHS):
        if order == "shuffle":
            r.shuffle(idx)
        for i in idx:
            for c in range((sizes[i] + chunk - 1) // chunk):
                n = min(chunk, sizes[i] - c * chunk)
                lines.append("%d %d f-%05d %d" % (n, n, i, c))
        if e == 0:
            epoch_len = len(lines) - 1
    return lines, epoch_len, s


def fetched(sim, lines, upto, warm_from, ram, ssd_kib, chunk, policy):
    """Bytes fetched / bytes read over accesses [warm_from, upto)."""
    cmd = [sim, "--trace", "/dev/stdin", "--warm-from", str(warm_from),
           "--ram-size", ram, "--ssd-size", "%dK" % ssd_kib,
           "--chunk-size", str(chunk), "--ram-policy", policy,
           "--ssd-policy", policy]
    out = subprocess.run(cmd, input="\n".join(lines[:1 + upto]) + "\n",
                         capture_output=True, text=True, check=True).stdout
    for row in out.splitlines():
        cells = [c.strip() for c in row.split("|")]
        if len(cells) > 10 and cells[1].endswith(policy):
            return 1 - float(cells[9]) / 100
    raise RuntimeError("tierfs-sim printed no row: " + out)


def worst(sim, shape, order, ratio, policy, seeds):
    _, mib, lo, hi, chunk, ram = shape
    bound = 1.05 * (1 - 1 / ratio)
    w = 0.0
    for seed in range(1, seeds + 1):
        lines, el, total = trace(mib, lo, hi, chunk, order, seed)
        ssd_kib = int(total / 1024 / ratio)
        for k in range(2, EPOCHS + 1):
            f = fetched(sim, lines, k * el, (k - 1) * el, ram, ssd_kib, chunk, policy)
            w = max(w, f / bound)
    return w


def main():
    global EPOCHS
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sim", default=os.path.join("build", "tierfs-sim"))
    ap.add_argument("--seeds", type=int, default=6)
    ap.add_argument("--epochs", type=int, default=EPOCHS)
    ap.add_argument("--orders", default="listing,shuffle")
    ap.add_argument("--ratios", default="1.5,2,4")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    a = ap.parse_args()
    EPOCHS = a.epochs
    orders = a.orders.split(",")
    ratios = [float(x) for x in a.ratios.split(",")]
    cells = [(s, o, r, p) for s in SHAPES for o in orders for r in ratios
             for p in ("tinylfu", "lru")]
    with ThreadPoolExecutor(a.jobs) as ex:
        res = dict(zip(cells, ex.map(lambda c: worst(a.sim, *c, a.seeds), cells)))
    print("## Worst of epochs 2-%d over the bound, seeds 1-%d (tierfs-sim two-tier model)"
          % (EPOCHS, a.seeds))
    print()
    print("| shape | order | " + " | ".join("N/C %g" % r for r in ratios) + " |")
    print("|---|---|" + "---:|" * len(ratios))
    ok = True
    for s in SHAPES:
        for o in orders:
            row = []
            for r in ratios:
                d, l = res[(s, o, r, "tinylfu")], res[(s, o, r, "lru")]
                ok = ok and d <= 1.0
                row.append("%.3f (LRU %.3f)%s" % (d, l, "" if d <= 1.0 else " over"))
            print("| %s | %s | %s |" % (s[0], o, " | ".join(row)))
    print()
    print("default within every bound: %s" % ("yes" if ok else "no"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
