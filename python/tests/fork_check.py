"""Run by test_errors in a fresh interpreter: start gdsload's runtime, fork,
and report what the child could do."""

import json
import os
import sys

import torch

import gdsload

d = sys.argv[1]
p = os.path.join(d, "fork.safetensors")
gdsload.save_file({"x": torch.arange(4.0)}, p)
got = gdsload.load_file(p)
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    os.close(r)
    res = {}
    try:
        gdsload.load_file(p)
        res["child"] = "loaded"
    except gdsload.ForkError as e:
        res["child"], res["message"] = "ForkError", str(e)
    except BaseException as e:  # noqa: BLE001 - reported to the parent
        res["child"], res["message"] = type(e).__name__, str(e)
    # The parent's tensors are plain memory here: readable, and freeing
    # them needs no Go.
    res["child_views"] = "ok" if got["x"].tolist() == [0.0, 1.0, 2.0, 3.0] else "wrong"
    del got
    import gc

    gc.collect()
    os.write(w, json.dumps(res).encode())
    os._exit(0)
os.close(w)
data = b""
while chunk := os.read(r, 65536):
    data += chunk
os.waitpid(pid, 0)
res = json.loads(data)
res["parent"] = "loaded" if got["x"].tolist() == [0.0, 1.0, 2.0, 3.0] else "wrong"
print(json.dumps(res))
