"""gdsload's checkpoint face next to the reference library (PyPI
safetensors, pinned in scripts/test-requirements.txt), on the same calls:
the same results, and the same exception classes where a call fails."""

import gc
import os
import tempfile
import unittest

import numpy as np
import safetensors
import safetensors.numpy
import safetensors.torch
import torch

import gdsload


class ReferenceTest(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory()
        self.dir = self._tmp.name

    def tearDown(self):
        gc.collect()
        self._tmp.cleanup()

    def path(self, name):
        return os.path.join(self.dir, name)

    def test_a_file_without_tensors(self):
        ours, theirs = self.path("ours.safetensors"), self.path("theirs.safetensors")
        gdsload.save_file({}, ours)
        safetensors.torch.save_file({}, theirs)
        for p in (ours, theirs):
            self.assertEqual(gdsload.load_file(p), safetensors.torch.load_file(p), p)
            self.assertEqual(gdsload.load_file(p), {})
            with gdsload.safe_open(p, framework="pt") as f, safetensors.safe_open(p, framework="pt") as g:
                self.assertEqual(list(f.keys()), list(g.keys()))
                self.assertEqual(f.metadata(), g.metadata())
        self.assertEqual(gdsload.live_allocations(), 0)


if __name__ == "__main__":
    unittest.main()
