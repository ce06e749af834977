"""Bounded host memory: loading a 2 GiB checkpoint into a GPU (the CUDA
test double, whose device memory stays out of the resident set as a
GPU's does) stages it through gdsload's ring, so the process's peak
resident set (VmHWM) stays under 256 MiB."""

import json
import os
import struct
import subprocess
import tempfile
import unittest

from . import helpers

FAKE_SRC = os.path.join(helpers.REPO, "internal", "fakecuda", "csrc", "fakecuda.c")
SIZE = 2 << 30


def write_sparse_checkpoint(path, n):
    """One U8 tensor of n bytes whose data region is a hole: made at once."""
    header = json.dumps({"w": {"dtype": "U8", "shape": [n], "data_offsets": [0, n]}}).encode()
    header += b" " * (-len(header) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(header)) + header)
        f.truncate(8 + len(header) + n)


class GPURSSTest(unittest.TestCase):
    def test_peak_rss_of_a_2gib_gpu_load(self):
        with tempfile.TemporaryDirectory() as d:
            lib = os.path.join(d, "libfakecuda.so")
            cc = os.environ.get("CC", "gcc")
            subprocess.run([cc, "-shared", "-fPIC", "-O1", "-fvisibility=hidden", "-o", lib, FAKE_SRC, "-lpthread"], check=True)
            env = {"FAKECUDA_MEM": str(4 << 30), "FAKECUDA_DELAY_US": "0"}
            for var, name in {"GDSLOAD_LIBCUDART": "libcudart.so.13", "GDSLOAD_LIBCUFILE": "libcufile.so.0",
                              "GDSLOAD_LIBCUDA": "libcuda.so.1"}.items():
                os.symlink("libfakecuda.so", os.path.join(d, name))
                env[var] = os.path.join(d, name)
            ckpt = os.path.join(d, "big.safetensors")
            write_sparse_checkpoint(ckpt, SIZE)
            for gpu_path in ("auto", "bounce"):
                with self.subTest(gpu_path=gpu_path):
                    out = helpers.run_python("gpu_rss_check.py", ckpt, gpu_path, env=env)
                    self.assertEqual(out["bytes"], SIZE)
                    self.assertEqual(out["devices"], [[2, 0]], "CUDA device memory")
                    self.assertLess(out["vmhwm_kib"] << 10, 256 << 20, f"peak RSS {out['vmhwm_kib'] >> 10} MiB")


if __name__ == "__main__":
    unittest.main()
