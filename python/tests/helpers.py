"""Shared helpers of the Python tests: the repository, the gdsload CLI,
subprocesses, WebDataset shards and hand-made safetensors files."""

import gc
import io
import json
import os
import struct
import subprocess
import sys
import tarfile
import tempfile
import threading
import unittest

REPO = os.environ.get("GDSLOAD_REPO") or os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PYTHON_DIR = os.path.join(REPO, "python")

_bin_lock = threading.Lock()
_bin_dir = None


def gdsload_bin():
    """The gdsload CLI: $GDSLOAD_BIN (make test passes bin/gdsload), else
    built once for this test run."""
    global _bin_dir
    env = os.environ.get("GDSLOAD_BIN")
    if env:
        return env if os.path.isabs(env) else os.path.join(REPO, env)
    with _bin_lock:
        if _bin_dir is None:
            _bin_dir = tempfile.mkdtemp(prefix="gdsload-pytest-bin-")
            subprocess.run(["go", "build", "-o", os.path.join(_bin_dir, "gdsload"), "./cmd/gdsload"], cwd=REPO, check=True)
    return os.path.join(_bin_dir, "gdsload")


def run_python(script, *args, env=None, timeout=300):
    """Runs a Python file of the tests in a fresh interpreter (so gdsload's
    runtime starts there, not here) and returns the JSON it printed last."""
    e = dict(os.environ)
    e["PYTHONPATH"] = PYTHON_DIR + (os.pathsep + e["PYTHONPATH"] if e.get("PYTHONPATH") else "")
    e.update(env or {})
    p = subprocess.run([sys.executable, os.path.join(os.path.dirname(__file__), script), *map(str, args)],
                       env=e, capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        raise AssertionError(f"{script} {args} exited {p.returncode}\nstdout:\n{p.stdout}\nstderr:\n{p.stderr}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def write_shards(directory, counts, prefix="shard"):
    """Writes one WebDataset shard per count with Python's tarfile; sample i
    of shard s has key "s<s>-<i>" and members .txt (the key), .cls (i) and
    .npy (an int32 array [s, i, s*1000+i]). Returns every key."""
    import numpy as np

    keys = []
    for s, n in enumerate(counts):
        path = os.path.join(directory, f"{prefix}-{s:04d}.tar")
        with tarfile.open(path, "w", format=tarfile.USTAR_FORMAT) as tf:
            for i in range(n):
                key = f"s{s}-{i:04d}"
                keys.append(key)
                buf = io.BytesIO()
                np.save(buf, np.array([s, i, s * 1000 + i], dtype=np.int32))
                for ext, data in (("txt", key.encode()), ("cls", str(i).encode()), ("npy", buf.getvalue())):
                    info = tarfile.TarInfo(f"{key}.{ext}")
                    info.size = len(data)
                    info.mtime = 0
                    tf.addfile(info, io.BytesIO(data))
    return keys


def craft_safetensors(path, tensors, metadata=None, order=None, pad=True):
    """Writes a safetensors file by hand: tensors is a list of (name, dtype,
    shape, raw bytes) laid out in that order; order lists the names in the
    header's key order (default: reversed, unlike the data); pad pads the
    header with spaces to 8 bytes, as the reference writer does (a reader
    must accept either)."""
    header = {}
    if metadata is not None:
        header["__metadata__"] = metadata
    entries, off = {}, 0
    for name, dtype, shape, raw in tensors:
        entries[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [off, off + len(raw)]}
        off += len(raw)
    for name in (order or [t[0] for t in reversed(tensors)]):
        header[name] = entries[name]
    text = json.dumps(header, separators=(",", ":")).encode()
    if pad:
        text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for _, _, _, raw in tensors:
            f.write(raw)


class Server:
    """`gdsload serve` on an ephemeral loopback port, exporting root."""

    def __init__(self, root, token_file):
        self.proc = subprocess.Popen([gdsload_bin(), "serve", "--root", root, "--listen", "127.0.0.1:0",
                                      "--token-file", token_file],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        if not line.startswith("listening on "):
            self.close()
            raise AssertionError(f"gdsload serve printed {line!r}: {self.proc.stderr.read()}")
        self.addr = line.split()[-1]

    def close(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for f in (self.proc.stdout, self.proc.stderr):
            f.close()


class TempDirTest(unittest.TestCase):
    """A test case with a temporary folder, self.dir, removed after each
    test (after a garbage collection, so that handles still open on its
    files are closed first)."""

    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory()
        self.dir = self._tmp.name

    def tearDown(self):
        gc.collect()
        self._tmp.cleanup()

    def path(self, name):
        return os.path.join(self.dir, name)
