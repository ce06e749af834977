"""The GPU path through the CUDA test double (internal/fakecuda, compiled
here with the system C compiler): device="cuda:0" lands the bytes in
(simulated) device memory on the gds or bounce route, DLPack views say
CUDA, save_file's device-pointer path writes them back, the memory is
freed when the last view dies, and Ctrl-C cancels a load without leaks."""

import os
import subprocess
import tempfile
import unittest

from . import helpers

FAKE_SRC = os.path.join(helpers.REPO, "internal", "fakecuda", "csrc", "fakecuda.c")


class FakeGPUTest(unittest.TestCase):
    def test_gpu_loads_through_the_cuda_double(self):
        with tempfile.TemporaryDirectory() as d:
            lib = os.path.join(d, "libfakecuda.so")
            cc = os.environ.get("CC", "gcc")
            subprocess.run([cc, "-shared", "-fPIC", "-O1", "-fvisibility=hidden", "-o", lib, FAKE_SRC, "-lpthread"], check=True)
            names = {"GDSLOAD_LIBCUDART": "libcudart.so.13", "GDSLOAD_LIBCUFILE": "libcufile.so.0", "GDSLOAD_LIBCUDA": "libcuda.so.1"}
            env = {}
            for var, name in names.items():
                os.symlink("libfakecuda.so", os.path.join(d, name))
                env[var] = os.path.join(d, name)
            out = helpers.run_python("gpu_fake_check.py", d, lib, env=env)
        self.assertEqual(len(out["loads"]), 2)
        for one in out["loads"]:
            with self.subTest(gpu_path=one["gpu_path"]):
                self.assertIn(one["route"], ("gds", "bounce"))
                if one["gpu_path"] == "bounce":
                    self.assertEqual(one["route"], "bounce")
                self.assertTrue(one["reason"])
                self.assertEqual(one["devices"], [[2, 0]], "allocations are CUDA device memory")
                self.assertEqual(one["dlpack_device"], [2, 0])
                self.assertTrue(all(one["equal"].values()), one["equal"])
                self.assertTrue(one["saved_equal"], "save from device pointers")
                self.assertEqual(one["live_while_held"], 2, "the GPU load and the CPU load of the saved file")
                self.assertEqual(one["device_allocs_while_held"], 1, "one device allocation per file")
                self.assertEqual(one["live_after"], 0)
                self.assertEqual(one["counters_after"], {c: 0 for c in one["counters_after"]},
                                 "device memory, pinned buffers, streams, events, handles all given back")
        self.assertEqual(out["interrupt"], "KeyboardInterrupt")
        self.assertLess(out["interrupt_seconds"], 5)
        self.assertEqual(out["after_interrupt"], {c: 0 for c in out["after_interrupt"]})
        self.assertEqual(out["live_after_interrupt"], 0)


if __name__ == "__main__":
    unittest.main()
