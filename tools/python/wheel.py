#!/usr/bin/env python3
"""Writes the gpuspans wheel with the standard library alone (no setuptools,
wheel or auditwheel): python/gpuspans/*.py and py.typed plus the given
libgpuspans.so and compiled span calls (_hot.abi3.so, tools/python/hot.sh),
stripped of their symbol tables if they have one (with binutils' strip),
with the metadata of python/pyproject.toml and the package's docstring as
its description. The tag is cp38-abi3-manylinux_2_<N>_<arch>: the
extension is built on the stable ABI of CPython 3.8 (Py_LIMITED_API in
_hot.c, checked here), and glibc 2.N is the newest glibc symbol version
either file needs, read from their ELF version-needs sections. Without
--hot the wheel is py3-none (the package falls back to ctypes). Prints the
wheel's path.

    python3 tools/python/wheel.py --lib out/python/libgpuspans.so --hot out/python/_hot.abi3.so --out out/python
"""

import argparse
import ast
import base64
import hashlib
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import tomllib
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PKG = os.path.join(ROOT, "python", "gpuspans")
EPOCH = (1980, 1, 1, 0, 0, 0)  # fixed timestamps: the same inputs give the same wheel


SHT_SYMTAB = 2
SHT_GNU_VERNEED = 0x6FFFFFFE
MACHINES = {62: "x86_64", 183: "aarch64"}  # ELF e_machine -> wheel platform arch


class ELF:
    """What the wheel needs of an ELF64 little-endian shared library: its
    architecture, whether it has a symbol table, and the symbol versions
    it needs (library -> versions), from its section headers."""

    def __init__(self, data):
        if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
            raise ValueError("not a 64-bit little-endian ELF file")
        (e_machine,) = struct.unpack_from("<H", data, 0x12)
        (e_shoff,) = struct.unpack_from("<Q", data, 0x28)
        e_shentsize, e_shnum, e_shstrndx = struct.unpack_from("<HHH", data, 0x3A)
        if e_shoff == 0 or e_shnum == 0 or e_shoff + e_shnum * e_shentsize > len(data):
            raise ValueError("no section headers")
        # (type, offset, size, link, info) of each section.
        secs = []
        for i in range(e_shnum):
            _, sh_type, _, _, sh_offset, sh_size, sh_link, sh_info = struct.unpack_from(
                "<IIQQQQII", data, e_shoff + i * e_shentsize)
            secs.append((sh_type, sh_offset, sh_size, sh_link, sh_info))
        self.machine = MACHINES.get(e_machine, f"elf-machine-{e_machine}")
        self.has_symtab = any(t == SHT_SYMTAB for t, *_ in secs)
        self.needs = {}
        for t, off, size, link, count in secs:
            if t != SHT_GNU_VERNEED:
                continue
            strtab = secs[link][1]
            name = lambda at: data[strtab + at:data.index(b"\0", strtab + at)].decode()  # noqa: E731
            for _ in range(count):
                _, vn_cnt, vn_file, vn_aux, vn_next = struct.unpack_from("<HHIII", data, off)
                aux = off + vn_aux
                versions = self.needs.setdefault(name(vn_file), set())
                for _ in range(vn_cnt):
                    _, _, _, vna_name, vna_next = struct.unpack_from("<IHHII", data, aux)
                    versions.add(name(vna_name))
                    aux += vna_next
                off += vn_next

    def glibc(self):
        """The newest glibc the library needs, as (2, N)."""
        found = [(int(m.group(1)), int(m.group(2)))
                 for vs in self.needs.values() for v in vs
                 if (m := re.fullmatch(r"GLIBC_(\d+)\.(\d+)(?:\.\d+)?", v))]
        if not found:
            raise ValueError("needs no glibc symbol version: not a glibc build")
        return max(found)


def stripped(path, lib):
    """lib without its symbol table (strip --strip-unneeded; the dynamic
    symbols ctypes and the importer look up stay), or lib when it has none."""
    if not ELF(lib).has_symtab:
        return lib
    strip = shutil.which("strip")
    if strip is None:
        sys.exit(f"wheel.py: {path} has a symbol table and no strip is on PATH: install binutils, "
                 "or build with go build -ldflags='-s -w'")
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, os.path.basename(path))
        subprocess.run([strip, "--strip-unneeded", "-o", out, path], check=True)
        with open(out, "rb") as f:
            return f.read()


def record_hash(data):
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lib", required=True, help="libgpuspans.so (go build -buildmode=c-shared ./go/capi)")
    ap.add_argument("--hot", help="_hot.abi3.so (tools/python/hot.sh); without it, a wheel of the ctypes path only")
    ap.add_argument("--out", required=True, help="directory for the wheel")
    args = ap.parse_args()

    with open(os.path.join(ROOT, "python", "pyproject.toml"), "rb") as f:
        project = tomllib.load(f)["project"]
    name, version = project["name"], project["version"]
    with open(os.path.join(PKG, "__init__.py")) as f:
        m = re.search(r'^__version__ = "([^"]+)"', f.read(), re.M)
    if not m or m.group(1) != version:
        sys.exit(f"wheel.py: python/gpuspans/__init__.py __version__ {m and m.group(1)!r} != pyproject.toml's {version!r}")
    natives = {"libgpuspans.so": args.lib}
    if args.hot:
        natives["_hot.abi3.so"] = args.hot
        with open(os.path.join(PKG, "_hot.c")) as f:
            m = re.search(r"^#define Py_LIMITED_API (0x[0-9A-Fa-f]{8})$", f.read(), re.M)
        if not m or m.group(1).lower() != "0x03080000":
            sys.exit("wheel.py: python/gpuspans/_hot.c does not define Py_LIMITED_API 0x03080000, which the cp38-abi3 tag says")
    blobs, glibc, machines = {}, (2, 0), set()
    for fn, path in natives.items():
        with open(path, "rb") as f:
            data = f.read()
        try:
            blobs[fn] = stripped(path, data)
            elf = ELF(blobs[fn])
            if fn == "libgpuspans.so" or "libc.so.6" in elf.needs:
                glibc = max(glibc, elf.glibc())
        except ValueError as e:
            sys.exit(f"wheel.py: {path}: {e}")
        machines.add(elf.machine)
    if len(machines) != 1:
        sys.exit(f"wheel.py: the native files are built for different machines: {sorted(machines)}")

    # Native code: the tag says the glibc (and architecture) it needs, and
    # the extension's Python ABI, which pip checks against the target's.
    py_abi = "cp38-abi3" if args.hot else "py3-none"
    tag = f"{py_abi}-manylinux_{glibc[0]}_{glibc[1]}_{machines.pop()}"
    dist = f"{name}-{version}.dist-info"
    files = []
    for fn in sorted(os.listdir(PKG)):
        if fn.endswith((".py", ".pyi")) or fn == "py.typed":
            with open(os.path.join(PKG, fn), "rb") as f:
                files.append((f"gpuspans/{fn}", f.read(), 0o644))
    files += [(f"gpuspans/{fn}", data, 0o755) for fn, data in sorted(blobs.items())]
    with open(os.path.join(PKG, "__init__.py")) as f:
        description = ast.get_docstring(ast.parse(f.read())) or ""
    lines = [
        "Metadata-Version: 2.1",
        f"Name: {name}",
        f"Version: {version}",
        f"Summary: {project['description']}",
        f"Requires-Python: {project['requires-python']}",
    ]
    lines += [f"Keywords: {','.join(project.get('keywords', []))}"] if project.get("keywords") else []
    lines += [f"Classifier: {c}" for c in project.get("classifiers", [])]
    lines += [f"Project-URL: {k}, {v}" for k, v in project.get("urls", {}).items()]
    for extra, reqs in project.get("optional-dependencies", {}).items():
        lines.append(f"Provides-Extra: {extra}")
        lines += [f'Requires-Dist: {r}; extra == "{extra}"' for r in reqs]
    lines.append("Description-Content-Type: text/plain; charset=UTF-8")
    metadata = "\n".join(lines) + "\n\n" + description + "\n"
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
