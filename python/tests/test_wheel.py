"""tools/python/wheel.py's wheel installs with pip into a fresh venv, offline,
and works there on the simulated GPU without GPUSPANS_LIB, its compiled span
calls loaded; its tag names the stable ABI the extension is built on and the
newest glibc either native file's symbols need (checked with binutils'
objdump), its native files are stripped, its metadata complete, and it is
typed."""

import base64
import email.parser
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

PROGRAM = """
import gpuspans
with gpuspans.Hub(lanes=["decode"], level="kernel", kernel_span_every=1, quiet=True) as hub:
    gpu = hub.install(0, 0, sim=True)
    for _ in range(10):
        hub.step()
        with hub.lane("decode"):
            with hub.kernel("matmul"):
                gpu.launch(1e-5)
    assert hub.drain(5.0) == 0
    snap = hub.snapshot()
    lanes = {a["name"]: a["count"] for a in snap["lanes"]}
    kernels = {a["name"]: a["count"] for a in snap["kernels"]}
    print(gpuspans.__file__)
    print(lanes["decode"], kernels["matmul"], hub.compiled)
"""


@unittest.skipUnless(os.environ.get("GPUSPANS_LIB"), "GPUSPANS_LIB not set: no library to package")
class WheelTest(unittest.TestCase):
    def test_pip_install_into_a_fresh_venv(self):
        with tempfile.TemporaryDirectory() as tmp:
            hot = os.path.join(tmp, "_hot.abi3.so")
            subprocess.run(["bash", os.path.join(ROOT, "tools", "python", "hot.sh"), hot, sys.executable], check=True)
            out = subprocess.run(
                [sys.executable, os.path.join(ROOT, "tools", "python", "wheel.py"), "--lib", os.environ["GPUSPANS_LIB"],
                 "--hot", hot, "--out", tmp],
                check=True, capture_output=True, text=True,
            ).stdout.strip()
            natives = {}
            with zipfile.ZipFile(out) as z:
                names = z.namelist()
                for want in ("gpuspans/libgpuspans.so", "gpuspans/_hot.abi3.so", "gpuspans/__init__.py",
                             "gpuspans/prometheus.py", "gpuspans/py.typed"):
                    self.assertIn(want, names)
                self.assertNotIn("gpuspans/_hot.c", names)
                self.assertIsNone(z.testzip())
                self.check_record(z)
                self.check_metadata(z)
                for fn in ("libgpuspans.so", "_hot.abi3.so"):
                    natives[fn] = os.path.join(tmp, "wheel-" + fn)
                    with open(natives[fn], "wb") as f:
                        f.write(z.read("gpuspans/" + fn))
            self.check_platform(os.path.basename(out), natives)
            venv = os.path.join(tmp, "venv")
            subprocess.run([sys.executable, "-m", "venv", venv], check=True, capture_output=True)
            py = os.path.join(venv, "bin", "python")
            env = {k: v for k, v in os.environ.items() if k not in ("GPUSPANS_LIB", "PYTHONPATH")}
            env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
            r = subprocess.run([py, "-m", "pip", "install", "--no-index", "--no-deps", out], capture_output=True, text=True, env=env)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            r = subprocess.run([py, "-c", PROGRAM], capture_output=True, text=True, env=env, cwd=tmp)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            where, counts = r.stdout.strip().splitlines()
            self.assertTrue(where.startswith(venv), f"imported {where}, not the venv's copy")
            self.assertEqual(counts, "10 10 True")
            self.assertNotIn("compiled span calls not loaded", r.stderr)

    def check_record(self, z):
        dist = next(n for n in z.namelist() if n.endswith(".dist-info/RECORD"))
        rows = [line.split(",") for line in z.read(dist).decode().splitlines()]
        self.assertEqual({r[0] for r in rows}, set(z.namelist()))
        for path, digest, size in rows:
            if path == dist:
                continue
            data = z.read(path)
            want = "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            self.assertEqual((digest, int(size)), (want, len(data)), path)

    def check_metadata(self, z):
        meta = email.parser.Parser().parsestr(z.read(next(n for n in z.namelist() if n.endswith("/METADATA"))).decode())
        self.assertEqual(meta["Name"], "gpuspans")
        self.assertEqual(meta["Requires-Python"], ">=3.8")
        self.assertIn("Typing :: Typed", meta.get_all("Classifier"))
        self.assertIn("Operating System :: POSIX :: Linux", meta.get_all("Classifier"))
        self.assertEqual(meta["Provides-Extra"], "prometheus")
        self.assertEqual(meta["Requires-Dist"], 'prometheus_client; extra == "prometheus"')
        self.assertTrue(any(u.startswith("Source, https://") for u in meta.get_all("Project-URL")))
        self.assertIn("gpuspans.Hub", meta.get_payload())  # the description: the package's docstring

    def check_platform(self, name, natives):
        m = re.fullmatch(r"gpuspans-[0-9.]+-cp38-abi3-manylinux_(\d+)_(\d+)_([a-z0-9_]+)\.whl", name)
        self.assertIsNotNone(m, f"{name}: want a cp38-abi3-manylinux_X_Y_arch tag")
        tag = (int(m.group(1)), int(m.group(2)))
        if not shutil.which("objdump"):
            self.skipTest("no objdump (binutils) to check the tag and the stripping against")
        dyn = {fn: subprocess.run(["objdump", "-T", p], check=True, capture_output=True, text=True).stdout for fn, p in natives.items()}
        needed = max((int(a), int(b)) for d in dyn.values() for a, b in re.findall(r"\bGLIBC_(\d+)\.(\d+)", d))
        self.assertEqual(tag, needed, f"{name}: the native files' symbols need glibc {needed[0]}.{needed[1]}")
        self.assertIn("gs_hub_create", dyn["libgpuspans.so"])  # the ABI is still exported
        # The extension exports its init alone and needs Python's C API
        # (the interpreter's) and glibc's: it links no library of its own.
        ext = dyn["_hot.abi3.so"]
        self.assertEqual(re.findall(r"\s(\S+)$", "\n".join(l for l in ext.splitlines() if ".text" in l), re.M), ["PyInit__hot"])
        for line in ext.splitlines():
            if "*UND*" in line and " w " not in line:
                sym = line.split()[-1]
                self.assertTrue(sym.startswith(("Py", "_Py")) or "GLIBC_" in line, line)
        for fn, p in natives.items():
            syms = subprocess.run(["objdump", "-t", p], capture_output=True, text=True).stdout
            self.assertRegex(syms, r"no symbols|SYMBOL TABLE:\s*$", f"the wheel's {fn} is not stripped")
            arch = subprocess.run(["objdump", "-f", p], check=True, capture_output=True, text=True).stdout
            self.assertIn({"x86_64": "x86-64", "aarch64": "aarch64"}.get(m.group(3), m.group(3)), arch)


if __name__ == "__main__":
    unittest.main()
