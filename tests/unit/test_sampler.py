"""The sampler: off-thread reads, never overlapping, with timing and age."""

from __future__ import annotations

import threading
import time

from gputui.core.manual_clock import ManualClock
from gputui.core.model import DeviceInfo, Frame
from gputui.core.names import SourceKind
from gputui.sampling.sampler import Sampler
from gputui.sources.simulated import SimulatedSource


class SlowSource:
    label = "TEST"
    kind = SourceKind.SIMULATED

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.active = 0
        self.max_active = 0
        self.reads = 0
        self.block = threading.Event()
        self.block.set()

    def open(self) -> tuple[DeviceInfo, ...]:
        return ()

    def read(self) -> Frame:
        self.active += 1
        self.max_active = max(self.max_active, self.active)
        self.block.wait()
        time.sleep(self.delay)
        self.reads += 1
        self.active -= 1
        return Frame(time=float(self.reads), gpus=())

    def close(self) -> None:
        pass


def test_reads_off_thread_and_never_overlap() -> None:
    source = SlowSource(0.03)
    frames: list[Frame] = []
    threads: set[str] = set()

    def on_frame(f: Frame) -> None:
        threads.add(threading.current_thread().name)
        frames.append(f)

    sampler = Sampler(source, 0.01, on_frame)  # interval shorter than a read
    sampler.start()
    time.sleep(0.3)
    assert sampler.stop()
    assert source.max_active == 1
    assert len(frames) >= 3
    assert threads == {"gputui-sampler"}
    stats = sampler.stats
    assert stats.last_read_s is not None and stats.last_read_s >= 0.03


def test_hung_read_shows_as_growing_age() -> None:
    source = SlowSource(0.0)
    frames: list[Frame] = []
    sampler = Sampler(source, 0.01, frames.append)
    sampler.start()
    time.sleep(0.1)
    source.block.clear()  # the driver hangs
    time.sleep(0.1)
    age1 = sampler.age()
    time.sleep(0.2)
    age2 = sampler.age()
    assert age1 is not None and age2 is not None and age2 > age1 + 0.15
    assert sampler.stats.reading_since is not None
    assert not sampler.stop(timeout=0.05)  # still inside the read: do not close the source
    source.block.set()
    assert sampler.stop(timeout=1.0)


def test_errors_are_counted_and_reported() -> None:
    class Broken(SlowSource):
        def read(self) -> Frame:
            raise RuntimeError("boom")

    errors: list[BaseException] = []
    sampler = Sampler(Broken(0), 0.01, lambda f: None, on_error=errors.append)
    sampler.start()
    time.sleep(0.1)
    sampler.stop()
    assert errors and sampler.stats.errors >= 1
    assert sampler.stats.last_error == "RuntimeError: boom"


def test_read_once_uses_the_source_clock() -> None:
    clock = ManualClock(5000.0)
    source = SimulatedSource(["healthy"], clock=clock)
    source.open()
    sampler = Sampler(source, 1.0, lambda f: None)
    assert sampler.read_once().time == 5000.0
    assert sampler.stats.reads == 1
