"""ShardDataset next to the webdataset library (PyPI 1.0.2, pinned in
scripts/test-requirements.txt), on the same shards: the decoded fields,
__url__, and what happens to a field or a shard that cannot be read; and
len() and the padding mark."""

import io
import json
import os
import subprocess
import tarfile
import tempfile
import unittest
import warnings

import numpy as np
import torch
import webdataset as wds

import gdsload

from . import helpers


def write_shard(path, samples):
    """A shard of samples, each a (key, {ext: bytes}) pair."""
    with tarfile.open(path, "w", format=tarfile.USTAR_FORMAT) as tf:
        for key, fields in samples:
            for ext, data in fields.items():
                info = tarfile.TarInfo(f"{key}.{ext}")
                info.size = len(data)
                tf.addfile(info, io.BytesIO(data))


def npy(a):
    buf = io.BytesIO()
    np.save(buf, a)
    return buf.getvalue()


def sample(s, i, cls=None):
    return (f"s{s}-{i:03d}", {"cls": cls if cls is not None else str(i).encode(),
                              "json": json.dumps({"s": s, "i": i, "tags": ["a", i]}).encode(),
                              "npy": npy(np.arange(3, dtype=np.int64) + 10 * i), "txt": f"t{i}".encode()})


class WebDatasetTest(unittest.TestCase):
    def setUp(self):
        # webdataset 1.0.2 leaves shard files open when a pass fails.
        warnings.simplefilter("ignore", ResourceWarning)
        self._tmp = tempfile.TemporaryDirectory()
        self.dir = self._tmp.name

    def tearDown(self):
        self._tmp.cleanup()

    def shards(self, name, counts, bad=None):
        """Shards in folder name; bad: (shard, sample) whose .cls is not a number."""
        d = os.path.join(self.dir, name)
        os.mkdir(d)
        paths = []
        for s, n in enumerate(counts):
            p = os.path.join(d, f"shard-{s:04d}.tar")
            write_shard(p, [sample(s, i, b"seven" if bad == (s, i) else None) for i in range(n)])
            paths.append(p)
        return d, paths

    def test_decoded_fields_and_url_as_webdataset(self):
        d, paths = self.shards("plain", [3, 4])
        ours = {s["__key__"]: s for s in gdsload.ShardDataset(d, shuffle=False)}
        theirs = {s["__key__"]: s for s in wds.WebDataset(paths, shardshuffle=False).decode()}
        self.assertEqual(sorted(ours), sorted(theirs))
        for k, t in theirs.items():
            o = ours[k]
            self.assertEqual(o["__url__"], t["__url__"], k)
            self.assertEqual(o["cls"], t["cls"], k)
            self.assertEqual(o["json"], t["json"], k)
            self.assertTrue(np.array_equal(o["npy"].numpy(), t["npy"]), k)
            self.assertEqual(o["txt"].decode(), t["txt"], "txt stays bytes here; webdataset makes it str")
            self.assertFalse(o["__padding__"])

    def test_a_field_that_does_not_decode(self):
        d, paths = self.shards("badcls", [3, 4], bad=(1, 2))
        with self.assertRaises(Exception) as ref:  # webdataset fails too, from the same ValueError
            list(wds.WebDataset(paths, shardshuffle=False).decode())
        with self.assertRaises(gdsload.DecodeError) as cm:
            list(gdsload.ShardDataset(d, shuffle=False))
        msg = str(cm.exception)
        self.assertIsInstance(cm.exception, ValueError)
        for want in (paths[1], "s1-002", ".cls", "seven", "decode=False", "handler=gdsload.warn_and_continue"):
            self.assertIn(want, msg)
        self.assertIsInstance(cm.exception.__cause__, type(ref.exception.__cause__))
        self.assertIsInstance(cm.exception.__cause__, ValueError)
        # Skip and warn, as webdataset's handler does.
        theirs = [s["__key__"] for s in wds.WebDataset(paths, shardshuffle=False, handler=wds.warn_and_continue).decode(
            handler=wds.warn_and_continue)]
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            ours = [s["__key__"] for s in gdsload.ShardDataset(d, shuffle=False, handler=gdsload.warn_and_continue)]
        self.assertEqual(sorted(ours), sorted(theirs))
        self.assertEqual(len(ours), 6)
        self.assertTrue(any("s1-002" in str(x.message) for x in w), [str(x.message) for x in w])
        raw = {s["__key__"]: s for s in gdsload.ShardDataset(d, decode=False)}
        self.assertEqual(raw["s1-002"]["cls"], b"seven")

    def test_a_shard_that_cannot_be_read_is_skipped_with_a_handler(self):
        d, paths = self.shards("torn", [3, 4, 2])
        with open(paths[1], "r+b") as f:  # cut inside sample 1's .npy (its third member)
            f.truncate(4 * 1024 + 2 * 1024 + 512 + 50)
        with self.assertRaises(Exception) as cm:
            list(gdsload.ShardDataset(d))
        self.assertIn("shard-0001.tar", str(cm.exception))
        env = dict(os.environ, PYTHONPATH=helpers.PYTHON_DIR)
        code = ("import gdsload, json, sys; ds = gdsload.ShardDataset(sys.argv[1], handler=gdsload.warn_and_continue); "
                "print(json.dumps(sorted(s['__key__'] for s in ds)))")
        p = subprocess.run([helpers.sys.executable, "-c", code, d], env=env, capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(json.loads(p.stdout), [f"s0-{i:03d}" for i in range(3)] + [f"s2-{i:03d}" for i in range(2)])
        self.assertIn("skipping shard shard-0001.tar", p.stderr)

    def test_the_order_of_the_cli(self):
        d, _ = self.shards("ordered", [3, 4, 2, 5])
        for args, kwargs in (((), {}), (("--seed", "7"), {"seed": 7}), (("--seed", "7", "--shuffle-buffer", "1KiB"),
                             {"seed": 7, "shuffle_buffer": "1KiB"}), (("--shuffle=false",), {"shuffle": False})):
            with self.subTest(args=args):
                cli = subprocess.run([helpers.gdsload_bin(), "iterate", "--json", *args, d], check=True,
                                     capture_output=True, text=True).stdout.splitlines()
                want = [json.loads(line)["key"] for line in cli if '"key"' in line]
                self.assertEqual(len(want), 14)
                self.assertEqual([s["__key__"] for s in gdsload.ShardDataset(d, **kwargs)], want)

    def test_len_and_padding(self):
        d, paths = self.shards("counted", [3, 4])  # 7 samples
        with self.assertRaises(TypeError):
            len(gdsload.ShardDataset(d))
        subprocess.run([helpers.gdsload_bin(), "manifest", d], check=True, capture_output=True)
        self.assertEqual(len(gdsload.ShardDataset(d, epochs=2)), 14)
        self.assertEqual(len(gdsload.ShardDataset(os.path.join(d, "index.json"))), 7)
        real = []
        for drop in (False, True):
            for rank in (0, 1):
                ds = gdsload.ShardDataset(d, rank=rank, world_size=2, drop_remainder=drop, seed=3)
                got = list(ds)
                self.assertEqual(len(ds), len(got), f"rank {rank} drop {drop}")
                if not drop:
                    real += [s["__key__"] for s in got if not s["__padding__"]]
                    self.assertEqual(sum(s["__padding__"] for s in got), rank, "rank 1 pads the odd sample")
                    self.assertEqual(len(torch.utils.data.DataLoader(ds, batch_size=3)), 2)
        self.assertEqual(sorted(real), sorted(f"s{s}-{i:03d}" for s, n in enumerate([3, 4]) for i in range(n)),
                         "the samples not marked as padding are the dataset, once")


if __name__ == "__main__":
    unittest.main()
