"""The webdataset side of scripts/bench-iterate.sh, run in the script's own
venv (webdataset 1.0.2; Debian's torch for the DataLoader).

  bench-iterate.py WORKERS SHARD... [--sha256]

iterates webdataset.WebDataset(SHARDS, shardshuffle=False) yielding each
sample's raw bytes (no decoder): in this process when WORKERS is 0, else
through torch.utils.data.DataLoader(batch_size=None, num_workers=WORKERS)
(webdataset gives each worker every WORKERS-th shard). Prints one JSON line:
samples, bytes (of the fields, the keys starting with "__" left out), and
the wall and CPU seconds (user + system, this process and its waited-for
children: the DataLoader's workers) of the iteration alone, the imports
and the interpreter's start excluded; with --sha256 also the SHA-256 of the
fields' bytes in the order yielded.
"""

import hashlib
import json
import resource
import sys
import time


def cpu():
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime


def main():
    args = [a for a in sys.argv[1:] if a != "--sha256"]
    want_sha = "--sha256" in sys.argv
    workers, shards = int(args[0]), args[1:]
    import webdataset as wds

    ds = wds.WebDataset(shards, shardshuffle=False)
    if workers:
        import torch.utils.data

        it = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=workers)
    else:
        it = ds
    h = hashlib.sha256() if want_sha else None
    samples = nbytes = 0
    c0, t0 = cpu(), time.perf_counter()
    for s in it:
        samples += 1
        for k, v in s.items():
            if not k.startswith("__"):
                nbytes += len(v)
                if h:
                    h.update(v)
    del it
    wall, used = time.perf_counter() - t0, cpu() - c0
    out = {"samples": samples, "bytes": nbytes, "wall": wall, "cpu": used}
    if h:
        out["sha256"] = h.hexdigest()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
