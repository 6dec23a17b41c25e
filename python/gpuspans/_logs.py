"""The logger hubs' log lines go to, and the one callback that delivers them."""

from __future__ import annotations

import ctypes
import logging

from . import _lib

logger = logging.getLogger("gpuspans")
"""The logger hubs' log lines go to: warnings for the rare events (pool
failures, sticky errors, kernel-tracer fallbacks, lines dropped), info for
changes made through the control endpoints. Each record carries the hub's
handle as record.gpuspans_hub."""


def _deliver_log(hub, level, line, length, user):
    # Called on a thread of the library's, never an engine's: a slow
    # handler delays only later lines (the library drops and counts what
    # does not fit its queue). It must not raise into C.
    try:
        logger.log(level, "%s", ctypes.string_at(line, length).decode(errors="replace"), extra={"gpuspans_hub": hub})
    except Exception:  # noqa: BLE001: a handler's failure is logging's to report, not ours to raise
        pass


# One callback for every hub, alive as long as the module.
_LOG_CALLBACK = _lib.LOG_FN(_deliver_log)
