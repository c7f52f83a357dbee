"""PCIe traffic as rates: from the driver's byte counters where a GPU has them (exact over
the tick, free in the field batch), else from sampled throughput windows.

nvml.h says of the counters (NVML_FI_DEV_PCIE_COUNT_TX_BYTES, _RX_BYTES) only that the
value "can be wrapped": not at what width. The value type the driver fills says 32 or 64
bits, and is not all of it: a counter can wrap at 2**32 inside a 64-bit value. So the
width is also what the values show (``counter_width``): past 2**32, 64 bits; a value below
2**32 that steps back, 32. Between two readings a 32-bit counter may have wrapped more
than once, at most as often as the link can carry 2**32 bytes in that time; the
throughput window (nvmlDeviceGetPcieThroughput: the bytes of one 20 ms stretch, in KB/s)
tells which of those few counts it was, and where the link cannot wrap it twice, the
counter alone is exact.

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
#: the link's bandwidth may be a little above its nominal figure (clock tolerance): the
#: bytes it can have carried over a tick, for how often a counter may have wrapped
LINK_SLACK = 1.05

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
            if gpu.counter_bits == 64 and not gpu.counter_wraps_32:
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
        bits = counter_width(gpu, (rx_total, tx_total), previous)
        # the most the link can carry: its maximum, since it retrains between readings
        capacity = link_bandwidth(gpu.max_link[0] or link[0], gpu.max_link[1] or link[1])
        narrow = bits < 64 or not gpu.counter_wide  # 32 bits, or not yet shown to be 64
        if narrow and (capacity is None or capacity >= 1 << 32):
            # the counter may wrap more than once a second: windows keep coming (every
            # THROUGHPUT_PERIOD_S) so the guide is there whenever one is needed
            gpu.cache["want_window"] = True
        if previous is None or now <= previous[0]:
            return None
        elapsed = now - previous[0]
        modulus = 1 << bits
        rx_bytes = (rx_total - previous[1]) % modulus
        tx_bytes = (tx_total - previous[2]) % modulus
        if bits < 64:
            most = capacity * elapsed * LINK_SLACK if capacity is not None else None
            moved = self._unwrapped(gpu, (rx_bytes, tx_bytes), modulus, most, elapsed)
            if moved is None:
                return None
            rx_bytes, tx_bytes = moved
        ceiling = (capacity or 4 * 121.0e9) * elapsed * 1.5
        if rx_bytes > ceiling or tx_bytes > ceiling:
            return None  # a reset (driver reload), not traffic
        return rx_bytes / elapsed, tx_bytes / elapsed

    def _unwrapped(
        self,
        gpu: Gpu,
        shown: tuple[int, int],
        modulus: int,
        most: float | None,
        elapsed: float,
    ) -> tuple[int, int] | None:
        """The bytes each counter moved, of which it shows ``shown`` modulo ``modulus``:
        as shown where the link (``most`` bytes at most) cannot have wrapped it again; else
        the count of wraps the newest sampled window's traffic over ``elapsed`` comes
        closest to, no more than the link allows. None where that is needed and no recent
        window says."""
        if most is not None and all(part + modulus > most for part in shown):
            return shown
        guide = gpu.window
        if guide is None or self._q.now - guide[0] > THROUGHPUT_STALE_S:
            return None
        if guide[1] is None or guide[2] is None:
            return None
        rx = wraps_to(shown[0], guide[1] * elapsed, modulus, most)
        tx = wraps_to(shown[1], guide[2] * elapsed, modulus, most)
        return rx, tx

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


def counter_width(
    gpu: Gpu, values: tuple[int, int], previous: tuple[float, int, int] | None
) -> int:
    """The width the counters wrap at: the value type's where it says 32 bits; else 64,
    unless values that never passed 2**32 stepped back (a 32-bit counter in a 64-bit
    value); once a value passes 2**32 it is 64 for good."""
    if gpu.counter_bits < 64:
        return gpu.counter_bits
    if max(values) >= 1 << 32:
        gpu.counter_wide, gpu.counter_wraps_32 = True, False
    elif (
        not gpu.counter_wide
        and previous is not None
        and (values[0] < previous[1] or values[1] < previous[2])
    ):
        gpu.counter_wraps_32 = True
    return 32 if gpu.counter_wraps_32 else 64


def wraps_to(remainder: int, expected: float, modulus: int, most: float | None) -> int:
    """The bytes a counter moved, of which it shows ``remainder`` modulo ``modulus``: the
    number of wraps that brings it closest to ``expected``, never more than ``most`` bytes
    (what the link can carry; None: unknown) allow."""
    wraps = max(0, round((expected - remainder) / modulus))
    if most is not None:
        wraps = min(wraps, max(0, int((most - remainder) // modulus)))
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
