"""Loads libgpuspans.so (go/capi built with -buildmode=c-shared) with ctypes
and declares the functions of gpuspans/hub.h; loads the compiled span calls
(gpuspans/_hot.c)."""

import ctypes
import importlib.machinery
import importlib.util
import os

LIB_ENV = "GPUSPANS_LIB"
LIB_NAME = "libgpuspans.so"
HOT_ENV = "GPUSPANS_HOT"
HOT_NAME = "_hot.abi3.so"

# gpuspans/hub.h's constants.
OK = 0
ERR_BAD_HANDLE = 1
ERR_INVALID_ARGUMENT = 2
ERR_TOO_SMALL = 3
ERR_LISTEN = 4
ERR_LIMIT = 5
ERR_INTERNAL = 6
ERR_FORKED = 7

MAX_HUBS = 64
WORD_STRIDE = 16
WORD_LEVEL = 0x3
WORD_ARMED = 0x4
WORD_POOLS = 0x8
WORD_TRACER = 0x10
LEVEL_KERNEL = 2


# What a state word lets the span calls skip: hub.h's gs_hub_word_* tests,
# which the C calls and the compiled Python calls (_hot.c) use.
def step_has_work(w: int) -> bool:
    """A step begin calls in: a level above Off, a pool or the tracer open."""
    return w & (WORD_LEVEL | WORD_POOLS | WORD_TRACER) != 0


def lanes_begin(w: int) -> bool:
    """Lane spans begin: level Kernel."""
    return w & WORD_LEVEL == LEVEL_KERNEL


def lanes_end(w: int) -> bool:
    """A lane span may be open to end: level Kernel, or a pool still open."""
    return w & WORD_LEVEL == LEVEL_KERNEL or w & WORD_POOLS != 0


def armed(w: int) -> bool:
    """Kernel spans begin: a step armed for them."""
    return w & WORD_ARMED != 0
SNAPSHOT_JSON = 0
SNAPSHOT_PROTO = 1
SERVE_PROTECT_READS = 1
METRICS_KERNEL_HISTOGRAMS = 1
SPAN_LANE = 1
SPAN_KERNEL = 2
SPAN_NAME_CAP = 136
LOG_INFO = 20
LOG_WARNING = 30

# gs_hub_log_fn: (hub, level, line, len, user).
LOG_FN = ctypes.CFUNCTYPE(None, ctypes.c_uint64, ctypes.c_int32, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p)


class _Sized(ctypes.Structure):
    """An options struct of hub.h: its first field, size, is set to the
    struct's size, as gs_hub_options_init() sets it in C."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.size = ctypes.sizeof(self)


class Options(_Sized):
    """gs_hub_options."""

    _fields_ = [
        ("size", ctypes.c_uint32),
        ("num_lanes", ctypes.c_int32),
        ("lanes", ctypes.POINTER(ctypes.c_char_p)),
        ("level", ctypes.c_int32),
        ("kernel_span_every", ctypes.c_int32),
        ("slots", ctypes.c_int32),
        ("recent_spans", ctypes.c_int32),
        ("start_times", ctypes.c_int32),
        ("raw_kernel_spans", ctypes.c_int32),
        ("quiet", ctypes.c_int32),
        ("kernel_timing", ctypes.c_int32),
        ("kernel_window_every_ns", ctypes.c_int64),
        ("kernel_window_steps", ctypes.c_int32),
        ("kernel_labels", ctypes.c_int32),
        ("max_requests", ctypes.c_int32),
        ("request_labels", ctypes.c_int32),
        ("peak_flops", ctypes.c_double),
        ("peak_bandwidth", ctypes.c_double),
    ]


class Span(ctypes.Structure):
    """gs_hub_span."""

    _fields_ = [
        ("seq", ctypes.c_uint64),
        ("step", ctypes.c_uint64),
        ("stream", ctypes.c_uint64),
        ("start_ns", ctypes.c_int64),
        ("duration_ns", ctypes.c_int64),
        ("kind", ctypes.c_int32),
        ("device", ctypes.c_int32),
        ("graph", ctypes.c_uint32),
        ("name_len", ctypes.c_uint32),
        ("name", ctypes.c_char * SPAN_NAME_CAP),
    ]


class OTLPOptions(_Sized):
    """gs_hub_otlp_options."""

    _fields_ = [
        ("size", ctypes.c_uint32),
        ("endpoint", ctypes.c_char_p),
        ("service_name", ctypes.c_char_p),
        ("sample_every", ctypes.c_int32),
        ("no_kernel_spans", ctypes.c_int32),
        ("poll_every_ms", ctypes.c_int32),
        ("max_links", ctypes.c_int32),
        ("protocol", ctypes.c_char_p),
    ]


class Link(ctypes.Structure):
    """gs_hub_link."""

    _fields_ = [("trace_id", ctypes.c_uint8 * 16), ("span_id", ctypes.c_uint8 * 8)]


class Request(ctypes.Structure):
    """gs_hub_request (48 bytes)."""

    _fields_ = [
        ("id", ctypes.c_uint64),
        ("new_tokens", ctypes.c_uint32),
        ("decoded_tokens", ctypes.c_uint32),
        ("context", ctypes.c_uint32),
        ("request_class", ctypes.c_uint16),
        ("trace_id", ctypes.c_uint8 * 16),
        ("span_id", ctypes.c_uint8 * 8),
    ]


def find():
    """Returns the library's path: $GPUSPANS_LIB, else the copy beside this
    package (where the wheel puts it)."""
    path = os.environ.get(LIB_ENV)
    if path:
        if not os.path.isfile(path):
            raise OSError(f"{LIB_ENV}={path}: no such file")
        return path
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), LIB_NAME)
    if not os.path.isfile(path):
        raise OSError(
            f"gpuspans: {LIB_NAME} not found beside the package ({path}); "
            f"set {LIB_ENV} to the library built with "
            "`go build -buildmode=c-shared -o libgpuspans.so ./go/capi`, "
            "or install the wheel built by tools/python/wheel.sh"
        )
    return path


def load(path=None):
    """Loads the library and declares its functions' types."""
    lib = ctypes.CDLL(path or find())
    u64, i32, i64, sz = ctypes.c_uint64, ctypes.c_int32, ctypes.c_int64, ctypes.c_size_t
    p = ctypes.POINTER
    sigs = {
        "gs_hub_status_name": (ctypes.c_char_p, [i32]),
        "gs_hub_last_error": (sz, [u64, ctypes.c_char_p, sz]),
        "gs_hub_create": (i32, [p(Options), p(u64)]),
        "gs_hub_close": (i32, [u64]),
        "gs_hub_install_cuda": (i32, [u64, i32, u64]),
        "gs_hub_install_sim": (i32, [u64, i32, u64, i64]),
        "gs_hub_sim_launch": (i32, [u64, i32, u64, i64]),
        "gs_hub_uninstall": (i32, [u64, i32]),
        "gs_hub_register_kernel": (i32, [u64, u64, ctypes.c_char_p]),
        "gs_hub_lane_index": (i32, [u64, ctypes.c_char_p, p(i32)]),
        "gs_hub_set_level": (i32, [u64, i32]),
        "gs_hub_get_level": (i32, [u64, p(i32)]),
        "gs_hub_set_kernel_span_every": (i32, [u64, i32]),
        "gs_hub_set_kernel_timing": (i32, [u64, i32]),
        "gs_hub_start_harvester": (i32, [u64, ctypes.c_int64]),
        "gs_hub_stop_harvester": (i32, [u64]),
        "gs_hub_start_profile": (i32, [u64, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int64]),
        "gs_hub_stop_profile": (i32, [u64]),
        "gs_hub_get_kernel_timing": (i32, [u64, p(i32), p(i32)]),
        "gs_hub_set_kernel_windows": (i32, [u64, ctypes.c_int64, i32]),
        "gs_hub_request_kernel_window": (i32, [u64]),
        "gs_hub_harvest": (i32, [u64]),
        "gs_hub_drain": (i32, [u64, i32, p(u64)]),
        "gs_hub_snapshot": (i32, [u64, i32, ctypes.c_void_p, sz, p(sz)]),
        "gs_hub_serve": (i32, [u64, ctypes.c_char_p, ctypes.c_char_p, i32, ctypes.c_char_p, sz]),
        "gs_hub_stop_serving": (i32, [u64]),
        "gs_hub_metrics": (i32, [u64, ctypes.c_void_p, sz, p(sz)]),
        "gs_hub_set_metrics": (i32, [u64, i32, i32]),
        "gs_hub_set_metric_labels": (i32, [u64, p(ctypes.c_char_p), p(ctypes.c_char_p), sz]),
        "gs_hub_recent_spans": (i32, [u64, u64, p(Span), sz, p(sz)]),
        "gs_hub_keep_start_times": (i32, [u64]),
        "gs_hub_set_log_callback": (i32, [u64, LOG_FN, ctypes.c_void_p]),
        "gs_hub_log_dropped": (i32, [u64, p(u64)]),
        "gs_hub_otlp_start": (i32, [u64, p(OTLPOptions)]),
        "gs_hub_otlp_stop": (i32, [u64, i32]),
        "gs_hub_get_step": (i32, [u64, p(u64)]),
        "gs_hub_link_step": (i32, [u64, u64, p(Link), sz]),
        "gs_hub_request_class": (i32, [u64, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, p(ctypes.c_uint16)]),
        "gs_hub_serve_requests_call": (i32, [u64, i32, p(Request), sz]),
        "gs_hub_end_request": (i32, [u64, u64]),
        "gs_hub_lane_work_call": (i32, [u64, i32, ctypes.c_double, ctypes.c_double]),
        "gs_hub_finished_requests": (i32, [u64, u64, ctypes.c_char_p, sz, p(sz), p(u64)]),
        "gs_hub_begin_step_call": (i32, [u64]),
        "gs_hub_lane_begin_call": (i32, [u64, i32]),
        "gs_hub_lane_end_call": (i32, [u64, i32]),
        "gs_hub_next_lane_call": (i32, [u64, i32, i32]),
        "gs_hub_next_step_call": (i32, [u64, i32, i32]),
        "gs_hub_kernel_begin_call": (u64, [u64, i32, u64, u64]),
        "gs_hub_kernel_end_call": (i32, [u64, u64]),
        "gs_launch_guard_enter": (None, []),
        "gs_launch_guard_exit": (None, []),
        "gs_launch_guard_depth": (i32, []),
    }
    # Only in a library built for tests (go build -tags gpuspans_testing).
    testing = {
        "gs_hub_testing_count_crossings": (None, [i32]),
        "gs_hub_testing_crossings": (u64, []),
    }
    for name, (res, args) in list(sigs.items()) + list(testing.items()):
        if name in testing and not hasattr(lib, name):
            continue
        fn = getattr(lib, name)
        fn.restype = res
        fn.argtypes = args
    return lib


def word_address(lib, handle):
    """The address of hub handle's state word in the array gs_hub_words
    points to."""
    base = ctypes.c_void_p.in_dll(lib, "gs_hub_words").value
    return base + (handle % MAX_HUBS) * WORD_STRIDE * ctypes.sizeof(ctypes.c_uint32)


def load_hot():
    """Returns (the compiled span calls' module, None), or (None, why not).
    $GPUSPANS_HOT names the extension's file, or is "off" for the ctypes
    path; unset, the copy beside this package (where the wheel puts it)."""
    path = os.environ.get(HOT_ENV)
    if path == "off":
        return None, f"{HOT_ENV}=off"
    if not path:
        path = os.path.join(os.path.dirname(os.path.abspath(__file__)), HOT_NAME)
        if not os.path.isfile(path):
            return None, f"{HOT_NAME} not found beside the package ({path}; build it with tools/python/wheel.sh, or set {HOT_ENV})"
    elif not os.path.isfile(path):
        return None, f"{HOT_ENV}={path}: no such file"
    try:
        loader = importlib.machinery.ExtensionFileLoader("gpuspans._hot", path)
        spec = importlib.util.spec_from_file_location("gpuspans._hot", path, loader=loader)
        mod = importlib.util.module_from_spec(spec)
        loader.exec_module(mod)
    except Exception as e:  # ImportError, OSError: a foreign build, a missing symbol
        return None, f"{path}: {e}"
    return mod, None


def address(fn):
    """The address of a ctypes function of the library."""
    return ctypes.cast(fn, ctypes.c_void_p).value
