"""gdsload's checkpoint face next to the reference library (PyPI
safetensors, pinned in scripts/test-requirements.txt), on the same calls:
the same results, and the same exception classes where a call fails."""

import gc
import unittest

import numpy as np
import safetensors
import safetensors.numpy
import safetensors.torch
import torch

import gdsload

from . import helpers


class ReferenceTest(helpers.TempDirTest):
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

    def same_failure(self, name, ours, theirs):
        """Both calls fail, ours with the reference's class (gdsload's
        SafetensorError where the reference raises its own)."""
        got, want = outcome(ours), outcome(theirs)
        self.assertIsInstance(want, BaseException, f"{name}: the reference accepted it")
        self.assertIsInstance(got, BaseException, f"{name}: gdsload accepted it")
        if isinstance(want, safetensors.SafetensorError):
            self.assertIsInstance(got, gdsload.SafetensorError, f"{name}: {got!r}, reference {want!r}")
        else:
            self.assertIsInstance(got, type(want), f"{name}: {got!r}, reference {want!r}")
        return got

    def test_save_refuses_as_the_reference_does(self):
        t = torch.arange(12.0).reshape(3, 4)
        cases = {
            "not a tensor": ({"a": 1}, None),
            "meta tensor": ({"a": torch.empty(3, device="meta")}, None),
            "shared": ({"a": t, "b": t[1:]}, None),
            "not contiguous": ({"a": t.t()}, None),
            "metadata value": ({"a": t}, {"k": 1}),
            "metadata list": ({"a": t}, [("k", "v")]),
            "not a dict": ([t], None),
            "name not a str": ({1: t}, None),
        }
        for name, (tensors, meta) in cases.items():
            with self.subTest(name):
                p = self.path("x.safetensors")
                self.same_failure(name, lambda: gdsload.save_file(tensors, p, meta),
                                  lambda: safetensors.torch.save_file(tensors, p, meta))
                self.same_failure(name, lambda: gdsload.save(tensors, meta), lambda: safetensors.torch.save(tensors, meta))
        self.same_failure("complex128", lambda: gdsload.save({"a": np.zeros(2, np.complex128)}),
                          lambda: safetensors.numpy.save({"a": np.zeros(2, np.complex128)}))

    def test_save_and_load_bytes(self):
        ts = {"w": torch.randn(3, 5), "i": torch.arange(7, dtype=torch.int64), "h": torch.ones(2, 2, dtype=torch.float16),
              "e": torch.zeros(0, 3)}
        meta = {"format": "pt"}
        ours, theirs = gdsload.save(ts, meta), safetensors.torch.save(ts, meta)
        self.assertIsInstance(ours, bytes)
        self.assertEqual(ours, theirs, "the same bytes as the reference writer")
        for data in (ours, bytearray(theirs)):
            got = gdsload.load(data)
            self.assertEqual(set(got), set(ts))
            for k in ts:
                self.assertTrue(torch.equal(got[k], ts[k]), k)
        for bad in (b"AAAAAAAA{", b"AB", ours[:-3]):
            self.same_failure(repr(bad[:10]), lambda: gdsload.load(bad), lambda: safetensors.torch.load(bad))

    def test_numpy_face(self):
        a = np.arange(6, dtype=np.float32).reshape(2, 3)
        big = np.arange(5, dtype=">i4")
        arrays = {"x": a, "y": a, "big": big}
        self.assertEqual(gdsload.save(arrays), safetensors.numpy.save(arrays),
                         "one array under two names and a big-endian array: the reference's bytes")
        # A strided array is saved in C order, as np.ascontiguousarray
        # makes it (safetensors 0.8's numpy face writes its buffer's
        # order under the transposed shape, so it reads back other values).
        strided = np.arange(12, dtype=np.int16).reshape(3, 4).T
        arrays["strided"] = strided
        p = self.path("np.safetensors")
        gdsload.save_file(arrays, p)
        self.assertTrue(np.array_equal(safetensors.numpy.load_file(p)["strided"], strided))
        del arrays["strided"]
        want = safetensors.numpy.load_file(p)
        with gdsload.safe_open(p, framework="np") as f:
            for k, v in want.items():
                got = f.get_tensor(k)
                self.assertEqual(got.dtype, v.dtype, k)
                self.assertTrue(np.array_equal(got, v), k)
        self.assertEqual(want["big"].dtype, np.dtype("<i4"))
        self.assertTrue(np.array_equal(want["big"], big))

    def test_safe_open_as_the_reference(self):
        ts = {"a": torch.arange(6.0).reshape(2, 3), "b": torch.ones(4, dtype=torch.int32)}
        blob = self.path("sha256-9f86d081884c7d65")  # a content-addressed name, no extension
        safetensors.torch.save_file(ts, blob, {"k": "v"})
        got, want = gdsload.load_file(blob), safetensors.torch.load_file(blob)
        self.assertEqual(set(got), set(want))
        for k in want:
            self.assertTrue(torch.equal(got[k], want[k]), k)
        del got
        for fw in ("pt", "np"):
            f, g = gdsload.safe_open(blob, framework=fw), safetensors.safe_open(blob, framework=fw)
            with f, g:
                self.assertEqual(list(f.keys()), list(g.keys()))
                self.assertEqual(list(f.offset_keys()), list(g.offset_keys()))
                self.assertEqual(f.metadata(), g.metadata())
                self.same_failure(f"{fw} missing", lambda: f.get_tensor("zz"), lambda: g.get_tensor("zz"))
                self.same_failure(f"{fw} missing slice", lambda: f.get_slice("zz"), lambda: g.get_slice("zz"))
                self.same_failure(f"{fw} slice out of range", lambda: f.get_slice("a")[5], lambda: g.get_slice("a")[5])
                self.assertTrue(np.array_equal(np.asarray(f.get_slice("a")[1:, 1]), np.asarray(g.get_slice("a")[1:, 1])))
            for m in ("keys", "offset_keys", "metadata"):
                self.same_failure(f"{fw} closed {m}", getattr(f, m), getattr(g, m))
            self.same_failure(f"{fw} closed get_tensor", lambda: f.get_tensor("a"), lambda: g.get_tensor("a"))
            self.same_failure(f"{fw} closed get_slice", lambda: f.get_slice("a"), lambda: g.get_slice("a"))
        self.same_failure("np on cuda", lambda: gdsload.safe_open(blob, framework="np", device="cuda:0"),
                          lambda: safetensors.safe_open(blob, framework="np", device="cuda:0"))
        with open(self.path("corrupt"), "wb") as f:
            f.write(b"AAAAAAAA{")
        # A name that says nothing and bytes that are no checkpoint.
        err = self.same_failure("corrupt", lambda: gdsload.load_file(self.path("sha256-0")),
                                lambda: safetensors.torch.load_file(self.path("sha256-0")))
        self.assertIsInstance(err, FileNotFoundError)
        with open(self.path("c.safetensors"), "wb") as f:
            f.write(b"AAAAAAAA{")
        err = self.same_failure("corrupt", lambda: gdsload.load_file(self.path("c.safetensors")),
                                lambda: safetensors.torch.load_file(self.path("c.safetensors")))
        self.assertIsInstance(err, ValueError, "still a ValueError, as gdsload raised before")
        gc.collect()
        self.assertEqual(gdsload.live_allocations(), 0)


def outcome(f):
    """f()'s result, or the exception it raised."""
    try:
        return f()
    except Exception as e:  # the test compares it
        return e


if __name__ == "__main__":
    unittest.main()
