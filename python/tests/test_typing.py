"""The package is typed (PEP 561): py.typed ships, and every public
function and method annotates each parameter and its return, with hints
that resolve. Needs no library."""

import inspect
import os
import typing
import unittest

import gpuspans

try:
    import gpuspans.prometheus as prom
except ImportError:
    prom = None


def public_callables(module, names):
    for name in names:
        obj = getattr(module, name)
        if inspect.isclass(obj):
            if issubclass(obj, int) or obj is gpuspans.Span:
                continue  # Level: an IntEnum; Span: its fields are typed
            for mname, m in vars(obj).items():
                if mname.startswith("_") and mname not in ("__init__", "__enter__", "__exit__"):
                    continue
                if isinstance(m, property):
                    yield f"{name}.{mname}", m.fget
                    if m.fset is not None:
                        yield f"{name}.{mname}.setter", m.fset
                elif inspect.isfunction(m):
                    yield f"{name}.{mname}", m
        elif inspect.isfunction(obj):
            yield name, obj


class TypingTest(unittest.TestCase):
    def check(self, module, names):
        n = 0
        for qual, fn in public_callables(module, names):
            sig = inspect.signature(fn)
            for p in sig.parameters.values():
                if p.name == "self":
                    continue
                self.assertIsNot(p.annotation, inspect.Parameter.empty, f"{qual}: parameter {p.name} has no annotation")
            self.assertIsNot(sig.return_annotation, inspect.Signature.empty, f"{qual}: no return annotation")
            typing.get_type_hints(fn)  # every name in the hints resolves
            n += 1
        return n

    def test_py_typed(self):
        self.assertTrue(os.path.isfile(os.path.join(os.path.dirname(gpuspans.__file__), "py.typed")))

    def test_public_api_annotated(self):
        self.assertGreater(self.check(gpuspans, gpuspans.__all__), 40)
        self.assertEqual(typing.get_type_hints(gpuspans.Span)["start_ns"], int)

    @unittest.skipIf(prom is None, "prometheus_client not installed")
    def test_prometheus_annotated(self):
        self.assertGreaterEqual(self.check(prom, prom.__all__), 4)


if __name__ == "__main__":
    unittest.main()
