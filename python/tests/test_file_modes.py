"""save_file replaces a file as open(path, "wb") would: the file keeps its
permission bits, and a path that is a symbolic link writes its target and
stays a link."""

import os
import stat
import tempfile
import unittest

import torch

import gdsload


class SaveFileModes(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.tensors = {"w": torch.arange(1000, dtype=torch.float32)}

    def tearDown(self):
        self.dir.cleanup()

    def path(self, name):
        return os.path.join(self.dir.name, name)

    def test_overwrite_keeps_mode(self):
        p = self.path("m.safetensors")
        gdsload.save_file({"old": torch.zeros(3)}, p)
        os.chmod(p, 0o600)
        gdsload.save_file(self.tensors, p)
        self.assertEqual(stat.S_IMODE(os.stat(p).st_mode), 0o600)
        self.assertTrue(torch.equal(gdsload.load_file(p)["w"], self.tensors["w"]))

    def test_symlink_writes_its_target(self):
        os.mkdir(self.path("store"))
        target = self.path("store/blob.safetensors")
        gdsload.save_file({"old": torch.zeros(3)}, target)
        link = self.path("m.safetensors")
        os.symlink("store/blob.safetensors", link)
        gdsload.save_file(self.tensors, link)
        self.assertTrue(os.path.islink(link), "the link stays a link")
        self.assertEqual(list(gdsload.load_file(target)), ["w"])


if __name__ == "__main__":
    unittest.main()
