"""load_file, save_file and safe_open against references built with torch
and numpy: every dtype torch and safetensors share, files from the project's
writer and files crafted by hand, the reference writer's layout, and tensors
that are views of gdsload's allocations."""

import gc
import json
import os
import struct
import unittest

import numpy as np
import torch

import gdsload
from gdsload import _dlpack

from . import helpers

# The safetensors dtypes this torch has, with their element sizes.
SHARED = {name: getattr(torch, attr) for name, attr in _dlpack.TORCH_NAMES.items()
          if isinstance(getattr(torch, attr, None), torch.dtype)}
SIZE = {"BOOL": 1, "U8": 1, "I8": 1, "F8_E4M3": 1, "F8_E4M3FNUZ": 1, "F8_E5M2": 1, "F8_E5M2FNUZ": 1, "F8_E8M0": 1,
        "U16": 2, "I16": 2, "F16": 2, "BF16": 2, "U32": 4, "I32": 4, "F32": 4,
        "U64": 8, "I64": 8, "F64": 8, "C64": 8}
INT_OF_SIZE = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}

# The reference writer's dtype order (its Dtype enumeration, "in
# increasing alignment order"), written here independently of the Go
# writer's table.
REFERENCE_ORDER = ["BOOL", "F4", "F6_E2M3", "F6_E3M2", "U8", "I8", "F8_E5M2", "F8_E4M3", "F8_E8M0",
                   "F8_E4M3FNUZ", "F8_E5M2FNUZ", "I16", "U16", "F16", "BF16", "I32", "U32", "F32", "C64",
                   "F64", "I64", "U64"]


def reference(name, shape, seed):
    """A tensor of dtype name built with numpy (torch for what numpy lacks)."""
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape)) if shape else 1
    dt = SHARED[name]
    if name == "BOOL":
        a = torch.from_numpy(rng.random(n) > 0.5)
    elif name in _dlpack.NUMPY_NAMES and name not in ("U16", "U32", "U64"):
        np_dt = np.dtype(_dlpack.NUMPY_NAMES[name])
        if np_dt.kind == "f":
            a = torch.from_numpy(rng.standard_normal(n).astype(np_dt))
        elif np_dt.kind == "c":
            a = torch.from_numpy((rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(np_dt))
        else:
            info = np.iinfo(np_dt)
            a = torch.from_numpy(rng.integers(info.min, info.max, n, dtype=np_dt, endpoint=True))
    else:  # bf16, float8, torch's unsigned types: random bits of the width
        np_int = {1: np.uint8, 2: np.int16, 4: np.int32, 8: np.int64}[SIZE[name]]
        info = np.iinfo(np_int)
        a = torch.from_numpy(rng.integers(info.min, info.max, n, dtype=np_int, endpoint=True)).view(dt)
        if dt.is_floating_point:
            a = torch.nan_to_num(a.float()).to(dt)  # no NaN patterns: equality is bitwise anyway
    return a.reshape(shape).contiguous()


def raw_bytes(t):
    """The tensor's bytes, little-endian, as a file holds them."""
    return t.contiguous().view(INT_OF_SIZE[t.element_size()]).numpy().tobytes() if t.numel() else b""


def same(a, b):
    """Equal dtype, shape and bits."""
    return a.dtype == b.dtype and a.shape == b.shape and raw_bytes(a) == raw_bytes(b)


SHAPES = [(3, 5), (), (0, 4), (2, 3, 4), (7,)]


class CheckpointTest(helpers.TempDirTest):
    def references(self):
        refs = {}
        for i, name in enumerate(sorted(SHARED)):
            for j, shape in enumerate(SHAPES):
                refs[f"{name.lower()}.{j}"] = (name, reference(name, shape, 100 * i + j))
        return refs

    def test_every_shared_dtype_from_the_project_writer(self):
        refs = self.references()
        p = self.path("w.safetensors")
        gdsload.save_file({k: t for k, (_, t) in refs.items()}, p, metadata={"made": "by gdsload"})
        got = gdsload.load_file(p)
        self.assertEqual(set(got), set(refs))
        for k, (name, want) in refs.items():
            self.assertTrue(same(got[k], want), f"{k} ({name}): {got[k]!r} != {want!r}")
        with gdsload.safe_open(p, framework="np") as f:
            self.assertEqual(f.metadata(), {"made": "by gdsload"})
            for k, (name, want) in refs.items():
                if name not in _dlpack.NUMPY_NAMES:
                    with self.assertRaises(ValueError):
                        f.get_tensor(k)
                    continue
                a = f.get_tensor(k)
                self.assertIsInstance(a, np.ndarray)
                self.assertEqual(a.dtype, np.dtype(_dlpack.NUMPY_NAMES[name]))
                self.assertEqual(a.shape, tuple(want.shape))
                self.assertEqual(a.tobytes(), raw_bytes(want), k)

    def test_every_shared_dtype_from_a_hand_made_file(self):
        refs = self.references()
        tensors = [(k, name, tuple(t.shape), raw_bytes(t)) for k, (name, t) in refs.items()]
        for pad in (True, False):  # unpadded: tensors at unaligned addresses
            p = self.path(f"hand-{pad}.safetensors")
            helpers.craft_safetensors(p, tensors, metadata={"pad": str(pad)}, pad=pad)
            got = gdsload.load_file(p)
            for k, (name, want) in refs.items():
                self.assertTrue(same(got[k], want), f"pad={pad} {k} ({name})")
            with gdsload.safe_open(p, framework="pt") as f:
                self.assertEqual(f.keys(), sorted(refs))
                self.assertEqual(f.offset_keys(), list(refs))
                self.assertEqual(f.metadata(), {"pad": str(pad)})
                k = next(iter(refs))
                self.assertEqual(f.get_slice(k).get_shape(), list(refs[k][1].shape))
                self.assertEqual(f.get_slice(k).get_dtype(), refs[k][0])
                self.assertTrue(same(f.get_slice(k)[1:], refs[k][1][1:]))

    def test_dtypes_beyond_this_torch(self):
        # U16 (torch >= 2.3 only) and F4 (packed, no framework views it).
        p = self.path("other.safetensors")
        u16 = np.arange(6, dtype=np.uint16) * 1000
        helpers.craft_safetensors(p, [("u", "U16", (2, 3), u16.tobytes()), ("f4", "F4", (4,), b"\x12\x34")])
        with gdsload.safe_open(p, framework="np") as f:
            self.assertTrue(np.array_equal(f.get_tensor("u"), u16.reshape(2, 3)), "numpy has uint16 whatever torch has")
            with self.assertRaises(ValueError) as cm:
                f.get_tensor("f4")
            self.assertIn("F4", str(cm.exception))
        with self.assertRaises(ValueError) as cm:  # F4 always; U16 too before torch 2.3
            gdsload.load_file(p)
        self.assertRegex(str(cm.exception), "U16" if "U16" not in SHARED else "F4")
        gc.collect()
        self.assertEqual(gdsload.live_allocations(), 0)

    def test_sharded_checkpoint_and_npy(self):
        a, b, c = torch.arange(10, dtype=torch.float32), torch.ones(3, 3, dtype=torch.int64), torch.tensor([1.5], dtype=torch.float16)
        gdsload.save_file({"a": a, "b": b}, self.path("m-1.safetensors"))
        gdsload.save_file({"c": c}, self.path("m-2.safetensors"))
        with open(self.path("m.safetensors.index.json"), "w") as f:
            json.dump({"metadata": {"total_size": 1}, "weight_map": {"a": "m-1.safetensors", "b": "m-1.safetensors", "c": "m-2.safetensors"}}, f)
        stats = gdsload.LoadStats()
        got = gdsload.load_file(self.path("m.safetensors.index.json"), stats=stats)
        self.assertTrue(same(got["a"], a) and same(got["b"], b) and same(got["c"], c))
        self.assertEqual(len(stats.allocations), 2, "one allocation per file")
        self.assertEqual(gdsload.live_allocations(), 2)
        with gdsload.safe_open(self.path("m.safetensors.index.json")) as f:
            self.assertEqual(f.metadata(), {"total_size": "1"}, "the index's metadata, values as strings")
        with gdsload.safe_open(self.path("m-2.safetensors")) as f:
            self.assertIsNone(f.metadata(), "a file without __metadata__")
        del got
        gc.collect()
        self.assertEqual(gdsload.live_allocations(), 0)
        arr = np.arange(24, dtype=np.float64).reshape(2, 3, 4)
        np.save(self.path("w.npy"), arr)
        got = gdsload.load_file(self.path("w.npy"))
        self.assertTrue(np.array_equal(got["w"].numpy(), arr))

    def test_tensors_are_views_of_one_allocation_per_file(self):
        refs = {f"t{i}": torch.randn(64, 33) for i in range(5)}
        p = self.path("v.safetensors")
        gdsload.save_file(refs, p)
        gc.collect()
        base = gdsload.live_allocations()
        stats = gdsload.LoadStats()
        got = gdsload.load_file(p, stats=stats)
        self.assertEqual(stats.route, "host")
        self.assertTrue(stats.reason)
        self.assertGreater(stats.bytes, 0)
        self.assertEqual(gdsload.last_stats().raw, stats.raw)
        self.assertEqual(len(stats.allocations), 1)
        ptr, size, _ = stats.allocations[0]
        self.assertEqual(gdsload.live_allocations(), base + 1)
        for k, t in got.items():
            self.assertTrue(ptr <= t.data_ptr() and t.data_ptr() + t.numel() * t.element_size() <= ptr + size,
                            f"{k} at {t.data_ptr():#x} is outside the allocation [{ptr:#x}, {ptr + size:#x})")
            self.assertTrue(same(t, refs[k]))
        # Writes through one tensor show in the memory the others view:
        # it really is shared, not copied.
        t0 = got["t0"]
        t0[0, 0] = 42.0
        self.assertEqual(gdsload.load_file(p)["t0"][0, 0].item(), refs["t0"][0, 0].item())
        self.assertEqual(t0[0, 0].item(), 42.0)
        keep = got["t3"]
        del got, t0, t
        gc.collect()
        self.assertEqual(gdsload.live_allocations(), base + 1, "one live view keeps the allocation")
        self.assertTrue(same(keep, refs["t3"]))
        del keep
        gc.collect()
        self.assertEqual(gdsload.live_allocations(), base)

    def test_dlpack_protocol(self):
        p = self.path("d.safetensors")
        gdsload.save_file({"x": torch.arange(6, dtype=torch.int32).reshape(2, 3)}, p)
        loaded = gdsload._checkpoint._load(p, "cpu", {})
        try:
            view = loaded.views["x"]
            self.assertEqual(view.__dlpack_device__(), (1, 0))
            legacy = view.__dlpack__()
            versioned = view.__dlpack__(max_version=(1, 0))
            self.assertIn("dltensor", repr(legacy))
            self.assertIn("dltensor_versioned", repr(versioned))
            with self.assertRaises(BufferError):
                view.__dlpack__(dl_device=(2, 0))
            self.assertEqual(gdsload.live_allocations(), 1)
        finally:
            loaded.release()
        del legacy, versioned, view  # never consumed: the capsules free their views
        gc.collect()
        self.assertEqual(gdsload.live_allocations(), 0)

    def test_save_file_layout(self):
        refs = self.references()
        p = self.path("layout.safetensors")
        meta = {"b": "2", "a": "1"}
        before = set(os.listdir(self.dir))
        gdsload.save_file({k: t for k, (_, t) in refs.items()}, p, metadata=meta)
        self.assertEqual(set(os.listdir(self.dir)) - before, {"layout.safetensors"}, "no temporary file is left")
        check_layout(self, p, meta, {k: (name, tuple(t.shape)) for k, (name, t) in refs.items()})
        gdsload.save_file({"only": torch.zeros(2)}, p)  # replaces it whole
        check_layout(self, p, None, {"only": ("F32", (2,))})
        self.assertEqual(list(gdsload.load_file(p)), ["only"])

    def test_save_file_refuses_what_safetensors_refuses(self):
        t = torch.arange(12.0).reshape(3, 4)
        with self.assertRaises(ValueError):
            gdsload.save_file({"t": t.t()}, self.path("x.safetensors"))
        with self.assertRaises(RuntimeError):
            gdsload.save_file({"a": t, "b": t[1:]}, self.path("x.safetensors"))
        with self.assertRaises(ValueError):
            gdsload.save_file({"a": t}, self.path("x.safetensors"), metadata={"k": 1})
        self.assertFalse(os.path.exists(self.path("x.safetensors")))


def check_layout(test, path, metadata, tensors):
    """The reference writer's layout, checked from the bytes: u64 header
    length, a multiple of 8; JSON header padded with spaces; __metadata__
    first; tensors in the reference's dtype order (descending) then by name;
    data offsets from 0 without gaps, each tensor aligned to its element
    size; the data region ending at the end of the file."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack_from("<Q", data, 0)
    test.assertEqual(n % 8, 0, "header length is a multiple of 8")
    text = data[8:8 + n].decode("utf-8")
    test.assertEqual(text.rstrip(" ")[-1], "}")
    test.assertEqual(len(text) - len(text.rstrip(" ")), (-len(text.rstrip(" "))) % 8, "padding is only what alignment needs")
    items = json.loads(text, object_pairs_hook=lambda kv: kv)
    keys = [k for k, _ in items]
    if metadata is not None:
        test.assertEqual(keys[0], "__metadata__")
        test.assertEqual(dict(items[0][1]), metadata)
        items = items[1:]
    else:
        test.assertNotIn("__metadata__", keys)
    rank = {d: i for i, d in enumerate(REFERENCE_ORDER)}
    want_order = sorted(tensors, key=lambda k: (-rank[tensors[k][0]], k))
    test.assertEqual([k for k, _ in items], want_order, "header order")
    off = 0
    for k, v in items:
        v = dict(v)
        dtype, shape = tensors[k]
        test.assertEqual(v["dtype"], dtype)
        test.assertEqual(tuple(v["shape"]), shape)
        begin, end = v["data_offsets"]
        test.assertEqual(begin, off, f"{k} starts where the previous tensor ended")
        count = 1
        for d in shape:
            count *= d
        test.assertEqual(end - begin, count * SIZE[dtype])
        test.assertEqual((8 + n + begin) % SIZE[dtype], 0, f"{k} is aligned to its element size in the file")
        off = end
    test.assertEqual(8 + n + off, len(data), "the data region ends at the end of the file")


if __name__ == "__main__":
    unittest.main()
