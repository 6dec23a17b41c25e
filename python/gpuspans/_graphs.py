"""torch's CUDA graph replays through the library's launch guard.

A kernel window's detach while another thread replays a CUDA graph lost
the whole process's CUDA context on an H200 (gpuspans/hub.h, "Other
threads' CUDA graph replays"). A hub made (or set) with kernel timing
"auto" or "cupti" therefore routes every torch.cuda.CUDAGraph.replay,
torch.compile's cudagraph trees' included, through gs_launch_guard_enter
and gs_launch_guard_exit: a window's attach and detach wait for replays in
flight and hold new ones off for their few milliseconds, and its launch
watch counts them as guarded. Both calls release the GIL (ctypes), so a
replay waiting for a detach never holds up the stepping thread."""

from __future__ import annotations

import ctypes
import functools
import sys
import threading

from ._logs import logger

_lock = threading.Lock()
_MARK = "_gpuspans_launch_guard"


def guard_torch_replays(lib, hot=None) -> bool:
    """Wraps torch.cuda.CUDAGraph.replay in the launch guard, once per
    process; False (and nothing done) when torch is not imported yet: the
    wrap is tried again at the next hub made or set to auto or cupti. hot is
    gpuspans._hot where it was built: its guarded() makes the enter, the
    call and the exit with no Python code between them."""
    torch = sys.modules.get("torch")
    graph = getattr(getattr(torch, "cuda", None), "CUDAGraph", None)
    if graph is None:
        return False
    with _lock:
        replay = graph.replay
        if getattr(replay, _MARK, False):
            return True
        graph.replay = _guarded(replay, lib, hot)
    logger.info("gpuspans: torch.cuda.CUDAGraph.replay passes through the launch guard, so that kernel windows "
                "never attach or detach CUPTI during a replay on another thread")
    return True


def _guarded(replay, lib, hot):
    if hot is not None:
        call = hot.guarded
        enter = ctypes.cast(lib.gs_launch_guard_enter, ctypes.c_void_p).value
        leave = ctypes.cast(lib.gs_launch_guard_exit, ctypes.c_void_p).value

        @functools.wraps(replay)
        def guarded(self, *args, **kwargs):
            return call(enter, leave, replay, (self,) + args, kwargs or None)

    else:
        enter, leave, depth = lib.gs_launch_guard_enter, lib.gs_launch_guard_exit, lib.gs_launch_guard_depth

        def release(to):
            while depth() > to:
                leave()

        @functools.wraps(replay)
        def guarded(self, *args, **kwargs):
            # The enter inside the try, and the exit back to the depth held
            # before it: an exception raised as the enter returns, before the
            # try, or inside the first release still ends in a release.
            to = depth()
            try:
                enter()
                return replay(self, *args, **kwargs)
            finally:
                try:
                    release(to)
                finally:
                    release(to)

    setattr(guarded, _MARK, True)
    return guarded
