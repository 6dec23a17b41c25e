"""gpuspans for Python: always-on GPU timing telemetry for serving engines.

A binding of the gpuspans hub's C ABI (go/capi/include/gpuspans/hub.h),
over libgpuspans.so: the library found beside this package, or at
$GPUSPANS_LIB. The calls an engine makes every step (step, next_step, the
lane and kernel span calls, armed) are compiled (gpuspans/_hot.c, one abi3
extension beside the package, or at $GPUSPANS_HOT; "off" for none);
everything else, and those calls where the extension cannot load (said
once, in the log), goes through ctypes.

    import gpuspans, torch

    stream = torch.cuda.current_stream()
    with gpuspans.Hub(lanes=["prefill", "decode"], level="kernel") as hub:
        hub.install(0, stream)            # a torch.cuda.Stream, or its .cuda_stream
        hub.serve("127.0.0.1:9464")       # /metrics, /debug/gpuspans, /control/...
        decode = hub.lane("decode")
        while serving:
            hub.step()
            with decode:
                with hub.kernel("attention"):
                    attention(...)
        print(hub.snapshot()["lanes"])

Lanes that follow each other on the stream share their boundaries:
hub.next_lane(prefill, decode) ends one lane and begins the next at one
event, and hub.next_step(sample, prefill) also begins the next step, each
in one call.

Costs: at level Off (and on steps not armed for kernel spans) a span call
reads the hub's state word and returns, without calling into the library;
otherwise it makes one call. Every method is safe from any thread, close
included.

Guards: integers are range-checked before they reach C (a device of 2**32
is a ValueError, not device 0), strings with a NUL are refused (C would
read them cut short), a hub dropped without close() is closed when it is
collected, and a process forked from one that loaded the library cannot use
it: the Go runtime inside does not survive fork, so in the child every hub
call, and Hub(), raises Error naming the fork (use multiprocessing's
"spawn" or "forkserver" start method for children that record).
"""

from ._args import Level, StreamLike  # noqa: F401: StreamLike is for callers' hints, outside __all__
from ._errors import Error
from ._hub import Hub
from ._logs import logger
from ._process import library
from ._spans import Lane, SimGPU, Span

__version__ = "0.1.0"

__all__ = ["Hub", "Level", "Error", "Lane", "SimGPU", "Span", "library", "logger"]
