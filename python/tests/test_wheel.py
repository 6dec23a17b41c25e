"""tools/python/wheel.py's wheel installs with pip into a fresh venv, offline,
and works there on the simulated GPU without GPUSPANS_LIB."""

import os
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
    print(lanes["decode"], kernels["matmul"])
"""


@unittest.skipUnless(os.environ.get("GPUSPANS_LIB"), "GPUSPANS_LIB not set: no library to package")
class WheelTest(unittest.TestCase):
    def test_pip_install_into_a_fresh_venv(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = subprocess.run(
                [sys.executable, os.path.join(ROOT, "tools", "python", "wheel.py"), "--lib", os.environ["GPUSPANS_LIB"], "--out", tmp],
                check=True, capture_output=True, text=True,
            ).stdout.strip()
            with zipfile.ZipFile(out) as z:
                names = z.namelist()
                self.assertIn("gpuspans/libgpuspans.so", names)
                self.assertIn("gpuspans/__init__.py", names)
                self.assertIsNone(z.testzip())
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
            self.assertEqual(counts, "10 10")


if __name__ == "__main__":
    unittest.main()
