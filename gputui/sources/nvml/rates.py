"""PCIe traffic as rates: from the driver's byte counters where a GPU has them (exact over
the tick, free in the field batch), else from sampled throughput windows.

``nvmlDeviceGetPcieThroughput``, which blocks about 20 ms in the driver per call, never runs
on the tick: windows are sampled on a small thread pool, all GPUs in parallel, and each tick
reuses the newest window.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pynvml

from gputui.core.pcie import link_bandwidth
from gputui.sources.nvml.bindings import (
    FI_PCIE_RX_BYTES,
    FI_PCIE_TX_BYTES,
    THROUGHPUT_UNIT,
    clean,
)
from gputui.sources.nvml.policy import RETRY_AFTER_S, Gpu, Query, Verdict, error_code, meaning

THROUGHPUT_PERIOD_S = 5.0  # one 20 ms PCIe throughput window per direction, off the tick
THROUGHPUT_STALE_S = 3 * THROUGHPUT_PERIOD_S  # an older window is not shown

Link = tuple[int | None, int | None]


class Windows:
    """PCIe RX/TX bytes/s per GPU, and the pool that samples throughput windows."""

    def __init__(self, query: Query, fallback: bool) -> None:
        self._q = query
        #: whether a GPU without byte counters gets sampled windows
        self.fallback = fallback
        self._pool: ThreadPoolExecutor | None = None

    def rates(
        self, gpu: Gpu, fields: dict[int, int], link: Link
    ) -> tuple[float | None, float | None, bool | None]:
        """RX and TX bytes/s and whether they came from the byte counters."""
        if gpu.counters:
            rates = self._counter_rates(gpu, fields, link)
            if rates is not None:
                return rates[0], rates[1], True
            if gpu.counter_bits == 64:
                return None, None, None
            # 32-bit counters on a link that can wrap them more than once a tick
            gpu.cache["want_window"] = True
        elif self.fallback and "throughput" not in gpu.stopped:
            gpu.cache["want_window"] = True
        window = gpu.window
        if window is None or self._q.now - window[0] > THROUGHPUT_STALE_S:
            return None, None, None
        return window[1], window[2], False

    def _counter_rates(
        self, gpu: Gpu, fields: dict[int, int], link: Link
    ) -> tuple[float, float] | None:
        now = self._q.now
        rx_total = fields.get(FI_PCIE_RX_BYTES)
        tx_total = fields.get(FI_PCIE_TX_BYTES)
        if rx_total is None or tx_total is None:
            return None  # one missing reading: no rate now, the baseline stays
        previous = gpu.last_counters
        gpu.last_counters = (now, rx_total, tx_total)
        if previous is None or now <= previous[0]:
            return None
        elapsed = now - previous[0]
        modulus = 1 << gpu.counter_bits
        rx_bytes = (rx_total - previous[1]) % modulus
        tx_bytes = (tx_total - previous[2]) % modulus
        # the most the link can carry: its maximum, since it retrains between readings
        capacity = link_bandwidth(gpu.max_link[0] or link[0], gpu.max_link[1] or link[1])
        if gpu.counter_bits < 64 and (capacity is None or capacity * elapsed >= modulus):
            # The counter may have wrapped more than once since the last reading: how many
            # times is told by the newest sampled window (the traffic it saw, over this
            # tick), and the counter then gives the exact bytes within that wrap. The
            # windows keep coming (every THROUGHPUT_PERIOD_S) so the guide stays fresh.
            gpu.cache["want_window"] = True
            guide = gpu.window
            if guide is None or now - guide[0] > THROUGHPUT_STALE_S:
                return None
            if guide[1] is None or guide[2] is None:
                return None
            rx_bytes = _unwrapped(rx_bytes, guide[1] * elapsed, modulus)
            tx_bytes = _unwrapped(tx_bytes, guide[2] * elapsed, modulus)
        ceiling = (capacity or 4 * 121.0e9) * elapsed * 1.5
        if rx_bytes > ceiling or tx_bytes > ceiling:
            return None  # a reset (driver reload), not traffic
        return rx_bytes / elapsed, tx_bytes / elapsed

    def harvest(self, gpus: Sequence[Gpu]) -> None:
        """Take the windows that finished since the previous tick."""
        for gpu in gpus:
            future = gpu.window_future
            if future is None or not future.done():
                continue
            gpu.window_future = None
            try:
                rx, tx, code = future.result()
            except Exception:  # a worker's failure loses that window, nothing else
                continue
            if code is not None:
                verdict = meaning(code)
                if verdict is Verdict.STOP:
                    gpu.stopped.add("throughput")
                elif verdict is Verdict.RETRY:
                    gpu.read_at["throughput"] = self._q.now + RETRY_AFTER_S - THROUGHPUT_PERIOD_S
                continue  # a lost GPU shows on the tick's own calls
            gpu.window = (self._q.now, rx, tx)

    def start(self, gpus: Sequence[Gpu], calls: dict[int, int]) -> None:
        """Start a 20 ms window on every GPU that wants one and is due, in parallel."""
        for gpu in gpus:
            if gpu.lost or not gpu.cache.pop("want_window", False):
                continue
            if gpu.window_future is not None or not self._q.due(
                gpu, "throughput", THROUGHPUT_PERIOD_S
            ):
                continue
            if self._pool is None:
                self._pool = ThreadPoolExecutor(
                    max_workers=max(1, min(8, len(gpus))), thread_name_prefix="gputui-pcie"
                )
            calls[gpu.index] = calls.get(gpu.index, 0) + 2
            gpu.window_future = self._pool.submit(throughput_window, gpu.handle)

    def wait(self, gpus: Sequence[Gpu], timeout: float) -> None:
        futures = [g.window_future for g in gpus if g.window_future is not None]
        deadline = time.monotonic() + timeout
        for future in futures:
            with contextlib.suppress(Exception):
                future.result(timeout=max(0.0, deadline - time.monotonic()))

    def close(self) -> None:
        """Every window's thread out of NVML (before NVML shuts down)."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None


def _unwrapped(remainder: int, expected: float, modulus: int) -> int:
    """The bytes a counter moved, of which it shows ``remainder`` modulo ``modulus``: the
    number of wraps that brings it closest to ``expected``."""
    wraps = max(0, round((expected - remainder) / modulus))
    return remainder + wraps * modulus


def throughput_window(handle: Any) -> tuple[float | None, float | None, int | None]:
    """RX and TX bytes/s over one 20 ms window each (runs on the pool, off the tick)."""
    out: list[float | None] = []
    for counter in (pynvml.NVML_PCIE_UTIL_RX_BYTES, pynvml.NVML_PCIE_UTIL_TX_BYTES):
        try:
            kib = clean(pynvml.nvmlDeviceGetPcieThroughput(handle, counter))
        except pynvml.NVMLError as exc:
            return None, None, error_code(exc)
        out.append(kib * THROUGHPUT_UNIT if kib is not None else None)
    return out[0], out[1], None


def kib_rate(before: int | None, after: int | None, elapsed: float) -> float | None:
    """Bytes/s between two readings of a cumulative KiB counter."""
    if before is None or after is None or after < before:
        return None  # a counter reset (driver reload) is not traffic
    return (after - before) * 1024 / elapsed
