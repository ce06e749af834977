"""A small PEP 517 build backend for the gdsload Python package, and the
wheel builder behind `make wheel`.

The package is pure Python over ctypes plus one prebuilt shared library,
libgdsload.so (`make python` builds it into python/gdsload/), so a wheel
is a zip of those files: no compiler and no build requirements, which is
what lets `pip install ./python` work without any package index. The wheel
is tagged py3-none-manylinux_2_34_<arch> after checking with objdump -T
that the library needs no glibc symbol newer than 2.34.
"""

import base64
import hashlib
import os
import platform
import re
import subprocess
import sys
import zipfile

NAME = "gdsload"
HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # python/
PACKAGE = os.path.join(HERE, NAME)
LIBRARY = "libgdsload.so"
GLIBC_MAX = (2, 34)


def version():
    with open(os.path.join(PACKAGE, "__init__.py")) as f:
        m = re.search(r'^__version__ = "([^"]+)"', f.read(), re.M)
    return m.group(1)


def glibc_versions(library):
    """The GLIBC_x.y symbol versions library needs, from objdump -T."""
    try:
        out = subprocess.run(["objdump", "-T", library], check=True, capture_output=True, text=True).stdout
    except FileNotFoundError:
        raise SystemExit("gdsload wheel: objdump not found; install binutils to check the glibc symbols")
    return sorted({tuple(int(x) for x in v.split(".")) for v in re.findall(r"GLIBC_([0-9]+(?:\.[0-9]+)+)", out)})


def check_glibc(library):
    vs = glibc_versions(library)
    if not vs:
        raise SystemExit(f"gdsload wheel: objdump -T found no glibc symbols in {library}")
    newest = vs[-1]
    if newest > GLIBC_MAX:
        raise SystemExit(f"gdsload wheel: {library} needs GLIBC_{'.'.join(map(str, newest))}, newer than the "
                         f"wheel's manylinux_{GLIBC_MAX[0]}_{GLIBC_MAX[1]} tag allows; build on an older glibc")
    return newest


def tag():
    arch = platform.machine()
    return f"py3-none-manylinux_{GLIBC_MAX[0]}_{GLIBC_MAX[1]}_{arch}"


def _files():
    lib = os.path.join(PACKAGE, LIBRARY)
    if not os.path.exists(lib):
        raise SystemExit(f"gdsload wheel: {lib} is missing; run 'make python' first")
    out = []
    for name in sorted(os.listdir(PACKAGE)):
        if name.endswith(".py") or name == LIBRARY:
            out.append((os.path.join(PACKAGE, name), f"{NAME}/{name}"))
    return out, lib


def _metadata():
    return (f"Metadata-Version: 2.1\nName: {NAME}\nVersion: {version()}\n"
            "Summary: Checkpoints and WebDataset shards into PyTorch and numpy through gdsload, without a copy\n"
            "Requires-Python: >=3.9\n")


def build(directory):
    """Writes the wheel into directory and returns its file name."""
    files, lib = _files()
    check_glibc(lib)
    dist = f"{NAME}-{version()}.dist-info"
    wheel_name = f"{NAME}-{version()}-{tag()}.whl"
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, wheel_name)
    records = []

    def add(zf, arc, data, mode=0o644):
        info = zipfile.ZipInfo(arc, date_time=(2020, 1, 1, 0, 0, 0))
        info.external_attr = (0o100000 | mode) << 16
        info.compress_type = zipfile.ZIP_DEFLATED
        zf.writestr(info, data)
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        records.append(f"{arc},sha256={digest},{len(data)}")

    tmp = path + ".tmp"
    with zipfile.ZipFile(tmp, "w") as zf:
        for src, arc in files:
            with open(src, "rb") as f:
                add(zf, arc, f.read(), 0o755 if arc.endswith(".so") else 0o644)
        add(zf, f"{dist}/METADATA", _metadata().encode())
        add(zf, f"{dist}/WHEEL", (f"Wheel-Version: 1.0\nGenerator: gdsload_build\nRoot-Is-Purelib: false\nTag: {tag()}\n").encode())
        records.append(f"{dist}/RECORD,,")
        info = zipfile.ZipInfo(f"{dist}/RECORD", date_time=(2020, 1, 1, 0, 0, 0))
        info.external_attr = 0o100644 << 16
        zf.writestr(info, "\n".join(records) + "\n")
    os.replace(tmp, path)
    return wheel_name


# PEP 517 hooks.

def get_requires_for_build_wheel(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    return build(wheel_directory)


def get_requires_for_build_editable(config_settings=None):
    return []


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    return build(wheel_directory)


if __name__ == "__main__":
    out = sys.argv[1] if len(sys.argv) > 1 else "dist"
    name = build(out)
    print(os.path.join(out, name))
