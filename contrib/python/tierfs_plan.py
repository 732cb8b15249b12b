"""tierfs_plan - hand a PyTorch loader's epoch order to a tierfs mount.

A shuffled epoch opens its files in an order no read-ahead can guess, but
the sampler knows it before the epoch starts.  PlanSampler wraps any
sampler: each time the DataLoader starts an epoch (iterates the sampler),
it draws that epoch's indices, sends the files they stand for, in that
order, to the mount as a plan (`tierfs plan MOUNT -`), and then yields the
same indices.  The mount fetches the next files ahead of the workers.

    from torch.utils.data import DataLoader, RandomSampler
    from tierfs_plan import PlanSampler

    ds = torchvision.datasets.ImageFolder("/mnt/data/train")
    paths = [p for p, _ in ds.samples]
    sampler = PlanSampler(RandomSampler(ds), paths)
    loader = DataLoader(ds, sampler=sampler, batch_size=64, num_workers=8)

paths[i] is the file index i reads: absolute under the mount, or relative
to its root.  The mount is found from the first path (walking up to the
mountpoint) unless given.  Sending a plan is an optimisation: when it
fails (no tierfs mount, no `tierfs` command) the epoch runs anyway and a
warning says why, once; strict=True raises instead.

Only the standard library and torch are used.  The `tierfs` CLI does the
talking (it finds the mount's control socket and sends the plan in parts);
its path is the `tierfs` argument, else $TIERFS_BIN, else `tierfs` on PATH.
"""

import os
import subprocess
import warnings

from torch.utils.data import Sampler

__all__ = ["PlanSampler", "send_plan", "find_mount"]


def find_mount(path):
    """The mountpoint holding path: its nearest ancestor that is a mount."""
    p = os.path.abspath(path)
    while not os.path.ismount(p):
        parent = os.path.dirname(p)
        if parent == p:
            break
        p = parent
    return p


def send_plan(mount, paths, tierfs=None, timeout=300):
    """Send paths (in the order they will be opened) as mount's plan.

    Raises RuntimeError with the CLI's message when it is refused."""
    exe = tierfs or os.environ.get("TIERFS_BIN") or "tierfs"
    data = "".join(p + "\n" for p in paths).encode("utf-8", "surrogateescape")
    try:
        r = subprocess.run([exe, "plan", mount, "-"], input=data, capture_output=True,
                           timeout=timeout)
    except (OSError, subprocess.SubprocessError) as e:
        raise RuntimeError(f"tierfs plan: {e}") from e
    if r.returncode != 0:
        msg = (r.stderr or r.stdout).decode("utf-8", "replace").strip()
        raise RuntimeError(msg or f"tierfs plan exited {r.returncode}")


class PlanSampler(Sampler):
    """A sampler that sends each epoch's order to tierfs before the epoch.

    sampler: the sampler to wrap (RandomSampler, DistributedSampler, ...);
    paths: index -> file path (a sequence or a callable);
    mount: the mountpoint (default: found from paths[first index]);
    tierfs: the tierfs command; strict: raise when a plan cannot be sent.
    """

    def __init__(self, sampler, paths, mount=None, tierfs=None, strict=False):
        super().__init__(None)
        self.sampler = sampler
        self.paths = paths
        self.mount = mount
        self.tierfs = tierfs
        self.strict = strict
        self.plans_sent = 0
        self._warned = False

    def _path(self, i):
        return self.paths(i) if callable(self.paths) else self.paths[i]

    def __iter__(self):
        order = list(iter(self.sampler))
        if order:
            files = [self._path(i) for i in order]
            try:
                mount = self.mount or find_mount(files[0])
                send_plan(mount, files, self.tierfs)
                self.plans_sent += 1
            except RuntimeError as e:
                if self.strict:
                    raise
                if not self._warned:
                    warnings.warn(f"tierfs plan not sent, the epoch runs without it: {e}")
                    self._warned = True
        return iter(order)

    def __len__(self):
        return len(self.sampler)

    def set_epoch(self, epoch):
        """Passed on to the wrapped sampler (DistributedSampler needs it)."""
        if hasattr(self.sampler, "set_epoch"):
            self.sampler.set_epoch(epoch)
