"""What every rule reads: the history window, static facts and thresholds, for one tick."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import field
from typing import Final, cast

from gputui.core.config import Thresholds
from gputui.core.judgement import Undecided, not_offered
from gputui.core.model import DeviceInfo, Frame, GpuSample, ProcessSample
from gputui.core.names import Metric, RuleId
from gputui.core.records import frozen
from gputui.sampling.history import History
from gputui.sampling.window import WindowStats

#: one frame's driver utilisation samples of a GPU: (frame time, samples above
#: ``sample_busy_pct``, samples at or below ``starved_idle_util_pct``, all, their sum)
DriverSamples = tuple[float, int, int, int, float]
#: one frame's CPU of a GPU process: (frame time, its own CPU %, its children's CPU %
#: together, how many children work, how many children)
ProcessCpuTick = tuple[float, float | None, float | None, int | None, int | None]
#: a window not asked for yet this judgement (None is an answer: too few readings)
_UNASKED: Final = WindowStats(0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, (), ())


@frozen
class ProcessCpu:
    """A GPU process's CPU over a window: its own and its data-loader workers'."""

    ticks: int
    main_pct: float | None  # mean, % of one core
    workers_pct: float | None  # the children together, mean
    workers_active: float | None  # children that work, mean count
    children: int | None  # the latest count

    @property
    def working(self) -> float | None:
        """How many children work: counted, or (a reading without the count: an older
        recording) all of them."""
        return self.workers_active if self.workers_active is not None else self.children

    @property
    def per_worker_pct(self) -> float | None:
        """The working children's CPU each, on average (% of a core)."""
        working = self.working
        if self.workers_pct is None or not working:
            return None
        return self.workers_pct / working


@frozen
class Context:
    history: History
    devices: Mapping[int, DeviceInfo]
    frame: Frame
    t: Thresholds
    # Rules ask the same questions (is GPU 3 busy?): one answer per tick.
    _memo: dict[tuple[int, str, float], WindowStats | None] = field(default_factory=dict)
    # (gpu, window) -> how many known clock-event masks, and each distinct mask's count
    _reasons: dict[tuple[int, float], tuple[int, tuple[tuple[int, int], ...]]] = field(
        default_factory=dict
    )
    #: answers rules share within one judgement (a GPU's VRAM verdict, say), by key
    shared: dict[object, object] = field(default_factory=dict)
    #: per GPU, the driver's utilisation samples each frame brought (``DriverSamples``)
    driver_samples: Mapping[int, Sequence[DriverSamples]] = field(default_factory=dict)
    #: per GPU process (pid), its CPU each frame (``ProcessCpuTick``)
    process_cpu: Mapping[int, Sequence[ProcessCpuTick]] = field(default_factory=dict)
    #: (rule, gpu) -> why the rule could not judge it this tick, and what that means
    undecided: dict[tuple[RuleId, int | None], tuple[str, Undecided]] = field(default_factory=dict)
    #: seconds between the source's own readings (a remote exporter's collections, a
    #: Prometheus server's scrapes), when slower than the ticks; 0: every tick is one.
    #: ``t`` already holds the windows stretched to it (``advisor.cadence``).
    cadence_s: float = 0.0
    #: the rule being asked now (the engine sets it before each rule's check)
    asking: list[RuleId | None] = field(default_factory=lambda: [None])
    #: (rule, gpu) of every window a rule asked for that held readings, but too few to
    #: judge: a rule that stays silent for that reason has not said "all clear"
    short: set[tuple[RuleId | None, int]] = field(default_factory=set)

    def cannot_judge(
        self, rule: RuleId, gpu: int | None, why: str, kind: Undecided = Undecided.UNREADABLE
    ) -> None:
        """A rule says it could not reach a verdict on this GPU: a reading that should be
        there is missing (the default), the board does not offer it, or it needs longer."""
        self.undecided.setdefault((rule, gpu), (why, kind))

    def lacks(
        self, rule: RuleId, sample: GpuSample, device: DeviceInfo, name: str, why: str
    ) -> None:
        """``cannot_judge`` for a missing reading ``name``: not applicable where the board
        does not offer it, not judged where it should be there."""
        offered = name not in not_offered(sample, device)
        kind = Undecided.UNREADABLE if offered else Undecided.NOT_OFFERED
        self.cannot_judge(rule, sample.index, why, kind)

    def driver_counts(self, gpu: int, seconds: float) -> tuple[int, int, int]:
        """(busy, waiting, all) driver utilisation samples of the last ``seconds``."""
        cutoff = self.frame.time - seconds
        busy = waiting = total = 0
        for when, b, w, n, _sum in self.driver_samples.get(gpu, ()):
            if when >= cutoff:
                busy, waiting, total = busy + b, waiting + w, total + n
        return busy, waiting, total

    def driver_mean(self, gpu: int, seconds: float) -> tuple[float, int] | None:
        """The mean of the driver's utilisation samples of the last ``seconds`` and how
        many there were; None without any."""
        cutoff = self.frame.time - seconds
        total, count = 0.0, 0
        for when, _b, _w, n, value in self.driver_samples.get(gpu, ()):
            if when >= cutoff:
                total, count = total + value, count + n
        return (total / count, count) if count else None

    def cpu_of(self, pid: int, seconds: float | None = None) -> ProcessCpu | None:
        """A GPU process's CPU over the window (means of what was read); None with fewer
        than ``min_points`` readings of its own CPU."""
        cutoff = self.frame.time - (self.t.window_s if seconds is None else seconds)
        ticks = [tick for tick in self.process_cpu.get(pid, ()) if tick[0] >= cutoff]
        main = [tick[1] for tick in ticks if tick[1] is not None]
        if len(main) < self.t.min_points:
            return None
        workers = [tick[2] for tick in ticks if tick[2] is not None]
        active = [tick[3] for tick in ticks if tick[3] is not None]
        return ProcessCpu(
            ticks=len(main),
            main_pct=sum(main) / len(main),
            workers_pct=sum(workers) / len(workers) if workers else None,
            workers_active=sum(active) / len(active) if active else None,
            children=ticks[-1][4],
        )

    def sampled_s(self, seconds: float | None = None) -> float:
        """The history actually sampled, up to ``seconds`` (the window by default)."""
        return self.history.span_s(self.t.window_s if seconds is None else seconds)

    def readings(self, gpu: int, seconds: float | None = None) -> tuple[int, float]:
        """Distinct readings of a GPU in the window, and the time they span.

        A remote exporter collects every 30 s by default (dcgm-exporter): scraping it every
        second returns the same reading 30 times. A tick is a new reading when any of the
        fast-moving values changed; ticks that repeat the previous values are not counted.
        """
        span = self.t.window_s if seconds is None else seconds
        times = self.history.reading_times(gpu, span)
        return len(times), (times[-1] - times[0]) if times else 0.0

    def stats(self, gpu: int, metric: Metric, seconds: float | None = None) -> WindowStats | None:
        """Window statistics, or None when there are too few readings to judge."""
        key = (gpu, metric, self.t.window_s if seconds is None else seconds)
        stats = self._memo.get(key, _UNASKED)
        if stats is _UNASKED:
            stats = self._memo[key] = self.history.stats(*key)
        if stats is not None and stats.count < self.t.min_points:
            self.short.add((self.asking[0], gpu))
            return None
        return stats

    def fraction(self, gpu: int, bits: int, seconds: float | None = None) -> float | None:
        """Share of the window with any of ``bits`` set; None if too few known readings."""
        key = (gpu, self.t.window_s if seconds is None else seconds)
        found = self._reasons.get(key)
        if found is None:  # rules ask the same window with different bits, and a window
            # holds a handful of distinct masks: counted once, in C
            known = self.history.known_reasons(*key)
            found = self._reasons[key] = (len(known), tuple(Counter(known).items()))
        total, masks = found
        if total < self.t.min_points:
            if total:
                self.short.add((self.asking[0], gpu))
            return None
        return sum(n for mask, n in masks if mask & bits) / total

    def samples(self) -> Sequence[tuple[GpuSample, DeviceInfo]]:
        """Each GPU that was read this tick (lost ones left out), with its static facts;
        worked out once a judgement (most rules start here)."""
        found = self.shared.get("samples")
        if found is None:
            found = self.shared["samples"] = tuple(
                (sample, device)
                for sample in self.frame.gpus
                if (device := self.devices.get(sample.index)) is not None and not sample.lost
            )
        return cast("tuple[tuple[GpuSample, DeviceInfo], ...]", found)

    def busy(self, gpu: int) -> WindowStats | None:
        """Utilisation stats when the GPU is under load over the window, else None."""
        util = self.stats(gpu, Metric.UTIL_GPU)
        if util is None or util.mean < self.t.busy_util_pct:
            return None
        return util

    def under_load(self, gpu: int) -> bool | None:
        """Whether the GPU worked over the window; None when nothing tells.

        Utilisation first; without it (MIG mode: NOT_SUPPORTED on the parent GPU) the SM
        activity (GPM), then the power draw against the enforced limit.
        """
        return self.load(gpu)[0]

    def load(self, gpu: int) -> tuple[bool | None, str | None]:
        """``under_load`` and, when it was not read from utilisation, how it was read."""
        t = self.t
        util = self.stats(gpu, Metric.UTIL_GPU)
        if util is not None:
            return util.mean >= t.busy_util_pct, None
        why = "utilisation not readable" + (
            " (MIG mode)" if (d := self.devices.get(gpu)) is not None and d.mig_mode else ""
        )
        activity = self.stats(gpu, Metric.SM_ACTIVITY)
        if activity is not None:
            busy = activity.mean >= t.busy_util_pct
            return busy, f"{why}: load read from SM activity {activity.mean:.0f} %"
        power = self.stats(gpu, Metric.POWER_W)
        limit = self.stats(gpu, Metric.POWER_LIMIT_W)
        if power is not None and limit is not None and limit.mean > 0:
            busy = power.mean >= t.busy_power_share * limit.mean
            return busy, (
                f"{why}: load read from power {power.mean:.0f} W of {limit.mean:.0f} W "
                f"({'under load' if busy else 'light load'})"
            )
        return None, f"{why}, nor SM activity or power: whether it is under load is unknown"

    def processes(self, gpu: int) -> tuple[ProcessSample, ...]:
        """The GPU's processes this tick (the frame's list split by GPU once a judgement)."""
        by_gpu = self.shared.get("processes")
        if by_gpu is None:
            split: dict[int, list[ProcessSample]] = {}
            for process in self.frame.processes:
                split.setdefault(process.gpu_index, []).append(process)
            by_gpu = self.shared["processes"] = {g: tuple(p) for g, p in split.items()}
        return cast("dict[int, tuple[ProcessSample, ...]]", by_gpu).get(gpu, ())


def smi_target(device: DeviceInfo | None, index: int) -> tuple[str, int]:
    """Where a remedy's nvidia-smi runs and the GPU number it takes there: on this machine,
    ``index`` itself; a cluster's GPU, "On NODE: " and its number on that node (gputui
    numbers a cluster's GPUs one after another; `nvidia-smi -i 4` on a node with GPUs 0-3
    fails, or changes another card)."""
    if device is None or device.node is None:
        return "", index
    return f"On {device.node}: ", device.node_index if device.node_index is not None else index


def gb(value: float) -> str:
    return f"{value / 1e9:.1f} GB/s"


def gib(value: float) -> str:
    return f"{value / 1024**3:.1f} GiB"
