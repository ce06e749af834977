"""Errors become the right Python exceptions, never a crashed interpreter:
a missing file, a corrupt file (with the CLI's message), a wrong rdmafs
token, and a forked child of a process whose gdsload runtime started."""

import errno
import gc
import os
import struct
import subprocess
import unittest

import torch

import gdsload

from . import helpers


class ErrorsTest(helpers.TempDirTest):
    def test_missing_file(self):
        for p in (self.path("absent.safetensors"), self.path("absent-dir")):
            with self.assertRaises(FileNotFoundError) as cm:
                gdsload.load_file(p)
            self.assertIn("absent", str(cm.exception))
        # A sharded checkpoint whose index names a shard that is gone.
        gdsload.save_file({"a": torch.zeros(2)}, self.path("m-1.safetensors"))
        with open(self.path("m.safetensors.index.json"), "w") as f:
            f.write('{"weight_map": {"a": "m-1.safetensors", "b": "m-2.safetensors"}}')
        with self.assertRaises(FileNotFoundError) as cm:
            gdsload.load_file(self.path("m.safetensors.index.json"))
        self.assertIn("m-2.safetensors", str(cm.exception))
        self.assertEqual(gdsload.live_allocations(), 0)

    def test_corrupt_file_has_the_cli_message(self):
        cases = {
            "huge-header.safetensors": b"AAAAAAAA{",
            "no-shape.safetensors": struct.pack("<Q", 20) + b'{"a":{"dtype":"F32"}',
            "gap.safetensors": (lambda h: struct.pack("<Q", len(h)) + h + b"\0" * 12)(
                b'{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}}'),
            "short.safetensors": (lambda h: struct.pack("<Q", len(h)) + h + b"\0" * 3)(
                b'{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}'),
            "bad.npy": b"\x93NUMPY\x01\x00\x10\x00{'descr': 'x'  \n",
        }
        for name, data in cases.items():
            p = self.path(name)
            with open(p, "wb") as f:
                f.write(data)
            with self.assertRaises(ValueError, msg=name) as cm:
                gdsload.load_file(p)
            cli = subprocess.run([helpers.gdsload_bin(), "load", "--to", "host", p], capture_output=True, text=True)
            self.assertEqual(cli.returncode, 1, cli.stderr)
            self.assertEqual("gdsload: " + str(cm.exception), cli.stderr.strip(), name)
        with self.assertRaises(ValueError):
            gdsload.load_file(self.path("huge-header.safetensors"), device="tpu:0")
        self.assertEqual(gdsload.live_allocations(), 0)

    def test_save_to_a_url_is_refused(self):
        # Run from the temporary folder: a URL taken for a local path would
        # make "s3:" there. One that exists already is not written into.
        old = os.getcwd()
        os.chdir(self.dir)
        try:
            for url in ("s3://models/x.safetensors", "rdmafs://127.0.0.1:7420/x.safetensors", "s3://models/x.safetensors"):
                with self.assertRaises(ValueError, msg=url) as cm:
                    gdsload.save_file({"a": torch.zeros(2)}, url)
                self.assertIn(url, str(cm.exception))
                self.assertIn("only local paths", str(cm.exception))
                self.assertEqual(sorted(os.listdir(self.dir)), ["s3:"] if os.path.exists("s3:") else [])
                os.makedirs(os.path.join("s3:", "models"), exist_ok=True)
            self.assertEqual(os.listdir(os.path.join("s3:", "models")), [])
        finally:
            os.chdir(old)

    def test_system_errors_keep_their_errno(self):
        t = {"a": torch.zeros(2)}
        os.mkdir(self.path("ckpt"))
        with self.assertRaises(IsADirectoryError) as cm:
            gdsload.save_file(t, self.path("ckpt"))
        self.assertEqual(cm.exception.errno, errno.EISDIR)
        self.assertIn(self.path("ckpt"), str(cm.exception))
        self.assertNotIn("renaming  to", str(cm.exception))
        with open(self.path("plain"), "w") as f:
            f.write("x")
        with self.assertRaises(NotADirectoryError) as cm:
            gdsload.save_file(t, self.path("plain/x.safetensors"))
        self.assertEqual(cm.exception.errno, errno.ENOTDIR)
        self.assertIn("plain", str(cm.exception))
        with self.assertRaises(NotADirectoryError):
            gdsload.load_file(self.path("plain/x.safetensors"))
        self.assertEqual(sorted(os.listdir(self.dir)), ["ckpt", "plain"])
        self.assertEqual(os.listdir(self.path("ckpt")), [])

    def test_gpu_that_is_not_there(self):
        p = self.path("g.safetensors")
        gdsload.save_file({"a": torch.zeros(4)}, p)
        stats = gdsload.LoadStats()
        try:
            got = gdsload.load_file(p, device="cuda:0", stats=stats)
        except RuntimeError as e:  # no GPU here: the reason says what is missing
            self.assertIn("no GPU", str(e))
        else:  # a machine with a GPU: it took a GPU route
            self.assertIn(stats.route, ("gds", "bounce"))
            del got
        gc.collect()
        self.assertEqual(gdsload.live_allocations(), 0)

    def test_rdmafs_token(self):
        token = "a-shared-secret-of-enough-length-0123456789"
        tf = self.path("token")
        with open(tf, "w") as f:
            f.write(token)
        os.chmod(tf, 0o600)
        root = self.path("export")
        os.mkdir(root)
        want = {"w": torch.randn(100, 7), "i": torch.arange(5)}
        gdsload.save_file(want, os.path.join(root, "m.safetensors"))
        os.mkdir(os.path.join(root, "data"))
        keys = helpers.write_shards(os.path.join(root, "data"), [3, 4])
        srv = helpers.Server(root, tf)
        try:
            url = f"rdmafs://{srv.addr}/m.safetensors"
            with self.assertRaises(PermissionError) as cm:
                gdsload.load_file(url, token="the-wrong-secret-of-enough-length-987654321")
            self.assertIn("authentication", str(cm.exception))
            stats = gdsload.LoadStats()
            got = gdsload.load_file(url, token=token, stats=stats)
            self.assertEqual(set(got), set(want))
            for k in want:
                self.assertTrue(torch.equal(got[k], want[k]), k)
            self.assertEqual(stats.checkpoint, url)
            with self.assertRaises(FileNotFoundError):
                gdsload.load_file(f"rdmafs://{srv.addr}/absent.safetensors", token=token)
            # A dataset on the server iterates as a local one does.
            data = f"rdmafs://{srv.addr}/data"
            got_keys = [s["__key__"] for s in gdsload.ShardDataset(data, token=token)]
            self.assertEqual(sorted(got_keys), sorted(keys))
            self.assertEqual(got_keys, [s["__key__"] for s in gdsload.ShardDataset(os.path.join(root, "data"))],
                             "the same order as from the disk")
            with self.assertRaises(PermissionError):
                list(gdsload.ShardDataset(data, token="the-wrong-secret-of-enough-length-987654321"))
        finally:
            srv.close()
        del got
        gc.collect()
        self.assertEqual(gdsload.live_allocations(), 0)

    def test_forked_child_of_a_started_parent_is_refused(self):
        out = helpers.run_python("fork_check.py", self.dir)
        self.assertEqual(out["parent"], "loaded")
        self.assertEqual(out["child"], "ForkError")
        self.assertIn('multiprocessing_context="spawn"', out["message"])
        self.assertEqual(out["child_views"], "ok", "tensors inherited from the parent still work in the child")


if __name__ == "__main__":
    unittest.main()
