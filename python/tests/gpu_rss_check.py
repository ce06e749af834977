"""Run by test_gpu_rss in a fresh interpreter pointed at the CUDA test
double: loads a checkpoint into "GPU" memory and prints the process's
peak resident set. torch is kept out (importing gdsload does not need
it): its import alone peaks at about 225 MiB here, which says nothing of
how gdsload stages a load."""

import json
import sys

sys.modules["torch"] = None  # import torch raises ImportError

from gdsload import _checkpoint  # noqa: E402

path, gpu_path = sys.argv[1], sys.argv[2]
loaded = _checkpoint._load(path, "cuda:0", {"gpu_path": gpu_path})
res = {"bytes": loaded.stats.bytes, "route": loaded.stats.route,
       "devices": sorted({a.device for a in loaded.allocations})}
loaded.release()
with open("/proc/self/status") as f:
    for line in f:
        if line.startswith("VmHWM:"):
            res["vmhwm_kib"] = int(line.split()[1])
print(json.dumps(res))
