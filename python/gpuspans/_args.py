"""Levels, streams and the guards on arguments bound for C: integers
range-checked for their C type (ctypes would wrap them silently) and strings
refused with a NUL (C would read them cut short)."""

from __future__ import annotations

import enum
import math
from typing import Any

# A stream: a torch.cuda.Stream (anything with .cuda_stream), an int
# handle, or None for the legacy default stream.
StreamLike = Any


class Level(enum.IntEnum):
    """How much the hub records; each level records all the one below does."""

    OFF = 0
    STEP = 1
    KERNEL = 2


_I32 = (-(1 << 31), (1 << 31) - 1)
_I64 = (-(1 << 63), (1 << 63) - 1)
_U64 = (0, (1 << 64) - 1)
_U32 = (0, (1 << 32) - 1)
_U16 = (0, (1 << 16) - 1)


def _int(what, value, bounds):
    """value as an int within bounds (a C type's range), or ValueError:
    ctypes would wrap it silently."""
    if isinstance(value, float) and not value.is_integer():
        raise ValueError(f"gpuspans: {what} is {value}, want an integer")
    try:
        n = int(value)
    except (TypeError, ValueError):
        raise ValueError(f"gpuspans: {what} is {value!r}, want an integer") from None
    if not bounds[0] <= n <= bounds[1]:
        raise ValueError(f"gpuspans: {what} is {n}, outside {bounds[0]}..{bounds[1]}")
    return n


def _cstr(what, value):
    """value as UTF-8 bytes for C, or ValueError for a NUL, where C would
    cut it."""
    b = str(value).encode()
    if b"\0" in b:
        raise ValueError(f"gpuspans: {what} {value!r} has a NUL character, where C would cut it short")
    return b


def _nanoseconds(what, seconds):
    ns = seconds * 1e9
    if isinstance(ns, float) and not math.isfinite(ns):
        want = "a finite number of seconds" if not math.isfinite(seconds) else "at most about 292 years"
        raise ValueError(f"gpuspans: {what} is {seconds}, want {want}")
    return _int(what + " in nanoseconds", int(ns), _I64)


def _float(what, value):
    """value as a float for a C double; its bounds are the library's."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"gpuspans: {what} is {value!r}, want a number")
    return float(value)


def _window_ns(what, every):
    """A kernel window period in seconds, as nanoseconds; its bounds are
    the library's (go/gpuspans.Options.KernelWindowEvery)."""
    if isinstance(every, bool) or not isinstance(every, (int, float)) or every != every:
        raise ValueError(f"gpuspans: {what} is {every!r}, want a number of seconds")
    return _nanoseconds(what, every)


def _level(value):
    if isinstance(value, str):
        try:
            return Level[value.strip().upper()]
        except KeyError:
            raise ValueError(f"gpuspans: unknown level {value!r} (want off, step or kernel)") from None
    try:
        return Level(value)
    except ValueError:
        raise ValueError(f"gpuspans: unknown level {value!r} (want off, step or kernel)") from None


def _stream(stream):
    """A stream handle as an integer: None is 0 (the legacy default stream);
    torch.cuda.Stream and anything with .cuda_stream gives that."""
    if stream is None:
        return 0
    handle = getattr(stream, "cuda_stream", stream)
    if isinstance(handle, bool) or not isinstance(handle, int):
        raise TypeError(f"gpuspans: stream {stream!r}: want a torch.cuda.Stream, an int handle or None")
    if handle < 0:
        raise ValueError(f"gpuspans: stream handle {handle} is negative")
    return _int("stream handle", handle, _U64)
