"""loader_epoch.py ROOT REF.json EPOCH [--seed S] [--workers W] [--batch B] [--plan]

One epoch of a PyTorch DataLoader over an image-folder dataset (ROOT/CLASS/
FILE, sorted, as torchvision's ImageFolder lists it), in a shuffled order
drawn from seed S + EPOCH (the same order for every tool), for
scripts/bench/loader.sh.  Each sample is the file's bytes, read whole; the
worker returns its crc32 and length, checked against REF.json (relative
path -> [crc32, length], made from a copy straight from the server).  With
--plan the sampler is contrib/python's PlanSampler (the order is sent to
the tierfs mount first; strict: a refusal fails the epoch).

Prints one JSON line: {"secs", "samples", "bytes"}.  Exits 1, naming the
file, on a wrong or missing sample or a sample read twice: the driver
then reports FAIL, never a time.  Run with Debian's /usr/bin/python3
(python3-torch).
"""

import argparse
import json
import os
import sys
import time
import zlib

import torch
from torch.utils.data import DataLoader, Dataset, RandomSampler

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "contrib", "python"))
from tierfs_plan import PlanSampler  # noqa: E402


class ImageFiles(Dataset):
    def __init__(self, root):
        self.root = root
        self.samples = []
        for c in sorted(e.name for e in os.scandir(root) if e.is_dir()):
            d = os.path.join(root, c)
            self.samples += [os.path.join(d, f) for f in sorted(os.listdir(d))]

    def __len__(self):
        return len(self.samples)

    def __getitem__(self, i):
        with open(self.samples[i], "rb") as f:
            data = f.read()
        return i, zlib.crc32(data), len(data)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("root")
    ap.add_argument("ref")
    ap.add_argument("epoch", type=int)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--plan", action="store_true")
    a = ap.parse_args()

    ref = json.load(open(a.ref))
    t0 = time.monotonic()
    ds = ImageFiles(a.root)
    gen = torch.Generator()
    gen.manual_seed(a.seed * 1000 + a.epoch)
    sampler = RandomSampler(ds, generator=gen)
    if a.plan:
        sampler = PlanSampler(sampler, ds.samples, strict=True)
    dl = DataLoader(ds, batch_size=a.batch, num_workers=a.workers, sampler=sampler)
    seen = set()
    nbytes = 0
    for idx, crc, ln in dl:
        for i, c, n in zip(idx.tolist(), crc.tolist(), ln.tolist()):
            rel = os.path.relpath(ds.samples[i], a.root)
            if i in seen:
                sys.exit(f"loader_epoch: {rel} read twice in one epoch")
            seen.add(i)
            if ref.get(rel) != [c, n]:
                sys.exit(f"loader_epoch: {rel}: crc32 {c} length {n}, want {ref.get(rel)}")
            nbytes += n
    secs = time.monotonic() - t0
    if len(seen) != len(ref):
        sys.exit(f"loader_epoch: {len(seen)} samples, the dataset has {len(ref)}")
    print(json.dumps({"secs": round(secs, 3), "samples": len(seen), "bytes": nbytes}))


if __name__ == "__main__":
    main()
