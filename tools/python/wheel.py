#!/usr/bin/env python3
"""Writes the gpuspans wheel with the standard library alone (no setuptools,
wheel or PyPI): python/gpuspans/*.py plus the given libgpuspans.so, with the
metadata of python/pyproject.toml. Prints the wheel's path.

    python3 tools/python/wheel.py --lib out/python/libgpuspans.so --out out/python
"""

import argparse
import base64
import hashlib
import os
import platform
import re
import sys
import tomllib
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PKG = os.path.join(ROOT, "python", "gpuspans")
EPOCH = (1980, 1, 1, 0, 0, 0)  # fixed timestamps: the same inputs give the same wheel


def record_hash(data):
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lib", required=True, help="libgpuspans.so (go build -buildmode=c-shared ./go/capi)")
    ap.add_argument("--out", required=True, help="directory for the wheel")
    args = ap.parse_args()

    with open(os.path.join(ROOT, "python", "pyproject.toml"), "rb") as f:
        project = tomllib.load(f)["project"]
    name, version = project["name"], project["version"]
    with open(os.path.join(PKG, "__init__.py")) as f:
        m = re.search(r'^__version__ = "([^"]+)"', f.read(), re.M)
    if not m or m.group(1) != version:
        sys.exit(f"wheel.py: python/gpuspans/__init__.py __version__ {m and m.group(1)!r} != pyproject.toml's {version!r}")
    with open(args.lib, "rb") as f:
        lib = f.read()
    if lib[:4] != b"\x7fELF":
        sys.exit(f"wheel.py: {args.lib} is not an ELF shared library")

    # The library is native code, so the wheel is tagged for this platform.
    machine = platform.machine()
    tag = f"py3-none-linux_{machine}"
    dist = f"{name}-{version}.dist-info"
    files = []
    for fn in sorted(os.listdir(PKG)):
        if fn.endswith(".py"):
            with open(os.path.join(PKG, fn), "rb") as f:
                files.append((f"gpuspans/{fn}", f.read(), 0o644))
    files.append(("gpuspans/libgpuspans.so", lib, 0o755))
    metadata = (
        "Metadata-Version: 2.1\n"
        f"Name: {name}\n"
        f"Version: {version}\n"
        f"Summary: {project.get('description', '')}\n"
        f"Requires-Python: {project.get('requires-python', '>=3.8')}\n"
    )
    wheel = f"Wheel-Version: 1.0\nGenerator: gpuspans tools/python/wheel.py\nRoot-Is-Purelib: false\nTag: {tag}\n"
    files += [
        (f"{dist}/METADATA", metadata.encode(), 0o644),
        (f"{dist}/WHEEL", wheel.encode(), 0o644),
        (f"{dist}/top_level.txt", b"gpuspans\n", 0o644),
    ]
    record = "".join(f"{p},{record_hash(d)},{len(d)}\n" for p, d, _ in files) + f"{dist}/RECORD,,\n"
    files.append((f"{dist}/RECORD", record.encode(), 0o644))

    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, f"{name}-{version}-{tag}.whl")
    tmp = path + ".tmp"
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
        for p, data, mode in files:
            info = zipfile.ZipInfo(p, EPOCH)
            info.external_attr = (0o100000 | mode) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data)
    os.replace(tmp, path)
    print(path)


if __name__ == "__main__":
    main()
