"""The library, loaded once per process, and what the process's life means
for hubs: a child forked after the load cannot call in, the interpreter's
exit stops log callbacks first, and hubs dropped without close() are
closed off the collector's thread."""

from __future__ import annotations

import atexit
import ctypes
import logging
import os
import threading
import time
import weakref

from . import _lib
from ._errors import Error
from ._logs import logger

_lib_lock = threading.Lock()
_lib_handle = None
_lib_pid = None  # the process that loaded the library
_hot = None  # the compiled span calls (gpuspans/_hot.c), or None: ctypes
_hubs = weakref.WeakSet()  # open hubs, for the fork guard


def _forked_error():
    return Error(
        _lib.ERR_FORKED,
        "GS_HUB_ERR_FORKED",
        f"gpuspans: this process (pid {os.getpid()}) was forked from pid {_lib_pid}, which had loaded "
        "libgpuspans.so: the Go runtime inside it does not survive fork, so no hub can be used or made "
        "here; record in the parent, or start this process with multiprocessing's 'spawn' or "
        "'forkserver' method",
    )


class _Forked:
    """The library as a forked child sees it: every function raises."""

    def __getattr__(self, name):
        def refuse(*args):
            raise _forked_error()

        return refuse


def _after_fork_in_child():
    # Calling into the library here would hang: its Go runtime's threads
    # were not forked. Every hub's calls are made to raise instead.
    if _lib_pid is None:
        return
    for hub in list(_hubs):
        hub._forked()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def library() -> ctypes.CDLL:
    """The loaded library (loaded on first use). In a process forked after
    it was loaded it raises Error: the library cannot work there."""
    global _lib_handle, _lib_pid, _hot
    with _lib_lock:
        if _lib_handle is None:
            _lib_handle = _lib.load()
            _lib_pid = os.getpid()
            _hot, why = _lib.load_hot()
            if _hot is None:
                # Asked for (GPUSPANS_HOT=off) is news; missing or broken is a warning.
                chosen = os.environ.get(_lib.HOT_ENV) == "off"
                logger.log(logging.INFO if chosen else logging.WARNING,
                           "gpuspans: compiled span calls not loaded (%s): step and lane calls go through ctypes, "
                           "a few microseconds each", why)
        elif os.getpid() != _lib_pid:
            raise _forked_error()
        return _lib_handle


@atexit.register
def _stop_logging():
    # Before the interpreter finalizes: a library thread calling into it
    # then would hang. Setting waits for a call running now.
    if _lib_handle is None or _lib_pid != os.getpid():
        return
    for hub in list(_hubs):
        if hub._h and getattr(hub, "_logging", False):
            _lib_handle.gs_hub_set_log_callback(hub._h, _lib.LOG_FN(), None)


# Threads closing hubs dropped without close(), until their close returns.
_closing = set()
_closing_lock = threading.Lock()


def _close_handle(lib, handle, pid):
    """The finalizer of a Hub dropped without close(): it closes the hub on
    a thread of its own, so that whichever thread runs the collector never
    waits for the close (which lands spans in flight for up to 1 s)."""
    if os.getpid() != pid:
        return
    t = threading.Thread(target=_close_dropped, args=(lib, handle), name="gpuspans-close", daemon=True)
    with _closing_lock:
        _closing.add(t)
    try:
        t.start()
    except RuntimeError:  # no new threads (the interpreter is shutting down)
        with _closing_lock:
            _closing.discard(t)
        lib.gs_hub_close(handle)


def _close_dropped(lib, handle):
    try:
        lib.gs_hub_close(handle)
    finally:
        with _closing_lock:
            _closing.discard(threading.current_thread())


def _wait_closing(timeout):
    """Waits up to timeout seconds for the closes of dropped hubs."""
    deadline = time.monotonic() + timeout
    with _closing_lock:
        threads = list(_closing)
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))
