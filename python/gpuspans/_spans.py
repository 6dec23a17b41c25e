"""What the span calls deal in: Span (a landed span), Lane, the kernel
spans' context managers, and SimGPU."""

from __future__ import annotations

from typing import Any, NamedTuple, Protocol

from . import _lib
from ._args import StreamLike, _nanoseconds, _stream
from ._errors import Error


class Hub(Protocol):
    """What Lane and SimGPU use of their hub: gpuspans.Hub is one. Named
    here, not imported, as _hub imports this module."""

    _h: int
    _lib: Any

    def lane_begin(self, lane: Any) -> None: ...

    def lane_end(self, lane: Any) -> None: ...

    def _check(self, status: int) -> None: ...


class Span(NamedTuple):
    """A landed span, as Hub.recent_spans returns it."""

    seq: int  # landing order on the hub, from 1
    kind: str  # "lane" or "kernel"
    name: str  # lane or kernel name; "other" for a kernel never registered
    device: int
    stream: int  # the stream it ran on (the tracer's stream id for traced kernels)
    step: int  # the step counter when it began
    start_ns: int  # begin on the host clock, Unix ns; 0 when not placed
    duration_ns: int  # GPU time
    graph: int  # the CUDA graph a traced kernel was replayed from; 0 for others


_SPAN_KINDS = {_lib.SPAN_LANE: "lane", _lib.SPAN_KERNEL: "kernel"}


class _NoSpan:
    """The kernel span of a step not armed: entering and leaving do nothing."""

    __slots__ = ()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


_NO_SPAN = _NoSpan()


class _KernelSpan:
    """An open kernel span, ended when the with block exits. Ending never
    raises into the engine: a span the hub no longer holds (reclaimed as
    leaked, ended already, its hub closed) is counted or dropped there."""

    __slots__ = ("_hub", "_token")

    def __init__(self, hub, token):
        self._hub = hub
        self._token = token

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        try:
            self._hub._kernel_end_call(self._hub._h, self._token)
        except Error:
            pass  # a forked child: nothing to end here
        return False


class Lane:
    """A lane of a hub, usable as a context manager around the lane's work:
    `with hub.lane("decode"): ...`. Reusable and cheap: get it once."""

    __slots__ = ("_hub", "index", "name")

    def __init__(self, hub: Hub, index: int, name: str) -> None:
        self._hub = hub
        self.index = index
        self.name = name

    def begin(self) -> None:
        self._hub.lane_begin(self.index)

    def end(self) -> None:
        self._hub.lane_end(self.index)

    def __enter__(self) -> Lane:
        self._hub.lane_begin(self.index)
        return self

    def __exit__(self, *exc: object) -> bool:
        self._hub.lane_end(self.index)
        return False

    def __repr__(self):
        return f"Lane({self.name!r}, index={self.index})"


class SimGPU:
    """A simulated GPU installed on a hub (Hub.install(..., sim=True)): work
    launched on it runs on the host clock, so spans land without a GPU."""

    def __init__(self, hub: Hub, device: int, stream: int) -> None:
        self._hub = hub
        self.device = device
        self.stream = stream

    def launch(self, seconds: float, stream: StreamLike = None) -> None:
        """Queues `seconds` of work on stream (default: the lane stream)."""
        s = self.stream if stream is None else _stream(stream)
        ns = _nanoseconds("seconds", seconds)
        self._hub._check(self._hub._lib.gs_hub_sim_launch(self._hub._h, self.device, s, ns))
