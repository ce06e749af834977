"""Packaging: `make wheel`'s builder tags the wheel for glibc 2.34+ after
objdump -T, and both the wheel and `pip install ./python` install a package
that works outside the repository, with no package index."""

import os
import subprocess
import sys
import tempfile
import unittest
import zipfile

from . import helpers

BUILDER = os.path.join(helpers.PYTHON_DIR, "_build", "gdsload_build.py")


def run(*args, **kw):
    p = subprocess.run(args, capture_output=True, text=True, **kw)
    if p.returncode != 0:
        raise AssertionError(f"{' '.join(args)} exited {p.returncode}\n{p.stdout}\n{p.stderr}")
    return p.stdout.strip()


def clean_env():
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "GDSLOAD_LIBRARY")}
    env["PIP_NO_INDEX"] = "1"
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


class PackagingTest(unittest.TestCase):
    def test_wheel_and_source_install(self):
        with tempfile.TemporaryDirectory() as d:
            out = run(sys.executable, BUILDER, os.path.join(d, "dist"))
            wheel = os.path.basename(out)
            self.assertRegex(wheel, r"^gdsload-[0-9.]+-py3-none-manylinux_2_34_[a-z0-9_]+\.whl$")
            with zipfile.ZipFile(out) as zf:
                names = zf.namelist()
                self.assertIn("gdsload/libgdsload.so", names)
                self.assertIn("gdsload/__init__.py", names)
                record = zf.read(next(n for n in names if n.endswith("dist-info/RECORD"))).decode()
                for n in names:
                    self.assertIn(n + ",", record)
            sys.path.insert(0, os.path.dirname(BUILDER))
            try:
                import gdsload_build
            finally:
                sys.path.pop(0)
            newest = gdsload_build.glibc_versions(os.path.join(helpers.PYTHON_DIR, "gdsload", "libgdsload.so"))[-1]
            self.assertLessEqual(newest, (2, 34), "objdump -T: no glibc symbol newer than the tag")

            venv = os.path.join(d, "venv")
            env = clean_env()
            # No pip inside the venv (ensurepip is slow): this interpreter's
            # pip installs into it.
            run(sys.executable, "-m", "venv", "--without-pip", "--system-site-packages", venv, env=env)
            py = os.path.join(venv, "bin", "python")
            probe = ("import gdsload, torch, sys; p = sys.argv[1]; gdsload.save_file({'x': torch.arange(3)}, p); "
                     "print(gdsload.__file__); assert gdsload.load_file(p)['x'].tolist() == [0, 1, 2]")
            for source in (out, helpers.PYTHON_DIR):
                with self.subTest(source=source):
                    run(sys.executable, "-m", "pip", "--python", py, "install", "--quiet", "--no-index",
                        "--force-reinstall", source, env=env, cwd=d)
                    got = run(py, "-c", probe, os.path.join(d, "x.safetensors"), env=env, cwd=d)
                    self.assertTrue(got.startswith(venv), f"imported from {got}, not the venv")


if __name__ == "__main__":
    unittest.main()
