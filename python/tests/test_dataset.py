"""ShardDataset through PyTorch DataLoaders: every sample exactly once per
epoch per rank with 0 and 2 workers under fork and spawn, world size 2 split
into disjoint halves, exact resume through state_dict, and the fork guard.
Each check runs in a fresh interpreter (loader_check.py): a DataLoader
forks, and gdsload's runtime must not have started in the parent."""

import os
import shutil
import tempfile
import unittest
from collections import Counter

import torch

import gdsload

from . import helpers

COUNTS = [5, 6, 4, 5]  # 20 samples: even, so world size 2 splits without padding


class DatasetTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls._tmp = tempfile.TemporaryDirectory()
        cls.root = cls._tmp.name
        cls.keys = helpers.write_shards(cls.root, COUNTS)

    @classmethod
    def tearDownClass(cls):
        cls._tmp.cleanup()

    def test_each_sample_once_per_epoch_per_rank(self):
        out = helpers.run_python("loader_check.py", "split", self.root)
        self.assertEqual(out["errors"], [])
        keys = out["keys"]
        everything = Counter(self.keys)
        for ctx_workers in ("fork-2", "spawn-2", "None-0"):
            one = keys[f"{ctx_workers}-1-0"]
            self.assertEqual(Counter(one), everything, f"{ctx_workers}: world 1 yields each sample once")
            r0, r1 = keys[f"{ctx_workers}-2-0"], keys[f"{ctx_workers}-2-1"]
            self.assertEqual(len(r0), len(r1), "ranks yield equal counts")
            self.assertEqual(len(set(r0)), len(r0))
            self.assertEqual(len(set(r1)), len(r1))
            self.assertFalse(set(r0) & set(r1), f"{ctx_workers}: ranks are disjoint")
            self.assertEqual(set(r0) | set(r1), set(self.keys), f"{ctx_workers}: ranks cover the dataset")
            # The order depends only on seed and dataset, not on workers.
            self.assertEqual(keys[f"{ctx_workers}-2-1"] and Counter(keys[f"{ctx_workers}-2-1"]), Counter(keys["None-0-2-1"]))
        self.assertEqual(keys["fork-2-1-0"], keys["spawn-2-1-0"], "fork and spawn workers interleave alike")
        env = keys["env-none-2-1"]
        self.assertEqual(Counter(env[:10]), Counter(keys["None-0-2-1"]), "RANK/WORLD_SIZE place the dataset")
        self.assertEqual(len(env), 20, "two epochs of rank 1's 10 samples")
        self.assertEqual(len(set(env[10:])), 10, "each sample once in the second epoch too")
        self.assertNotEqual(env[10:], env[:10], "the second epoch has its own order")

    def test_resume_equals_an_uninterrupted_run(self):
        cases = ((2, 3, 5), (2, 1, 21), (0, 4, 3), (0, 1, 7))  # forking workers before gdsload starts here
        outs = helpers.run_python("loader_check.py", "resume", self.root, *(",".join(map(str, c)) for c in cases))
        for (workers, batch, stop), out in zip(cases, outs):
            with self.subTest(workers=workers, batch=batch, stop=stop):
                self.assertEqual(out["errors"], [])
                self.assertEqual(len(out["whole"]), 2 * len(self.keys))
                self.assertEqual(Counter(out["whole"]), Counter(2 * self.keys), "two epochs, each sample once in each")
                self.assertEqual(out["resumed"], out["whole"], "a ShardLoader resumed from its state_dict")
                self.assertEqual(sum(out["state"]["counts"]), batch * stop)
                if workers == 0:
                    self.assertEqual(out["alone"], out["whole"], "a ShardDataset resumed from its state_dict")

    def test_passes_after_a_resume_are_the_next_epochs(self):
        subset = os.path.join(self.root, "subset")
        os.mkdir(subset)
        try:
            for name in sorted(os.listdir(self.root))[:2]:
                if name.endswith(".tar"):
                    os.link(os.path.join(self.root, name), os.path.join(subset, name))
            out = helpers.run_python("loader_check.py", "passes", os.path.join(self.root, "shard-{0000..0003}.tar"), subset)
        finally:
            shutil.rmtree(subset)
        self.assertEqual(out["errors"], [])
        for w in ("w2", "w0"):
            with self.subTest(workers=w):
                e0, e1, e2 = out[w + "-epoch0"], out[w + "-epoch1"], out[w + "-epoch2"]
                self.assertEqual(Counter(e0), Counter(self.keys))
                self.assertNotEqual(e0, e1, "epochs have their own orders")
                resumed, nxt, after = out[w + "-passes"]
                self.assertEqual(out[w + "-part"] + resumed, e0, "the resumed pass ends where epoch 0 ends")
                self.assertEqual(nxt, e1, "the pass after the resumed one is epoch 1")
                self.assertEqual(after, e2, "and the one after that epoch 2")
                state = out[w + "-state"]
                self.assertIsNotNone(state["base"], "the state records the dataset and the order")
                self.assertEqual(state["seed"], 7)
                self.assertIn("ValueError", str(out[w + "-subset"]), "a state of another dataset is refused")
                self.assertIn("fingerprint", str(out[w + "-subset"]))
                self.assertIn("ValueError", str(out[w + "-seed8"]), "a state of another seed is refused")
                self.assertIn("seed=7", str(out[w + "-seed8"]))
        resumed, nxt, after = out["alone-passes"]
        self.assertEqual(out["alone-part"] + resumed, out["w0-epoch0"])
        self.assertEqual(nxt, out["w0-epoch1"])
        self.assertEqual(after, out["w0-epoch2"])

    def test_state_of_a_dataset_iterated_elsewhere_warns(self):
        # As in the parent of a DataLoader with workers: never iterated here.
        ds = gdsload.ShardDataset(self.root, seed=7)
        with self.assertWarnsRegex(RuntimeWarning, "ShardLoader"):
            st = ds.state_dict()
        self.assertEqual((st["base"], st["counts"], st["seed"]), (None, [0], 7))

    def test_started_parent(self):
        p = os.path.join(self.root, "..", os.path.basename(self.root) + "-ck.safetensors")
        gdsload.save_file({"x": torch.zeros(3)}, p)
        try:
            out = helpers.run_python("loader_check.py", "started", self.root, p)
        finally:
            os.remove(p)
        self.assertIn("ForkError", out["fork"])
        self.assertIn('multiprocessing_context="spawn"', out["fork"])
        self.assertEqual(Counter(out["forkserver"]), Counter(self.keys))
        self.assertEqual(out["errors"], [])


if __name__ == "__main__":
    unittest.main()
