"""Many ranks read each byte once: gloo process groups of 2 and 4 ranks
(subprocesses running ranks_check.py) load a sharded checkpoint with
process_group; every rank holds what it asked for, equal to the reference
library's tensors, and the ranks' storage reads add up to the
checkpoint's data once (plus each rank's read of the headers)."""

import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import unittest

import safetensors.torch
import torch

from . import helpers

DEADLINE = 180  # seconds for a whole group


def write_checkpoint(directory):
    """A sharded checkpoint of three files: 2-D weights of several dtypes
    with row counts no world size divides, ".down" weights (sliced along
    dim 1 by the tensor-parallel plan), biases, a scalar, an empty tensor
    and a bool mask. Returns the index's path."""
    g = torch.Generator().manual_seed(7)
    shards, weight_map = {}, {}
    for layer in range(6):
        f = f"model-{layer // 2 + 1:05d}-of-00003.safetensors"
        dt = (torch.float32, torch.bfloat16, torch.float16)[layer % 3]
        t = shards.setdefault(f, {})
        t[f"layers.{layer}.up"] = torch.randn(61 + layer, 37, generator=g).to(dt)
        t[f"layers.{layer}.down"] = torch.randn(29, 67 + layer, generator=g).to(dt)
        t[f"layers.{layer}.bias"] = torch.randn(61 + layer, generator=g)
        t[f"layers.{layer}.ids"] = torch.randint(-2**40, 2**40, (13, 5), generator=g)
    shards["model-00001-of-00003.safetensors"]["scale"] = torch.tensor(0.5, dtype=torch.float64)
    shards["model-00002-of-00003.safetensors"]["empty"] = torch.zeros(0, 4)
    shards["model-00003-of-00003.safetensors"]["mask"] = torch.rand(33, generator=g) > 0.5
    for f, tensors in shards.items():
        safetensors.torch.save_file(tensors, os.path.join(directory, f), metadata={"format": "pt"})
        weight_map.update({n: f for n in tensors})
    index = os.path.join(directory, "model.safetensors.index.json")
    with open(index, "w") as fh:
        json.dump({"metadata": {"total_size": 0}, "weight_map": weight_map}, fh)
    return index


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


MODES = ("replicated", "tp", "pipeline")


def run_group(world, index):
    """Runs world ranks of ranks_check.py through every mode; returns
    {mode: the ranks' reports, by rank}."""
    env = dict(os.environ)
    env["PYTHONPATH"] = helpers.PYTHON_DIR + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.setdefault("GLOO_SOCKET_IFNAME", "lo")
    script = os.path.join(os.path.dirname(__file__), "ranks_check.py")
    port = free_port()
    procs = [subprocess.Popen([sys.executable, script, str(r), str(world), str(port), index, *MODES], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for r in range(world)]
    deadline = time.monotonic() + DEADLINE
    outs = []
    try:
        for p in procs:
            out, err = p.communicate(timeout=max(1, deadline - time.monotonic()))
            outs.append((p.returncode, out, err))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    for r, (rc, out, err) in enumerate(outs):
        if rc != 0:
            raise AssertionError(f"rank {r} of {world} exited {rc}\nstdout:\n{out}\nstderr:\n{err}")
    res = {m: [] for m in MODES}
    for _, out, _ in outs:
        for line in out.strip().splitlines()[-len(MODES):]:
            rep = json.loads(line)
            res[rep["mode"]].append(rep)
    return res


class RanksTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.TemporaryDirectory(prefix="gdsload-ranks-")
        cls.index = write_checkpoint(cls.dir.name)
        cls.sizes = {}
        for f in os.listdir(cls.dir.name):
            if f.endswith(".safetensors"):
                for n, t in safetensors.torch.load_file(os.path.join(cls.dir.name, f)).items():
                    cls.sizes[n] = (t.numel() * t.element_size(), t.dim())

        cls.groups = {}

    def group(self, world):
        """The reports of a group of world ranks (run once per size)."""
        if world not in self.groups:
            self.groups[world] = run_group(world, self.index)
        return self.groups[world]

    @classmethod
    def tearDownClass(cls):
        cls.dir.cleanup()

    def data_bytes(self):
        return sum(b for b, _ in self.sizes.values())

    def check_group(self, reports, world):
        """Common checks: no mismatch; every rank's report agrees on every
        rank's figures; a rank receives from its peers exactly what it
        asked of the tensors another rank read whole (so only its slices of
        a sliced tensor travel to it, nothing it did not ask for) and the
        peers sent that much. Returns the data bytes and each rank's
        storage reads of data (its bytes_read less the headers it read
        opening)."""
        data = self.data_bytes()
        for rep in reports:
            self.assertEqual([], rep["bad"], f"rank {rep['rank']}")
            self.assertEqual(data, rep["data_bytes"])
            st = rep["stats"]
            self.assertEqual((rep["rank"], world), (st["rank"], st["ranks"]))
            self.assertEqual([r["stats"]["bytes_read"] for r in reports], st["rank_bytes_read"])
            self.assertEqual([r["stats"]["bytes_received"] for r in reports], st["rank_bytes_received"])
            self.assertGreater(st["header_bytes"], 0)
            self.assertGreater(st["rounds"], 1, "the fixture takes several windows")
            others = {n for r in reports if r is not rep for n in r["stats"]["tensors_read"]}
            self.assertEqual(sum(b for n, b in rep["asked"].items() if n in others), st["bytes_received"],
                             f"rank {rep['rank']}")
        self.assertEqual(sum(r["stats"]["bytes_received"] for r in reports),
                         sum(r["stats"]["bytes_sent"] for r in reports))
        shares = [set(r["stats"]["tensors_read"]) for r in reports]
        for i, a in enumerate(shares):
            for b in shares[i + 1:]:
                self.assertFalse(a & b, "the shares are disjoint")
        return data, [r["stats"]["bytes_read"] - r["stats"]["header_bytes"] for r in reports]

    def test_replicated(self):
        for world in (2, 4):
            with self.subTest(world=world):
                reports = self.group(world)["replicated"]
                data, read = self.check_group(reports, world)
                self.assertEqual(data, sum(read), f"storage reads per rank {read}")
                for r, rep in enumerate(reports):
                    self.assertGreater(read[r], 0, f"rank {r} read none of the checkpoint")
                    self.assertEqual(data - read[r], rep["stats"]["bytes_received"],
                                     f"rank {r} receives all it did not read")
                    self.assertEqual(data, sum(rep["asked"].values()))

    def test_tensor_parallel(self):
        for world in (2, 4):
            with self.subTest(world=world):
                reports = self.group(world)["tp"]
                data, read = self.check_group(reports, world)
                self.assertEqual(data, sum(read), f"storage reads per rank {read}")
                sliced = sum(b for b, d in self.sizes.values() if d == 2)
                self.assertEqual(sliced + world * (data - sliced), sum(sum(r["asked"].values()) for r in reports))
                # Rows split along dimension 0 are read by their ranks;
                # columns (".down") are read whole by one rank and sent.
                read_whole = {n for r in reports for n in r["stats"]["tensors_read"]}
                for n, (_, d) in self.sizes.items():
                    if d == 2 and self.sizes[n][0]:
                        self.assertEqual(n.endswith(".down"), n in read_whole, n)
                for rep in reports:
                    self.assertGreater(rep["stats"]["own_reads"], 0)

    def test_pipeline(self):
        reports = self.group(4)["pipeline"]
        _, read = self.check_group(reports, 4)
        for rep in reports:
            self.assertEqual(0, rep["stats"]["bytes_received"], f"rank {rep['rank']} reads what it alone wants")
            self.assertEqual(sum(rep["asked"].values()), read[rep["rank"]])


if __name__ == "__main__":
    unittest.main()
