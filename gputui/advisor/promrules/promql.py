"""PromQL over dcgm-exporter's metrics, for the rules the engine evaluates: selectors of
the names each field goes by, window functions at the scrape interval, clock-event bits
(PromQL has no bitwise and), the load, and the labels every alert carries.

Every series of one GPU carries the same labels (dcgm-exporter's ``gpu``, ``UUID``,
``Hostname``..., the scrape's ``instance`` and ``job``, a workload's ``exported_pod``):
expressions over two fields of one GPU match on all of them, the metric name aside, so an
alert keeps every label the series had.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from gputui.advisor.cadence import at_cadence
from gputui.core import clock_events as ce
from gputui.core.config import Thresholds
from gputui.core.dcgm import BY_ATTR, exposed_names
from gputui.core.pcie import X16_BYTES_PER_S

#: the label each alert names its node by: dcgm-exporter's Hostname, else the scrape
#: target's host (its instance without the port)
NODE = "gputui_node"
#: the label a job's GPUs share (``Terms.job_labels``: a workload's pod, a Slurm job)
JOB = "gputui_job"
#: labels that say which GPU a series is: what the engine remembers of a GPU that went
#: silent (its other labels, a workload's, change with the jobs it runs)
GPU_IDS = ("Hostname", "gpu", "UUID", "instance", "job")
NODE_IDS = ("Hostname", "instance", "job")
#: the prefix of the per-GPU figures recorded for the alerts (``Terms.record``)
RECORDED = "gputui:dcgm_gpu:"
#: the series every dcgm-exporter counters set has: a GPU that reports has it
REF = "DCGM_FI_DEV_GPU_TEMP"
#: values past these are DCGM's blanks, or no reading at all
SANE = {
    "reasons": 1e15,
    "temp": 1000,
    "clock": 1e6,
    "power": 1e5,
    "xid": 1e9,
    "pct": 1e4,
    "bytes": 1e15,
}
#: the NVLink traffic of a GPU's links together (bytes/s each way): dcgm-exporter's
#: profiling fields, which gputui's own table leaves out (its model keeps NVLink per link)
NVLINK_BYTES = ("DCGM_FI_PROF_NVLINK_RX_BYTES", "DCGM_FI_PROF_NVLINK_TX_BYTES")


def duration(seconds: float) -> str:
    """A PromQL duration of whole seconds, rounded up: '165s'."""
    return f"{max(1, math.ceil(seconds - 1e-9))}s"


def number(value: float) -> str:
    """A figure as PromQL reads it: '0.3', '1e+15'."""
    return f"{value:.10g}"


class Terms:
    """The building blocks at one scrape interval: the advisor's thresholds with their
    windows stretched to it (``advisor.cadence``, as the live rules stretch theirs), the
    user's ``--match`` matchers in every selector."""

    #: the labels that name a job, the first a series has winning: a workload's pod under
    #: Kubernetes (renamed exported_pod by the default scrape), a Slurm job (dcgm-exporter's
    #: HPC job mapping)
    JOB_LABELS = ("exported_pod", "pod", "hpc_job")

    def __init__(
        self,
        scrape_s: float,
        match: str | None = None,
        job_labels: Sequence[str] = JOB_LABELS,
        thresholds: Thresholds | None = None,
    ) -> None:
        self.scrape_s = scrape_s
        self.t = at_cadence(thresholds or Thresholds(), scrape_s)
        self.match = (match or "").strip().removeprefix("{").removesuffix("}").strip()
        self.job_labels = tuple(job_labels)
        #: the figures several alerts read, recorded once an evaluation (name -> expr), in
        #: the order first asked: the alerts read the recorded series
        self.recorded: dict[str, str] = {}

    # -- selectors ---------------------------------------------------------------------
    def names(self, attr: str) -> tuple[str, ...]:
        """Every name a server may hold the model field ``attr`` under."""
        return exposed_names(BY_ATTR[attr])

    def sel(self, *attrs: str, extra: str = "") -> str:
        """The series of these fields: ``NAME{match}`` or ``{__name__=~"A|B",match}``."""
        return self.metric(*(n for attr in attrs for n in self.names(attr)), extra=extra)

    def metric(self, *names: str, extra: str = "") -> str:
        """The series of these metric names within the user's ``--match``."""
        parts = [p for p in (self.match, extra) if p]
        if len(names) == 1:
            return f"{names[0]}{{{','.join(parts)}}}" if parts else names[0]
        return "{" + ",".join([f'__name__=~"{"|".join(names)}"', *parts]) + "}"

    def ref(self) -> str:
        return self.sel("temp_c")

    def of(self, name: str) -> str:
        """A series of this name (a recording's) within the user's ``--match``."""
        return f"{name}{{{self.match}}}" if self.match else name

    def record(self, figure: str, expr: str) -> str:
        """A per-GPU figure (its series keep their labels) computed once an evaluation by
        a recording rule, and the series the alerts read it from: at 8,192 GPUs each
        window over every GPU costs the server; asked by several alerts, once."""
        name = f"{RECORDED}{figure}"
        self.recorded.setdefault(name, expr)
        return self.of(name)

    def sane(self, attr: str, kind: str) -> str:
        """The field's series without DCGM's blank values."""
        return f"({self.sel(attr)} < {number(SANE[kind])})"

    # -- windows -----------------------------------------------------------------------
    def over(self, fn: str, attr: str, seconds: float) -> str:
        return f"{fn}({self.sel(attr)}[{duration(seconds)}])"

    def subquery(self, expr: str, fn: str, seconds: float) -> str:
        """``fn`` over ``expr`` evaluated once a scrape interval in the last ``seconds``."""
        return f"{fn}(({expr})[{duration(seconds)}:{duration(self.scrape_s)}])"

    @property
    def window(self) -> float:
        return self.t.window_s

    # -- clock-event reasons -----------------------------------------------------------
    def any_bit(self, mask: int) -> str:
        """1 where any of ``mask``'s reason bits is set, else 0: each run of bits
        ``floor(R / 2^a) % 2^n`` (PromQL has no bitwise and)."""
        reasons = self.sane("clock_reasons", "reasons")
        terms = []
        for start, length in _runs(mask):
            shifted = reasons if start == 0 else f"floor({reasons} / {2**start})"
            terms.append(f"{shifted} % {2**length}")
        return f"({' + '.join(terms)} > bool 0)"

    def bit_share(self, mask: int, seconds: float | None = None) -> str:
        """The share (0-1) of the readings of the window with any of ``mask`` set
        (recorded)."""
        span = seconds or self.window
        share = self.subquery(self.any_bit(mask), "avg_over_time", span)
        return self.record(f"reasons_{mask:x}_share{self._span(span)}", share)

    # -- load --------------------------------------------------------------------------
    def util(self, seconds: float | None = None) -> str:
        """Mean utilisation (%) over the window; a MIG GPU's from its graphics engine
        (recorded)."""
        span = seconds or self.window
        mean = (
            f"avg_over_time({self.sel('util_gpu')}[{duration(span)}]) or "
            f"100 * avg_over_time({self.sel('gr_active')}[{duration(span)}])"
        )
        return self.record(f"util_avg{self._span(span)}", mean)

    def _span(self, seconds: float) -> str:
        """A recorded figure's name's suffix for a window other than the rules' own."""
        return "" if duration(seconds) == duration(self.window) else f"_{duration(seconds)}"

    def not_idle(self, expr: str) -> str:
        """``expr`` where the GPU is not known to be idle over the window (without a load
        reading it is judged anyway, as the live rules judge it)."""
        return f"({expr}) unless ({self.util()} < {number(self.t.busy_util_pct)})"

    def mean(self, attr: str, seconds: float | None = None) -> str:
        """A reading's mean over a window (recorded)."""
        span = seconds or self.window
        return self.record(f"{attr}_avg{self._span(span)}", self.over("avg_over_time", attr, span))

    def max_clock(self) -> str:
        return self.sane("max_sm_clock_mhz", "clock")

    def slowdown(self) -> str:
        return self.sane("temp_slowdown_c", "temp")

    # -- PCIe --------------------------------------------------------------------------
    def link_bytes(self, gen: str, width: str) -> str:
        """Bytes/s one direction of a link carries, from its generation and width (the
        table of ``core.pcie``, one term a generation)."""
        terms = " + ".join(
            f"{number(rate)} * ({gen} == bool {g})" for g, rate in sorted(X16_BYTES_PER_S.items())
        )
        return f"(({terms}) * {width} / 16)"

    # -- labels ------------------------------------------------------------------------
    def named(self, expr: str) -> str:
        """``expr`` with ``gputui_node`` set: the Hostname, else the target's host."""
        host = f'label_replace({expr}, "{NODE}", "$1", "instance", "(.+?)(?::[0-9]+)?")'
        return f'label_replace({host}, "{NODE}", "$1", "Hostname", "(.+)")'

    def jobbed(self, expr: str) -> str:
        """``expr`` with ``gputui_job`` set from the first of ``job_labels`` a series has."""
        for label in reversed(self.job_labels):
            expr = f'label_replace({expr}, "{JOB}", "$1", "{label}", "(.+)")'
        return expr


def _runs(mask: int) -> Iterable[tuple[int, int]]:
    """Runs of consecutive set bits: (first bit, length)."""
    bit = 0
    while mask >> bit:
        if (mask >> bit) & 1:
            length = 0
            while (mask >> (bit + length)) & 1:
                length += 1
            yield bit, length
            bit += length
        else:
            bit += 1


#: the reasons each rule reads, by name
THERMAL = ce.THERMAL_BITS
HW_SLOWDOWN = ce.HW_SLOWDOWN | ce.HW_POWER_BRAKE
POWER_CAP = ce.SW_POWER_CAP
NAMED_CAUSES = ce.NAMED_CAUSES
