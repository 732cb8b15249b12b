"""test_tierfs_plan.py MOUNT PROXY_URL TMPDIR - contrib/python's PlanSampler
on a real mount (tests/test_python_sampler.sh sets it up): a DataLoader with
2 workers reads 2 shuffled epochs; every sample's bytes are checked against
the generator the objects were uploaded with (tierfs-s3util put-many: seed
+ index, see tests/tools/s3util.c), each epoch sees every file once, the
plan is followed (files fetched ahead of the workers, each object fetched
once in all), and a sampler facing a path outside any tierfs mount warns
and runs its epoch.  TAP-like output; exit 0 only if all pass."""

import json
import os
import subprocess
import sys
import urllib.request
import warnings
import zlib

import torch
from torch.utils.data import DataLoader, Dataset, RandomSampler

from tierfs_plan import PlanSampler, find_mount

MOUNT, PROXY, TMP = sys.argv[1], sys.argv[2], sys.argv[3]
TIERFS = os.environ["TIERFS_BIN"]
results = []


def check(name, cond, detail=""):
    results.append(bool(cond))
    print(f"{'ok' if cond else 'not ok'} {len(results)} - {name}" +
          ("" if cond else f"\n#   {detail}"))


class Files(Dataset):
    """ImageFolder's layout: ROOT/CLASS/NAME, sorted; item = (index, crc, len)."""

    def __init__(self, root):
        self.samples = []
        for c in sorted(os.listdir(root)):
            for n in sorted(os.listdir(os.path.join(root, c))):
                self.samples.append(os.path.join(root, c, n))

    def __len__(self):
        return len(self.samples)

    def __getitem__(self, i):
        with open(self.samples[i], "rb") as f:
            data = f.read()
        return i, zlib.crc32(data), len(data)


def stats():
    out = subprocess.run([TIERFS, "stats", MOUNT, "--json"], capture_output=True, check=True)
    return json.loads(out.stdout)


def proxy_stat(name):
    with urllib.request.urlopen(PROXY + "/__proxy/stats") as r:
        for line in r.read().decode().splitlines():
            k, _, v = line.partition(" ")
            if k == name:
                return int(v)
    return -1


def epoch(ds, sampler):
    seen = {}
    dl = DataLoader(ds, batch_size=8, num_workers=2, sampler=sampler)
    for idx, crc, ln in dl:
        for i, c, n in zip(idx.tolist(), crc.tolist(), ln.tolist()):
            if i in seen:
                seen[i] = None      # read twice: never right
            else:
                seen[i] = (c, n)
    return seen


root = os.path.join(MOUNT, "train")
ds = Files(root)
check("the dataset is listed through the mount", len(ds) == 160, f"{len(ds)} files")
check("find_mount finds the mountpoint from a file", find_mount(ds.samples[0]) == MOUNT,
      find_mount(ds.samples[0]))

# reference bytes: the objects as uploaded (the wrapper wrote them to TMP/ref)
ref = json.load(open(os.path.join(TMP, "ref.json")))

gen = torch.Generator()
sampler = PlanSampler(RandomSampler(ds, generator=gen), ds.samples, strict=True)
for e in (1, 2):
    gen.manual_seed(1000 + e)
    before = stats()["counters"]["s3"]["gets"]
    seen = epoch(ds, sampler)
    bad = [ds.samples[i] for i, v in seen.items()
           if v is None or list(v) != ref[os.path.relpath(ds.samples[i], root)]]
    check(f"epoch {e}: every file read once", len(seen) == len(ds), f"{len(seen)} read")
    check(f"epoch {e}: every sample's bytes exact", not bad, f"wrong: {bad[:5]}")
    s = stats()
    plan = s.get("plan", {})
    check(f"epoch {e}: the plan was handed over whole", plan.get("entries") == len(ds),
          json.dumps(plan))
    check(f"epoch {e}: the workers' opens followed it to its end",
          plan.get("opened") == len(ds) and plan.get("done") is True, json.dumps(plan))
    if e == 1:
        ahead = s["counters"]["readahead"]["plan_files"]
        check("epoch 1: most files were fetched ahead of the workers", ahead >= len(ds) // 2,
              f"{ahead} of {len(ds)} fetched ahead")
        gets = proxy_stat("object_GET")
        check("epoch 1: each object fetched once", gets == len(ds), f"{gets} object GETs")
    else:
        check("epoch 2: served from the cache, no GET",
              s["counters"]["s3"]["gets"] == before, f"{s['counters']['s3']['gets'] - before} GETs")
check("a plan per epoch was sent", sampler.plans_sent == 2, f"{sampler.plans_sent}")

# outside a tierfs mount: a warning, and the epoch runs
outside = [os.path.join(TMP, "ref.json")] * 3
with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter("always")
    order = list(PlanSampler(range(3), outside))
check("no tierfs mount: the epoch's order still comes", order == [0, 1, 2], f"{order}")
check("no tierfs mount: one warning says why", len(w) == 1 and "tierfs plan" in str(w[0].message),
      [str(x.message) for x in w])
try:
    list(PlanSampler(range(3), outside, strict=True))
    check("strict=True raises when the plan is refused", False, "no exception")
except RuntimeError as e:
    check("strict=True raises when the plan is refused", "tierfs" in str(e), str(e))

print(f"# {sum(results)} of {len(results)} passed")
sys.exit(0 if all(results) else 1)
