"""gpuspans.Hub: a hub of the library, driven from Python.

Over 600 lines for one class: Hub's methods are the package's API, one per
C ABI call, and stay together rather than in mixins that would scatter its
signature (tests/test_typing.py walks it)."""

from __future__ import annotations

import base64
import ctypes
import functools
import gc
import json
import math
import os
import struct
import threading
import time
import weakref
from typing import Any, ContextManager, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from . import _graphs, _lib, _process  # _process._hot: library() sets it, so read it there
from ._args import _I32, _U16, _U32, _U64, Level, StreamLike, _cstr, _float, _int, _level, _nanoseconds, _stream, _window_ns
from ._errors import Error
from ._logs import _LOG_CALLBACK
from ._process import _close_handle, _Forked, _hubs, _wait_closing, library
from ._spans import _NO_SPAN, _SPAN_KINDS, Lane, SimGPU, Span, _KernelSpan

# Hub.kernel_timing's names, by GS_HUB_KERNEL_TIMING_* value.
_KERNEL_TIMINGS = ("events", "auto", "cupti", "attached")
# Those that open kernel windows, so that torch's graph replays go through
# the launch guard (_graphs).
_WINDOW_TIMINGS = ("auto", "cupti")

# The start-time modes, in the order of GS_HUB_START_TIMES_* (their values).
_START_TIMES = ("auto", "never", "always")

# The Hub methods the compiled span calls replace.
_HOT_CALLS = ("step", "lane_begin", "lane_end", "next_lane", "next_step", "kernel_begin", "kernel", "kernel_end")


class Hub:
    """A gpuspans hub: levels, the span ring, harvests, aggregates and the
    HTTP surface, driven from Python.

    lanes: the lane names (None: the library's default lanes, which
    hub.lanes then names); level: "off", "step", "kernel" or a Level;
    kernel_span_every: arm kernel spans on 1 step in this many (0: the
    default); slots, recent_spans: ring sizes (0: the defaults); start_times: when spans are placed on the host clock,
    "auto" (while a reader calls recent_spans or keep_start_times),
    "never" or "always"; raw_kernel_spans: as go/gpuspans.Options;
    quiet: no log lines at all (else they go to the logging logger
    "gpuspans", gpuspans.logger); kernel_timing: "events", "auto",
    "cupti" or "attached" (see Hub.kernel_timing); kernel_window_every,
    kernel_window_steps: the period of kernel windows in seconds and the
    steps each collects (0: 10 s and 1; see set_kernel_windows);
    kernel_labels: traced kernel names that get a label of their own (0:
    32); max_requests: requests held at once for whose GPU time (0: 4096,
    see serve_requests); request_labels: request classes with labels of
    their own (0: 8); peak_flops, peak_bandwidth: each device's peak
    FLOP/s and memory bytes/s for utilisation (0: its model's). Each is go/gpuspans.Options' field of that name, with its bounds
    and defaults, set at create as the C ABI's gs_hub_options sets it.

    Kernel windows attach CUPTI inside step(), so call step() on the thread
    that launches the engine's kernels, and no other. Other threads may
    replay CUDA graphs with torch.cuda.CUDAGraph.replay: with kernel timing
    auto or cupti, every replay passes through the library's launch guard
    (import torch before making the hub), so that no window attaches or
    detaches during one. A replay from another thread by other means (a C++
    extension's cudaGraphLaunch) seen in a window keeps CUPTI attached and
    windows off for the process, logged (gpuspans/hub.h).
    """

    def __init__(
        self,
        lanes: Optional[Sequence[str]] = None,
        level: Union[Level, int, str] = Level.OFF,
        kernel_span_every: int = 0,
        slots: int = 0,
        recent_spans: int = 0,
        start_times: str = "auto",
        raw_kernel_spans: bool = False,
        quiet: bool = False,
        kernel_timing: str = "events",
        kernel_window_every: float = 0,
        kernel_window_steps: int = 0,
        kernel_labels: int = 0,
        max_requests: int = 0,
        request_labels: int = 0,
        peak_flops: float = 0,
        peak_bandwidth: float = 0,
    ) -> None:
        self._lib = lib = library()
        self._h = 0
        if start_times not in _START_TIMES:
            raise ValueError(f"gpuspans: start_times {start_times!r}: want one of {', '.join(_START_TIMES)}")
        if kernel_timing not in _KERNEL_TIMINGS:
            raise ValueError(f"gpuspans: kernel_timing {kernel_timing!r}: want one of {', '.join(_KERNEL_TIMINGS)}")
        if isinstance(lanes, str):
            raise TypeError("gpuspans: lanes must be a sequence of names, not one string")
        o = _lib.Options()
        names = None
        if lanes is not None:  # None: the library's default, and an empty list is its to refuse
            names = [str(n) for n in lanes]
            arr = (ctypes.c_char_p * max(len(names), 1))(*[_cstr("lane name", n) for n in names])
            o.lanes = ctypes.cast(arr, ctypes.POINTER(ctypes.c_char_p))
            o.num_lanes = _int("the number of lanes", len(names), _I32)
        o.level = int(_level(level))
        o.kernel_span_every = _int("kernel_span_every", kernel_span_every, _I32)
        o.slots = _int("slots", slots, _I32)
        o.recent_spans = _int("recent_spans", recent_spans, _I32)
        o.start_times = _START_TIMES.index(start_times)
        o.raw_kernel_spans = int(bool(raw_kernel_spans))
        o.quiet = int(bool(quiet))
        o.kernel_timing = _KERNEL_TIMINGS.index(kernel_timing)
        o.kernel_window_every_ns = _window_ns("kernel_window_every", kernel_window_every)
        o.kernel_window_steps = _int("kernel_window_steps", kernel_window_steps, _I32)
        o.kernel_labels = _int("kernel_labels", kernel_labels, _I32)
        o.max_requests = _int("max_requests", max_requests, _I32)
        o.request_labels = _int("request_labels", request_labels, _I32)
        o.peak_flops = _float("peak_flops", peak_flops)
        o.peak_bandwidth = _float("peak_bandwidth", peak_bandwidth)
        h = ctypes.c_uint64()
        st = lib.gs_hub_create(ctypes.byref(o), ctypes.byref(h))
        if st == _lib.ERR_LIMIT:
            # Hubs dropped without close() may wait in reference cycles
            # (a Lane holds its hub) for the collector: collect, wait for
            # their closes, then retry.
            gc.collect()
            _wait_closing(2.0)
            st = lib.gs_hub_create(ctypes.byref(o), ctypes.byref(h))
        # The library names the options as gs_hub_options does; the one
        # spelt otherwise here is the period, in seconds, not _ns.
        self._check(st, hub=0, rename=("kernel_window_every_ns", "kernel_window_every"))
        self._h = h.value
        if kernel_timing in _WINDOW_TIMINGS:
            _graphs.guard_torch_replays(lib, _process._hot)
        self._finalizer = weakref.finalize(self, _close_handle, lib, self._h, os.getpid())
        self._finalizer.atexit = False  # the process is ending: nothing to free
        _hubs.add(self)
        self._logging = not quiet
        if self._logging:
            self._check(lib.gs_hub_set_log_callback(self._h, _LOG_CALLBACK, None))
        self._word = ctypes.c_uint32.from_address(_lib.word_address(lib, self._h))
        if names is None:
            names = self.snapshot()["options"]["lanes"]
        self.lanes = tuple(names)
        self._lanes = {n: Lane(self, i, n) for i, n in enumerate(names)}
        self._kernels = {}  # name -> id, for kernels named by string
        self._kernel_lock = threading.Lock()
        self._streams = {}  # device -> lane stream, the kernel spans' default
        self._span_lock = threading.Lock()
        self._span_buf = None  # recent_spans' buffer
        self._classes = {}  # (model, adapter, tenant) -> class
        self._request_lock = threading.Lock()
        self._request_cap, self._request_bytes, self._request_ptr = 0, None, None  # serve_requests' buffer
        self._finished_buf = ctypes.create_string_buffer(1 << 16)
        # The span paths' calls, bound once.
        self._step_call = lib.gs_hub_begin_step_call
        self._lane_begin_call = lib.gs_hub_lane_begin_call
        self._lane_end_call = lib.gs_hub_lane_end_call
        self._next_lane_call = lib.gs_hub_next_lane_call
        self._next_step_call = lib.gs_hub_next_step_call
        self._kernel_begin_call = lib.gs_hub_kernel_begin_call
        self._kernel_end_call = lib.gs_hub_kernel_end_call
        self._hot = None
        if _process._hot is not None:
            self._bind_hot(_process._hot)

    def _bind_hot(self, hot):
        """Puts the compiled span calls in front of the ctypes methods: the
        instance's attributes shadow the class's, which stay the fallback
        and handle what the compiled calls hand back (names, armed steps)."""
        lib, a = self._lib, _lib.address
        self._hot = h = hot.bind(
            word=_lib.word_address(lib, self._h),
            hub=self._h,
            step=a(lib.gs_hub_begin_step_call),
            lane_begin=a(lib.gs_hub_lane_begin_call),
            lane_end=a(lib.gs_hub_lane_end_call),
            next_lane=a(lib.gs_hub_next_lane_call),
            next_step=a(lib.gs_hub_next_step_call),
            kernel_end=a(lib.gs_hub_kernel_end_call),
            lane_index=self._lane_index,
            kernel_begin_py=functools.partial(Hub.kernel_begin, self),
            kernel_py=functools.partial(Hub.kernel, self),
            kernel_end_py=functools.partial(Hub.kernel_end, self),
            check=self._check,
            no_span=_NO_SPAN,
            lanes={n: i for i, n in enumerate(self.lanes)},
            lane_type=Lane,
        )
        for name in _HOT_CALLS:
            setattr(self, name, getattr(h, name))

    def _unbind_hot(self):
        if self._hot is not None:
            self._hot.close()  # a call kept from before does nothing now
            for name in _HOT_CALLS:
                self.__dict__.pop(name, None)
            self._hot = None

    @property
    def compiled(self) -> bool:
        """Whether the span calls are the compiled ones (gpuspans/_hot.c)
        rather than ctypes'."""
        return self._hot is not None

    def _forked(self):
        """In a forked child: every call raises, nothing is freed."""
        self._finalizer.detach()
        self._unbind_hot()
        self._lib = _Forked()
        # The span paths call in on every word: each call raises.
        self._word = ctypes.c_uint32(int(Level.KERNEL) | _lib.WORD_POOLS | _lib.WORD_ARMED)
        refuse = _Forked().call
        self._step_call = self._lane_begin_call = self._lane_end_call = refuse
        self._next_lane_call = self._next_step_call = refuse
        self._kernel_begin_call = self._kernel_end_call = refuse
        self._is_forked = True

    # Errors.

    def _check(self, status, hub=None, rename=None):
        if status != _lib.OK:
            h = self._h if hub is None else hub
            buf = ctypes.create_string_buffer(4096)
            self._lib.gs_hub_last_error(h, buf, len(buf))
            name = self._lib.gs_hub_status_name(status).decode()
            msg = buf.value.decode(errors="replace")
            if rename:
                msg = msg.replace(*rename)
            raise Error(status, name, msg)

    # Set-up.

    def install(self, device: int = 0, stream: StreamLike = None, sim: bool = False, event_offset: float = 0.0) -> Optional[SimGPU]:
        """Attaches device `device`, lane spans recorded on stream (a
        torch.cuda.Stream, its .cuda_stream, or None for the legacy default
        stream). With sim=True it is a simulated GPU (returned, to launch
        work on), each span reading event_offset seconds long as a real GPU's
        event pairs do. A CUDA device's events are created at the first step
        at level Kernel."""
        s = _stream(stream)
        device = _int("device", device, _I32)
        if sim:
            offset = _nanoseconds("event_offset", event_offset)
            self._check(self._lib.gs_hub_install_sim(self._h, device, s, offset))
            self._streams[device] = s
            return SimGPU(self, device, s)
        self._check(self._lib.gs_hub_install_cuda(self._h, device, s))
        self._streams[device] = s
        return None

    def uninstall(self, device: int = 0) -> None:
        """Detaches device (its spans still land)."""
        device = _int("device", device, _I32)
        self._check(self._lib.gs_hub_uninstall(self._h, device))
        self._streams.pop(device, None)

    def register_kernel(self, kernel: int, name: str) -> None:
        """Names kernel (an int id, such as a CUfunction's value) so its spans
        aggregate under name."""
        kernel = _int("kernel", kernel, _U64)
        self._check(self._lib.gs_hub_register_kernel(self._h, kernel, _cstr("kernel name", name)))

    def _kernel_id(self, name):
        kid = self._kernels.get(name)
        if kid is None:
            with self._kernel_lock:
                kid = self._kernels.get(name)
                if kid is None:
                    kid = len(self._kernels) + 1
                    self.register_kernel(kid, name)
                    self._kernels[name] = kid
        return kid

    def lane(self, name: str) -> Lane:
        """The Lane called name (a context manager; also .begin(), .end())."""
        try:
            return self._lanes[name]
        except KeyError:
            raise KeyError(f"gpuspans: no lane {name!r} (lanes: {', '.join(self.lanes)})") from None

    # Levels.

    @property
    def level(self) -> Level:
        """The level, as a Level; set it with a Level or "off", "step", "kernel"."""
        v = ctypes.c_int32()
        self._check(self._lib.gs_hub_get_level(self._h, ctypes.byref(v)))
        return Level(v.value)

    @level.setter
    def level(self, value: Union[Level, int, str]) -> None:
        self._check(self._lib.gs_hub_set_level(self._h, int(_level(value))))

    @property
    def kernel_timing(self) -> str:
        """Where kernel spans come from: "events" (event pairs around the
        kernels you wrap), "auto" (every kernel of kernel windows from
        CUPTI, CUDA graph replays included, where CUPTI loads; else events;
        CUPTI is attached only while a window collects), "cupti" (as auto,
        a fallback logged as a failure) or "attached" (every kernel of
        armed steps from a CUPTI that stays attached, for engines that
        launch from several threads: every launch then costs about 1 us
        more, for the rest of the process). Set "events" to let
        torch.profiler or Nsight take CUPTI (the next step() detaches it),
        and "auto" again after."""
        v = ctypes.c_int32()
        self._check(self._lib.gs_hub_get_kernel_timing(self._h, ctypes.byref(v), None))
        return _KERNEL_TIMINGS[v.value]

    @kernel_timing.setter
    def kernel_timing(self, value: str) -> None:
        try:
            mode = _KERNEL_TIMINGS.index(value)
        except ValueError:
            raise ValueError(f"gpuspans: kernel_timing {value!r}: want one of {', '.join(_KERNEL_TIMINGS)}") from None
        self._check(self._lib.gs_hub_set_kernel_timing(self._h, mode))
        if value in _WINDOW_TIMINGS:
            _graphs.guard_torch_replays(self._lib, _process._hot)

    @property
    def tracing_kernels(self) -> bool:
        """Whether kernel spans come from CUPTI right now (False before the
        first step at level kernel, and after a fallback: see the log)."""
        v = ctypes.c_int32()
        self._check(self._lib.gs_hub_get_kernel_timing(self._h, None, ctypes.byref(v)))
        return bool(v.value)

    def set_kernel_windows(self, every: float = 0, steps: int = 0) -> None:
        """Sets the period of kernel windows in seconds (0.001 to 86400; 0:
        10 s) and the consecutive steps each collects (1 to 1024; 0: 1)."""
        self._check(self._lib.gs_hub_set_kernel_windows(self._h, _window_ns("every", every), _int("steps", steps, _I32)))

    def request_kernel_window(self) -> None:
        """Asks for a kernel window at the next step(), whatever the period:
        the kernels of this moment. Raises Error when none can open (kernel
        timing not auto or cupti, or CUPTI fell back)."""
        self._check(self._lib.gs_hub_request_kernel_window(self._h))

    def start_harvester(self, interval: float = 0.001) -> None:
        """Harvests every interval seconds (1 us to 1 s) on a thread of the
        library's, so that step() only counts and arms the step: no driver
        call on the engine's thread. It never waits for the GPU. Stop it with
        stop_harvester(); close() stops it too."""
        if not (1e-6 <= interval <= 1.0):
            raise ValueError(f"gpuspans: harvester interval {interval!r} s: want 1e-06..1.0")
        self._check(self._lib.gs_hub_start_harvester(self._h, round(interval * 1e6)))

    def stop_harvester(self) -> None:
        """Stops the background harvester, if one runs, after its last tick."""
        self._check(self._lib.gs_hub_stop_harvester(self._h))

    def start_profile(self, path: Union[str, "os.PathLike[str]"], build: str, every: float = 0) -> None:
        """Keeps this build's GPU profile in the file at path, on a thread of
        the library's (gs_hub_start_profile): a profile of another build
        found there is compared with the hub's kernel windows, lane by lane,
        in a log line a lane, snapshot()["profile"], the live page and
        /metrics; this build's is written every `every` seconds (0: a
        minute; less than 1: a second) and at stop_profile() or close().
        build is the engine's build identity (its version, an image
        digest). A file there that is not a profile is never replaced."""
        if isinstance(path, os.PathLike):
            path = os.fspath(path)
        if not isinstance(path, str) or not isinstance(build, str):
            raise TypeError("gpuspans: start_profile: path must be a str or os.PathLike of one, build a str")
        if isinstance(every, bool) or not isinstance(every, (int, float)) or not (0 <= every <= 1e9):
            raise ValueError(f"gpuspans: start_profile: every {every!r} s: want 0 (a minute) to 1e9")
        self._check(self._lib.gs_hub_start_profile(self._h, _cstr("path", path), _cstr("build", build), round(every * 1000)))

    def stop_profile(self) -> None:
        """Writes the profile and stops keeping it, if start_profile runs."""
        self._check(self._lib.gs_hub_stop_profile(self._h))

    def set_kernel_span_every(self, n: int) -> None:
        """Arms kernel spans on 1 step in n (n >= 1) from the next step."""
        self._check(self._lib.gs_hub_set_kernel_span_every(self._h, _int("kernel_span_every", n, _I32)))

    @property
    def armed(self) -> bool:
        """Whether this step is armed for kernel spans (one memory read)."""
        if self._hot is not None:
            return self._hot.armed()
        return _lib.armed(self._word.value)

    # The span paths: each reads the state word first and calls in only
    # when the hub has work.

    def step(self) -> None:
        """Marks the start of an engine step (once per step, before its
        lanes): counts it, arms kernel spans on 1 step in N, lands finished
        spans. Never waits for the GPU."""
        if _lib.step_has_work(self._word.value):
            self._step_call(self._h)

    def lane_begin(self, lane: Union[int, str, Lane]) -> None:
        """Opens lane's span (an index, a name, or a Lane) at level Kernel."""
        if _lib.lanes_begin(self._word.value):
            self._lane_begin_call(self._h, self._lane_index(lane))

    def lane_end(self, lane: Union[int, str, Lane]) -> None:
        """Ends lane's span wherever one is open."""
        if _lib.lanes_end(self._word.value):
            self._lane_end_call(self._h, self._lane_index(lane))

    def next_lane(self, from_lane: Union[int, str, Lane, None], to_lane: Union[int, str, Lane, None]) -> None:
        """Ends from_lane's span and begins to_lane's at the same event: one
        record where lane_end and lane_begin make two, and one call. For
        lanes that follow each other on the stream (prefill, decode,
        sample): to_lane's span then starts where from_lane's work ended,
        including any idle time between them. Where from_lane is not open,
        to_lane begins as with lane_begin. None names no lane."""
        if _lib.lanes_end(self._word.value):
            self._next_lane_call(self._h, self._lane_or_none(from_lane), self._lane_or_none(to_lane))

    def next_step(self, last_lane: Union[int, str, Lane, None], first_lane: Union[int, str, Lane, None]) -> None:
        """lane_end(last_lane), step(), lane_begin(first_lane) in one call,
        with the first lane beginning at the event that ended the last (as
        next_lane): for an engine whose steps follow each other on the
        stream. None names no lane."""
        if _lib.step_has_work(self._word.value):
            self._next_step_call(self._h, self._lane_or_none(last_lane), self._lane_or_none(first_lane))

    def _lane_or_none(self, lane):
        return -1 if lane is None else self._lane_index(lane)

    def _lane_index(self, lane):
        # The one rule of both span paths: the compiled one takes what it
        # can check itself and calls this for everything else.
        if isinstance(lane, Lane):
            lane = lane.index  # a Lane's index is the caller's to change: checked as any int
            if type(lane) is not int:
                raise TypeError(f"gpuspans: a Lane's index {lane!r} is not an int")
        if type(lane) is int:
            if -(1 << 31) <= lane < 1 << 31:
                return lane  # out of range but int32: the hub ignores and counts it
            raise ValueError(f"gpuspans: lane {lane} is not a lane index")
        return self.lane(lane).index

    def kernel_begin(self, kernel: Union[int, str], stream: StreamLike = None, device: int = -1) -> int:
        """Opens a span around a kernel launch on an armed step and returns
        its token for kernel_end (0: nothing opened). kernel is an int id or
        a name (registered on first use); stream defaults to the device's
        lane stream."""
        if not _lib.armed(self._word.value):
            return 0
        if type(kernel) is int:
            kid = _int("kernel", kernel, _U64)
        else:
            kid = self._kernel_id(kernel)
        device = _int("device", device, _I32)
        if stream is None:
            s = self._streams.get(device if device >= 0 else min(self._streams, default=0), 0)
        else:
            s = _stream(stream)
        return self._kernel_begin_call(self._h, device, kid, s)

    def kernel_end(self, token: int) -> None:
        """Closes the span of a token from kernel_begin; 0 does nothing. A
        token the hub does not hold raises Error (the with form of kernel()
        never raises)."""
        if token:
            self._check(self._kernel_end_call(self._h, _int("token", token, _U64)))

    def kernel(self, kernel: Union[int, str], stream: StreamLike = None, device: int = -1) -> ContextManager[Any]:
        """A context manager around one kernel launch: a span on armed
        steps, nothing (and no call) on the others."""
        if not _lib.armed(self._word.value):
            return _NO_SPAN
        token = self.kernel_begin(kernel, stream, device)
        if not token:
            return _NO_SPAN
        return _KernelSpan(self, token)

    # Reading and serving.

    def harvest(self) -> None:
        """Lands finished spans now (steps do this)."""
        self._check(self._lib.gs_hub_harvest(self._h))

    def drain(self, timeout: float = 1.0) -> int:
        """Harvests until no span is in flight or timeout seconds passed;
        returns how many are still in flight. It calls in for at most 50 ms
        at a time, so Ctrl-C interrupts it promptly."""
        if isinstance(timeout, float) and not math.isfinite(timeout) or timeout < 0:
            raise ValueError(f"gpuspans: drain timeout is {timeout}, want a finite number of seconds >= 0")
        deadline = time.monotonic() + timeout
        n = ctypes.c_uint64()
        while True:
            left = deadline - time.monotonic()
            ms = int(min(max(left, 0.0), 0.05) * 1000)
            self._check(self._lib.gs_hub_drain(self._h, ms, ctypes.byref(n)))
            if n.value == 0 or left <= 0.05:
                return n.value

    def _read(self, what, call):
        """The bytes call(buf, cap, len_ptr) writes, growing buf as it asks."""
        n = ctypes.c_size_t()
        size = 64 << 10
        for _ in range(8):
            buf = ctypes.create_string_buffer(size)
            st = call(buf, size, ctypes.byref(n))
            if st == _lib.ERR_TOO_SMALL:
                size = n.value + (16 << 10)
                continue
            self._check(st)
            return buf.raw[: n.value]
        raise Error(_lib.ERR_TOO_SMALL, "GS_HUB_ERR_TOO_SMALL", f"the {what} kept growing")

    def _snapshot(self, fmt):
        return self._read("snapshot", lambda buf, size, n: self._lib.gs_hub_snapshot(self._h, fmt, buf, size, n))

    def metrics_text(self) -> str:
        """The hub's Prometheus families (gpuspans_*) in the text format
        0.0.4, as serve()'s /metrics has them without the Go runtime's and
        the process's families; histograms as classic buckets only (text has
        no native histograms). gpuspans.prometheus.register puts them on a
        prometheus_client registry instead."""
        return self._read("metrics text", lambda buf, size, n: self._lib.gs_hub_metrics(self._h, buf, size, n)).decode()

    def set_metrics(self, kernel_histograms: bool = False, classic_buckets: int = 1) -> None:
        """Sets which series the hub's Prometheus families hold (the
        series budget in docs/operations.md). By default lane histograms only: 1 series
        each where Prometheus scrapes native histograms, 28 as classic
        buckets; kernel_histograms adds as much per kernel. classic_buckets
        is the classic buckets per doubling of duration: 1 (25 from 1 us to
        16 s, histogram_quantile within a factor of 2), 2, 4 or 8 (193,
        within 9%). metrics_text() and gpuspans.prometheus follow at once,
        serve() from its next start."""
        flags = _lib.METRICS_KERNEL_HISTOGRAMS if kernel_histograms else 0
        self._check(self._lib.gs_hub_set_metrics(self._h, flags, _int("classic_buckets", classic_buckets, (1, 8))))

    def set_metric_labels(self, labels: Optional[Mapping[str, str]] = None) -> None:
        """Puts constant labels on every series of the hub's Prometheus
        families, as an engine labels all its metrics with its model:
        hub.set_metric_labels({"model_name": "llama-3-70b"}). None or {}
        removes them. metrics_text() and gpuspans.prometheus follow at once,
        serve() from its next start. At most 16; a name is a Prometheus label
        name, not beginning with "__", not one of the families' own (device,
        lane, kernel, quantile, le, reason, ...) nor job or instance, at most
        128 bytes; a value non-empty, at most 1,024 bytes. Names and values
        are str: anything else raises TypeError naming the label.
        gpuspans.Error names what is wrong, and nothing changes. They add no
        series."""
        items = list((labels or {}).items())
        for k, v in items:
            if not isinstance(k, str):
                raise TypeError(f"gpuspans: set_metric_labels: label name {repr(k)[:80]} is {type(k).__name__}, want str")
            if not isinstance(v, str):
                raise TypeError(
                    f"gpuspans: set_metric_labels: label {k[:80]}'s value {repr(v)[:80]} is {type(v).__name__}, want str")
        names = (ctypes.c_char_p * max(len(items), 1))(*[_cstr("label name", k) for k, _ in items])
        values = (ctypes.c_char_p * max(len(items), 1))(*[_cstr(f"label {k}'s value", v) for k, v in items])
        self._check(self._lib.gs_hub_set_metric_labels(self._h, names, values, len(items)))

    def recent_spans(self, after_seq: int = 0, limit: int = 8192) -> List[Span]:
        """The spans still in the hub's ring of recent spans whose seq is
        above after_seq, oldest first, at most limit of them, as Span
        tuples: poll with the last seq seen. Spans overwritten before a read
        are counted in the snapshot's recent_spans_overwritten. Each call
        keeps start times placed for a minute (see keep_start_times),
        unless the hub was made with start_times="never"."""
        after_seq = _int("after_seq", after_seq, _U64)
        limit = _int("limit", limit, (1, 1 << 20))
        kinds = _SPAN_KINDS
        with self._span_lock:  # one reused buffer: 192 bytes a span
            buf = self._span_buf
            if buf is None or len(buf) < limit:
                buf = self._span_buf = (_lib.Span * limit)()
            n = ctypes.c_size_t()
            self._check(self._lib.gs_hub_recent_spans(self._h, after_seq, buf, limit, ctypes.byref(n)))
            return [
                Span(s.seq, kinds.get(s.kind, str(s.kind)), s.name[: s.name_len].decode(errors="replace"), s.device,
                     s.stream, s.step, s.start_ns, s.duration_ns, s.graph)
                for s in buf[: n.value]
            ]

    def keep_start_times(self) -> None:
        """Makes harvests place spans on the host clock (Span.start_ns) for
        the next minute: call it when a reader of start times attaches, so
        that the first spans it reads are placed too (recent_spans does
        it on every call). Placing costs a driver call per span harvested,
        which a hub no one reads spans from never pays."""
        self._check(self._lib.gs_hub_keep_start_times(self._h))

    # Whose GPU time (docs/design.md): which requests each lane span served.

    def request_class(self, model: Optional[str] = None, adapter: Optional[str] = None, tenant: Optional[str] = None) -> int:
        """The class of requests of model, adapter and tenant (each None or
        "" for none), registered on first use, for serve_requests. Past
        1,024 classes it raises Error (GS_HUB_ERR_LIMIT): later requests
        then count as class 1, "other". Cached: cheap to call per request."""
        key = (model or "", adapter or "", tenant or "")
        c = self._classes.get(key)
        if c is not None:
            return c
        v = ctypes.c_uint16()
        self._check(self._lib.gs_hub_request_class(
            self._h, _cstr("model", key[0]), _cstr("adapter", key[1]), _cstr("tenant", key[2]), ctypes.byref(v)))
        self._classes[key] = v.value
        return v.value

    def serve_requests(self, lane: Union[int, str, Lane], requests: Sequence[Sequence[Any]]) -> None:
        """Says that lane's span of the current step serves requests: each
        a tuple (id, new_tokens, decoded_tokens, context[, request_class[,
        trace_id, span_id]]), the ids nonzero and unique among requests in
        flight, new_tokens the prompt tokens the span processed for it,
        decoded_tokens those it decoded, context its context length after
        the span (0: as many as its tokens), request_class from
        request_class() (0: none), trace_id and span_id its request span's
        context (16 and 8 bytes, or hex strings): its GPU time goes out as
        a span under it. Calls for one lane and step add up. Below level
        kernel it returns at once, calling nothing. A bad request (a zero or
        repeated id, no tokens, an unknown lane or class, more requests in
        flight than max_requests) raises Error and records nothing of the
        call; a full inbox raises Error (GS_HUB_ERR_LIMIT), the call dropped."""
        if not _lib.lanes_begin(self._word.value):
            return
        i = self._lane_index(lane)
        n = len(requests)
        pack = _REQUEST.pack_into
        with self._request_lock:
            if self._request_cap < n:
                self._request_cap = max(n, 2 * self._request_cap, 64)
                self._request_bytes = bytearray(_REQUEST.size * self._request_cap)
                self._request_ptr = ctypes.cast((ctypes.c_char * len(self._request_bytes)).from_buffer(self._request_bytes),
                                                ctypes.POINTER(_lib.Request))
            buf = self._request_bytes
            for k, r in enumerate(requests):
                try:
                    if len(r) > 6 and r[5] is not None:
                        pack(buf, k * 48, r[0], r[1], r[2], r[3], r[4], *_ids(r[5], r[6]))
                    else:
                        pack(buf, k * 48, r[0], r[1], r[2], r[3], r[4] if len(r) > 4 else 0, _NO_TRACE, _NO_SPAN_ID)
                except (struct.error, TypeError, IndexError) as e:
                    raise ValueError(f"gpuspans: serve_requests: requests[{k}] = {r!r}: {e} (want (request id, new_tokens, "
                                     "decoded_tokens, context[, request_class[, trace_id, span_id]]), each in its C type's range)") from None
            self._check(self._lib.gs_hub_serve_requests_call(self._h, i, self._request_ptr, n))

    def end_request(self, request_id: int) -> bool:
        """Says request request_id is done: its record comes out of
        finished_requests once its spans landed. False when no request of
        that id is in flight (as for every id below level kernel, where
        none is recorded)."""
        st = self._lib.gs_hub_end_request(self._h, _int("request id", request_id, _U64))
        if st == _lib.ERR_INVALID_ARGUMENT:
            return False
        self._check(st)
        return True

    def lane_work(self, lane: Union[int, str, Lane], flops: float, bytes_moved: float = 0) -> None:
        """Gives lane's span of the current step its work on each device
        (floating-point operations and bytes moved; 0: not known), for
        achieved FLOP/s and bandwidth (attribution()["lanes"]). Below level
        kernel it returns at once."""
        if not _lib.lanes_begin(self._word.value):
            return
        self._check(self._lib.gs_hub_lane_work_call(self._h, self._lane_index(lane), _float("flops", flops), _float("bytes_moved", bytes_moved)))

    def finished_requests(self, after_seq: int = 0) -> List[Dict[str, Any]]:
        """The records of requests finished after after_seq that the hub
        keeps (the latest max_requests), oldest first: dicts with the
        schema's RequestRecord names (seq, id, model, adapter, tenant,
        steps, new_tokens, decoded_tokens, gpu_ns, input_ns, output_ns,
        busy_ns, busy_time_ns, unmeasured, fallback, lanes, ...), trace_id
        and span_id as hex strings. Poll with the last seq seen."""
        after = _int("after_seq", after_seq, _U64)
        out: List[Dict[str, Any]] = []
        with self._request_lock:
            buf = self._finished_buf
            while True:
                n, last = ctypes.c_size_t(), ctypes.c_uint64()
                st = self._lib.gs_hub_finished_requests(self._h, after, buf, len(buf), ctypes.byref(n), ctypes.byref(last))
                if st == _lib.ERR_TOO_SMALL:
                    buf = self._finished_buf = ctypes.create_string_buffer(max(2 * len(buf), n.value + 1))
                    continue
                self._check(st)
                recs = json.loads(buf.value.decode())
                if not recs:
                    return out
                for r in recs:
                    for k in ("trace_id", "span_id"):
                        if k in r:
                            r[k] = base64.b64decode(r[k]).hex()
                out.extend(recs)
                after = last.value

    def attribution(self) -> Dict[str, Any]:
        """Whose GPU time: the snapshot's "requests" (each lane's cost
        model and totals, the classes' totals, the heaviest records), or {}
        while no request was ever said."""
        return self.snapshot().get("requests", {})

    # OpenTelemetry.

    def start_otlp(
        self,
        endpoint: Optional[str] = None,
        service_name: Optional[str] = None,
        sample_every: int = 16,
        kernel_spans: bool = True,
        poll_every: float = 0.2,
        max_links: int = 64,
        protocol: Optional[str] = None,
    ) -> None:
        """Exports landed spans as OpenTelemetry traces over OTLP to endpoint:
        "http://host:4318" with protocol "http/protobuf" (the default;
        traces go to /v1/traces unless it has a path), "http://host:4317"
        with protocol "grpc", https:// for TLS. One trace per step whose
        number is a multiple of sample_every, a root span "gpu step" over
        its lane spans (and kernel spans, unless kernel_spans is False).
        What is left None comes from the standard variables as the process
        had them when the library loaded (OTEL_EXPORTER_OTLP_ENDPOINT,
        _PROTOCOL, _HEADERS, _TIMEOUT, ..., OTEL_SERVICE_NAME,
        OTEL_RESOURCE_ATTRIBUTES); with no endpoint anywhere it raises
        gpuspans.Error. It reads the hub every poll_every seconds on a
        thread of the library's and never blocks the engine: drops are
        counted as gpuspans_otlp_* on /metrics, and failures logged (a
        collector of the other protocol by name, with the fix). Stop it
        with stop_otlp(); close() stops it too."""
        o = _lib.OTLPOptions()
        o.endpoint = None if endpoint is None else _cstr("endpoint", endpoint)
        o.protocol = None if protocol is None else _cstr("protocol", protocol)
        o.service_name = None if service_name is None else _cstr("service_name", service_name)
        o.sample_every = _int("sample_every", sample_every, (1, _I32[1]))
        o.no_kernel_spans = int(not kernel_spans)
        if not (0.001 <= poll_every <= 3600):
            raise ValueError(f"gpuspans: poll_every {poll_every!r} s: want 0.001..3600")
        o.poll_every_ms = round(poll_every * 1000)
        o.max_links = _int("max_links", max_links, (1, 1024))
        self._check(self._lib.gs_hub_otlp_start(self._h, ctypes.byref(o)))

    def stop_otlp(self, timeout: float = 5.0) -> None:
        """Stops the OTLP exporter, if one runs: reads what landed since its
        last read and sends what is queued for up to timeout seconds."""
        if isinstance(timeout, float) and not math.isfinite(timeout) or timeout < 0:
            raise ValueError(f"gpuspans: timeout is {timeout}, want a finite number of seconds >= 0")
        self._check(self._lib.gs_hub_otlp_stop(self._h, min(int(timeout * 1000), _I32[1])))

    @property
    def step_number(self) -> int:
        """The step counter: after step(), the number of the step being
        served (for link_requests)."""
        v = ctypes.c_uint64()
        self._check(self._lib.gs_hub_get_step(self._h, ctypes.byref(v)))
        return v.value

    def link_requests(self, step: int, requests: Sequence[Tuple[int, int]]) -> None:
        """Records that step serves the requests given as (trace_id,
        span_id) pairs of ints (OpenTelemetry's SpanContext.trace_id and
        .span_id), so that the step's exported lane spans link to them. Call
        it before the next step(); steps not sampled, and calls with no
        exporter running, do nothing."""
        step = _int("step", step, _U64)
        n = len(requests)
        if n > 1024:
            raise ValueError(f"gpuspans: {n} requests to link, more than 1024")
        arr = (_lib.Link * max(n, 1))()
        for i, (tid, sid) in enumerate(requests):
            tid = _int("trace_id", tid, (1, (1 << 128) - 1))
            sid = _int("span_id", sid, (1, (1 << 64) - 1))
            arr[i].trace_id[:] = list(tid.to_bytes(16, "big"))
            arr[i].span_id[:] = list(sid.to_bytes(8, "big"))
        self._check(self._lib.gs_hub_link_step(self._h, step, arr, n))

    @property
    def log_lines_dropped(self) -> int:
        """How many log lines the hub dropped because the "gpuspans"
        logger's handlers did not keep up (its queue holds 256 lines; each
        loss is also reported by a warning before the next line)."""
        n = ctypes.c_uint64()
        self._check(self._lib.gs_hub_log_dropped(self._h, ctypes.byref(n)))
        return n.value

    def snapshot(self) -> Dict[str, Any]:
        """The hub's snapshot as a dict: the live page's JSON (lanes and
        kernels with counts, quantiles and buckets; counters; devices)."""
        return json.loads(self._snapshot(_lib.SNAPSHOT_JSON))

    def gpu_time(self) -> Optional[Dict[str, Any]]:
        """What kernel windows measured of where the GPU's time went (the
        snapshot's "gpu_time"): per lane and device its span time, busy
        and idle (busy: some kernel of the device ran) as the windows
        measured them, and as the engine serves the lane: its time outside
        windows around each window ("served_ns"), the windows' own cost
        ("window_cost_ns") and the served idle by cause ("causes": host,
        launch, copy, wait, other); the recent busy ratio over served time
        and top kernels; the gaps between kernels; the latest window's
        steps, largest gaps and timeline; the kernels that moved. None
        before the first window was analysed: outside windows nothing is
        known (docs/design.md, GPU time)."""
        return self.snapshot().get("gpu_time")

    def snapshot_proto(self) -> bytes:
        """The snapshot as gpuspans.v1.Snapshot bytes (proto/gpuspans/v1)."""
        return self._snapshot(_lib.SNAPSHOT_PROTO)

    def serve(self, addr: str = "127.0.0.1:9464", token: Optional[str] = None, protect_reads: bool = False) -> str:
        """Serves /metrics, the live page and the control endpoints on addr
        (port 0 picks one) and returns the bound address. A non-loopback
        address needs a token, required then on the control endpoints (and
        with protect_reads, which needs one, on every path). Without a
        token the control endpoints refuse what another site's page could
        send (go/gpuspanshttp/control's package documentation): set them with PUT."""
        bound = ctypes.create_string_buffer(128)
        tok = None if token is None else _cstr("token", token)
        flags = _lib.SERVE_PROTECT_READS if protect_reads else 0
        self._check(self._lib.gs_hub_serve(self._h, _cstr("addr", addr), tok, flags, bound, len(bound)))
        return bound.value.decode()

    def stop_serving(self) -> None:
        """Stops the HTTP server, if any."""
        self._check(self._lib.gs_hub_stop_serving(self._h))

    # Lifetime.

    def close(self) -> None:
        """Stops serving, lands what is in flight (up to 1 s) and frees the
        hub. Closing twice is fine; other calls after it raise Error. In a
        forked child it only forgets the hub (the parent's to close)."""
        if self._h:
            h, self._h = self._h, 0
            # A closed hub's slot may hold another hub's word later.
            self._word = ctypes.c_uint32(0)
            if self._hot is not None:
                self._hot.close()
            self._finalizer.detach()
            _hubs.discard(self)
            if getattr(self, "_is_forked", False):
                return
            self._check(self._lib.gs_hub_close(h), hub=h)

    def __enter__(self) -> Hub:
        return self

    def __exit__(self, *exc: object) -> bool:
        self.close()
        return False

    def __repr__(self):
        return f"<gpuspans.Hub {self._h} lanes={list(self.lanes)}>"


# gs_hub_request, packed: id, new and decoded tokens, context, class,
# trace id, span id, padding (hub.h's 48 bytes).
_REQUEST = struct.Struct("<QIIIH16s8s2x")
_NO_TRACE, _NO_SPAN_ID = bytes(16), bytes(8)


def _ids(trace_id, span_id):
    """A span context from bytes or hex strings."""
    t = bytes.fromhex(trace_id) if isinstance(trace_id, str) else bytes(trace_id)
    s = bytes.fromhex(span_id) if isinstance(span_id, str) else bytes(span_id)
    if len(t) != 16 or len(s) != 8:
        raise ValueError(f"gpuspans: trace_id and span_id of {len(t)} and {len(s)} bytes, want 16 and 8")
    return t, s
