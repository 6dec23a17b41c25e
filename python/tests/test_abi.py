"""The binding's constants and structures against hub.h, the C ABI's own
header: a value or field changed on one side only fails here, not in a
user's process. Needs no library."""

import ctypes
import os
import re
import unittest

import gpuspans
from gpuspans import _hub, _lib

HUB_H = os.path.join(os.path.dirname(__file__), "..", "..", "go", "capi", "include", "gpuspans", "hub.h")


def header():
    with open(HUB_H, encoding="utf-8") as f:
        return f.read()


def constants(text):
    """GS_HUB_NAME -> value, from enumerators and #defines."""
    out = {}
    for name, value in re.findall(r"\bGS_HUB_([A-Z0-9_]+)\s*=\s*(0x[0-9a-fA-F]+|\d+)", text):
        out[name] = int(value, 0)
    for name, value in re.findall(r"#define GS_HUB_([A-Z0-9_]+) (0x[0-9a-fA-F]+|\d+)u?\b", text):
        out[name] = int(value, 0)
    return out


class ABITest(unittest.TestCase):
    def test_word_tests_are_the_headers(self):
        # The fallback's tests of a state word are hub.h's, by name.
        text = header()
        for name in ("step_has_work", "lanes_begin", "lanes_end", "armed"):
            self.assertIn(f"static inline int gs_hub_word_{name}(uint32_t w)", text)
            self.assertTrue(callable(getattr(_lib, name)))
        kernel, pools, armed, tracer = _lib.LEVEL_KERNEL, _lib.WORD_POOLS, _lib.WORD_ARMED, _lib.WORD_TRACER
        self.assertFalse(_lib.step_has_work(0))
        self.assertTrue(_lib.step_has_work(tracer) and _lib.step_has_work(1) and _lib.step_has_work(pools))
        self.assertTrue(_lib.lanes_begin(kernel) and not _lib.lanes_begin(1 | pools))
        self.assertTrue(_lib.lanes_end(1 | pools) and not _lib.lanes_end(1 | armed | tracer))
        self.assertTrue(_lib.armed(kernel | armed) and not _lib.armed(kernel | pools))

    def test_constants_match_the_header(self):
        c = constants(header())
        ours = {name: getattr(_lib, name) for name in dir(_lib) if re.fullmatch(r"[A-Z][A-Z0-9_]+", name)
                and isinstance(getattr(_lib, name), int)}
        self.assertGreater(len(ours), 10)
        for name, value in ours.items():
            self.assertIn(name, c, f"_lib.{name} has no GS_HUB_{name} in hub.h")
            self.assertEqual(value, c[name], f"_lib.{name} = {value}, hub.h says {c[name]}")
        for lv in gpuspans.Level:
            self.assertEqual(lv.value, c["LEVEL_" + lv.name], f"Level.{lv.name}")
        timings = [n for n in c if n.startswith("KERNEL_TIMING_")]
        self.assertEqual(len(timings), len(_hub._KERNEL_TIMINGS))
        for i, name in enumerate(_hub._KERNEL_TIMINGS):
            self.assertEqual(c["KERNEL_TIMING_" + name.upper()], i, name)
        for name in c:  # every status the library can return has a Python name
            if name.startswith("ERR_"):
                self.assertTrue(hasattr(_lib, name), f"hub.h's GS_HUB_{name} is missing from _lib")

    def test_options_match_the_header(self):
        body = re.search(r"typedef struct gs_hub_options \{(.*?)\} gs_hub_options;", header(), re.S).group(1)
        body = re.sub(r"/\*.*?\*/", "", body, flags=re.S)
        fields = re.findall(r"^\s*([A-Za-z_][A-Za-z0-9_ *]*?)\s*\b([a-z_0-9]+);", body, re.M)
        ctype = {"int32_t": ctypes.c_int32, "int64_t": ctypes.c_int64, "uint32_t": ctypes.c_uint32,
                 "double": ctypes.c_double, "const char* const*": ctypes.POINTER(ctypes.c_char_p)}
        self.assertEqual([n for _, n in fields], [n for n, _ in _lib.Options._fields_])
        for (t, n), (pn, pt) in zip(fields, _lib.Options._fields_):
            self.assertIs(ctype[t.strip()], pt, f"field {n}: {t} in hub.h")
        self.assertEqual(_lib.Options().size, ctypes.sizeof(_lib.Options), "Options() sets size")

    def test_span_matches_the_header(self):
        body = re.search(r"typedef struct gs_hub_span \{(.*?)\} gs_hub_span;", header(), re.S).group(1)
        body = re.sub(r"/\*.*?\*/", "", body, flags=re.S)
        fields = re.findall(r"^\s*([a-z0-9_]+)\s+([a-z_0-9]+)(?:\[GS_HUB_([A-Z_]+)\])?;", body, re.M)
        ctype = {"uint64_t": ctypes.c_uint64, "int64_t": ctypes.c_int64, "int32_t": ctypes.c_int32,
                 "uint32_t": ctypes.c_uint32}
        self.assertEqual([n for _, n, _ in fields], [n for n, _ in _lib.Span._fields_])
        for (t, n, dim), (_, pt) in zip(fields, _lib.Span._fields_):
            want = ctypes.c_char * getattr(_lib, dim) if dim else ctype[t]
            self.assertEqual((pt._type_, getattr(pt, "_length_", None)) if dim else pt,
                             (want._type_, want._length_) if dim else want, f"field {n}: {t} in hub.h")
        self.assertEqual(ctypes.sizeof(_lib.Span), 192, "hub.h: 192 bytes")

    def test_otlp_structs_match_the_header(self):
        body = re.search(r"typedef struct gs_hub_otlp_options \{(.*?)\} gs_hub_otlp_options;", header(), re.S).group(1)
        body = re.sub(r"/\*.*?\*/", "", body, flags=re.S)
        fields = re.findall(r"^\s*([A-Za-z_][A-Za-z0-9_ *]*?)\s*\b([a-z_0-9]+);", body, re.M)
        ctype = {"int32_t": ctypes.c_int32, "uint32_t": ctypes.c_uint32, "const char*": ctypes.c_char_p}
        self.assertEqual([n for _, n in fields], [n for n, _ in _lib.OTLPOptions._fields_])
        for (t, n), (_, pt) in zip(fields, _lib.OTLPOptions._fields_):
            self.assertIs(ctype[t.strip()], pt, f"field {n}: {t} in hub.h")
        body = re.search(r"typedef struct gs_hub_link \{(.*?)\} gs_hub_link;", header(), re.S).group(1)
        fields = re.findall(r"uint8_t ([a-z_]+)\[(\d+)\];", body)
        self.assertEqual([(n, int(k)) for n, k in fields], [(n, t._length_) for n, t in _lib.Link._fields_])
        self.assertEqual(ctypes.sizeof(_lib.Link), 24)

    def test_request_matches_the_header(self):
        body = re.search(r"typedef struct gs_hub_request \{(.*?)\} gs_hub_request;", header(), re.S).group(1)
        body = re.sub(r"/\*.*?\*/", "", body, flags=re.S)
        fields = re.findall(r"^\s*([a-z0-9_]+)\s+([a-z_0-9]+)(?:\[(\d+)\])?;", body, re.M)
        ctype = {"uint64_t": ctypes.c_uint64, "uint32_t": ctypes.c_uint32, "uint16_t": ctypes.c_uint16}
        self.assertEqual([n for _, n, _ in fields], [n for n, _ in _lib.Request._fields_])
        for (t, n, dim), (_, pt) in zip(fields, _lib.Request._fields_):
            if dim:
                self.assertEqual((pt._type_, pt._length_), (ctypes.c_uint8, int(dim)), f"field {n}")
            else:
                self.assertIs(ctype[t], pt, f"field {n}: {t} in hub.h")
        self.assertEqual(ctypes.sizeof(_lib.Request), 48, "hub.h: 48 bytes")


if __name__ == "__main__":
    unittest.main()
