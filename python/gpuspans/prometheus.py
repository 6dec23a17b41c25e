"""gpuspans' Prometheus families on a prometheus_client registry, so that
the engine's own /metrics carries them: one port, one scrape target.

    import prometheus_client, gpuspans, gpuspans.prometheus

    hub = gpuspans.Hub(level="kernel")
    gpuspans.prometheus.register(hub)           # the default REGISTRY
    prometheus_client.start_http_server(8000)   # the engine's /metrics

The families are those of the Go exporter (go/export/prom; hub.serve()'s
/metrics): gpuspans_lane_duration_seconds as classic histograms (25 bounds
from 1 us to 16 s, 2 apart: histogram_quantile within a factor of 2; finer
with hub.set_metrics(classic_buckets=...)), gpuspans_kernel_duration_seconds
only after hub.set_metrics(kernel_histograms=True) (32 series per kernel:
the histogram and its recent quantiles),
the span counters by device and drop reason, the level, kernel timing and
device info. Not included: the native histograms (prometheus_client's text
formats cannot carry them; serve() on a port of its own has them, 1 series
each, and exemplars), and the Go runtime's and the process's families (the
engine's registry has its own process).

Each scrape takes one hub snapshot (the harvest lock, briefly; span paths
never wait for it; the GIL released) and parses its text with
prometheus_client's parser on the scraping thread, holding the GIL for
about 3 ms per thousand series (0.2 ms for the 70 of the default,
about 6 ms for the 2,100 of 2 lanes and 64 kernels with histograms). prometheus_client is optional: this module is the only part of
gpuspans that imports it.
"""

from __future__ import annotations

import logging
import threading
from typing import List, Optional

from prometheus_client.core import REGISTRY, CollectorRegistry, Metric
from prometheus_client.parser import text_string_to_metric_families

from . import Error, Hub, _lib

__all__ = ["Collector", "register"]

_log = logging.getLogger("gpuspans")


class Collector:
    """A prometheus_client collector of one hub's families. A scrape of a
    closed hub yields nothing, and a failed one yields nothing and logs a
    warning to the "gpuspans" logger, so that the engine's own families
    are still served."""

    def __init__(self, hub: Hub) -> None:
        self._hub = hub
        self._warned = threading.Event()

    def _families(self) -> List[Metric]:
        try:
            return list(text_string_to_metric_families(self._hub.metrics_text()))
        except (Error, ValueError) as e:
            if getattr(e, "status", None) != _lib.ERR_BAD_HANDLE and not self._warned.is_set():
                self._warned.set()  # once: a scrape every few seconds would flood the log
                _log.warning("gpuspans: the hub's families are left out of this scrape and later failing ones: %s", e)
            return []

    def collect(self) -> List[Metric]:
        """The hub's families now (prometheus_client calls it per scrape)."""
        return self._families()

    def describe(self) -> List[Metric]:
        """The families' names without samples, so that a registry checks
        them for clashes at register time without a scrape of its own."""
        return [Metric(f.name, f.documentation, f.type) for f in self._families()]


def register(hub: Hub, registry: Optional[CollectorRegistry] = None) -> Collector:
    """Registers a Collector of hub on registry (default: prometheus_client's
    REGISTRY, the one start_http_server and make_wsgi_app serve) and returns
    it; registry.unregister(collector) takes it off again. Raises
    ValueError from prometheus_client when a family name is taken already
    (say, a second hub: give each its own registry)."""
    c = Collector(hub)
    (REGISTRY if registry is None else registry).register(c)
    return c
