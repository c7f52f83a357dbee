"""Hardware health: a lost GPU, Xid errors by class, and the memory's health as the driver
keeps it (ECC counters, row remapping, page retirement) with DCGM health's meaning."""

from __future__ import annotations

from collections.abc import Iterator

from gputui.advisor.context import Context, smi_target
from gputui.advisor.finding import Candidate
from gputui.advisor.rule import Rule
from gputui.core.model import GpuSample
from gputui.core.names import Metric, RuleId, Severity
from gputui.core.units import fmt_duration
from gputui.core.xid import xid_info

_LOST = (
    "Reboot the node: a lost GPU rarely comes back with a reset",
    "Check `dmesg` / `journalctl -k` for Xid 79 on this GPU; reseat the card, its power "
    "cables and riser if it recurs",
)
_LEVELS = {"info": Severity.INFO, "warning": Severity.WARNING, "critical": Severity.CRITICAL}


def gpu_errors(ctx: Context) -> Iterator[Candidate]:
    """A lost GPU, and the Xids of the last ``xid_window_s``, each by its class: the
    application's ones point at the program, memory, bus, NVLink and GSP ones at the GPU."""
    for sample in ctx.frame.gpus:
        if sample.lost:
            yield Candidate(
                rule=RuleId.GPU_ERRORS,
                severity=Severity.CRITICAL,
                gpu=sample.index,
                title="GPU lost: it no longer answers the driver",
                evidence=("NVML reports the GPU as lost (typically Xid 79: fell off the bus)",),
                remedies=_LOST,
                hold_s=0.0,
            )
            continue
        xids = [
            x
            for x in ctx.history.xids(sample.index, ctx.t.xid_window_s)
            if xid_info(x.code).origin != "benign"
        ]
        if not xids:
            continue
        infos = [(x, xid_info(x.code)) for x in xids]
        worst = max(_LEVELS[info.level].rank for _x, info in infos)
        severity = next(sev for sev in _LEVELS.values() if sev.rank == worst)
        lines = [
            f"Xid {x.code} ({info.meaning}; {info.origin}), "
            f"{fmt_duration(max(0.0, ctx.frame.time - x.time))} ago"
            for x, info in infos[-3:]
        ]
        remedies: list[str] = []
        where, number = smi_target(ctx.devices.get(sample.index), sample.index)
        for _x, info in sorted(infos, key=lambda pair: -_LEVELS[pair[1].level].rank):
            for remedy in info.remedies:
                text = remedy.format(gpu=number)
                text = f"{where}{text}" if "{gpu}" in remedy else text
                if text not in remedies:
                    remedies.append(text)
        only_app = all(info.origin == "application" for _x, info in infos)
        title = (
            "Application error on this GPU: look at the program first"
            if only_app
            else "Hardware errors on this GPU"
        )
        yield Candidate(
            rule=RuleId.GPU_ERRORS,
            severity=severity,
            gpu=sample.index,
            title=title,
            evidence=tuple(lines),
            remedies=tuple(remedies[:4]),
            hold_s=0.0,
        )


def _memory_lines(ctx: Context, sample: GpuSample) -> tuple[list[str], list[str], list[str]]:
    """(critical, warning) lines of the memory's state, and context for them."""
    t = ctx.t
    critical: list[str] = []
    warning: list[str] = []
    context: list[str] = []
    if sample.remapped_rows_failure:
        critical.append("a row remap failed: the memory has no spare row left for a bad one")
    volatile = sample.ecc_volatile_uncorrected
    if volatile:
        rise = ctx.history.growth(sample.index, Metric.ECC_VOLATILE_UNCORRECTED, t.window_s)
        new = f", +{rise[0]:.0f} in the last {fmt_duration(rise[1])}" if rise and rise[0] else ""
        critical.append(
            f"{volatile} uncorrectable ECC error(s) since the driver loaded{new}: work on this "
            "GPU may have read bad data"
        )
    retired = (sample.retired_pages_sbe or 0) + (sample.retired_pages_dbe or 0)
    if retired >= t.retired_pages_limit:
        critical.append(
            f"{retired} memory pages retired, at DCGM's limit of {t.retired_pages_limit}"
        )
    if sample.remapped_rows_pending:
        warning.append("a memory row remap is pending: it takes effect at the next GPU reset")
    if sample.retired_pages_pending:
        warning.append("a page retirement is pending: it takes effect at the next GPU reset")
    aggregate = sample.ecc_aggregate_uncorrected
    if aggregate and not volatile:  # repaired since (a remap or a retirement), or pending
        context.append(
            f"{aggregate} uncorrectable ECC error(s) over the board's life (none since the "
            "driver loaded)"
        )
    storm = ctx.history.growth(sample.index, Metric.ECC_VOLATILE_CORRECTED, t.window_s)
    if storm is not None and storm[1] > 0:
        per_min = storm[0] * 60.0 / storm[1]
        if per_min >= t.ecc_storm_per_min:
            warning.append(
                f"corrected ECC errors +{storm[0]:.0f} in {fmt_duration(storm[1])} "
                f"({per_min:.0f} a minute): the memory is wearing"
            )
    if sample.remapped_rows_uncorrected or sample.remapped_rows_corrected:
        context.append(
            f"rows remapped so far: {sample.remapped_rows_uncorrected or 0} for uncorrectable, "
            f"{sample.remapped_rows_corrected or 0} for correctable errors"
        )
    if retired and retired < t.retired_pages_limit:
        context.append(f"{retired} memory page(s) retired so far")
    return critical, warning, context


def memory_health(ctx: Context) -> Iterator[Candidate]:
    """The memory's state as the driver keeps it, read whether or not it changed while
    gputui watched, with DCGM health's meaning: a remap failure or uncorrectable errors
    fail the GPU; a pending remap (or retirement) warns until a reset."""
    for sample, device in ctx.samples():
        critical, warning, context = _memory_lines(ctx, sample)
        if not critical and not warning:
            continue
        where, number = smi_target(device, sample.index)
        remedies: tuple[str, ...]
        if critical:
            remedies = (
                "Drain the node: stop scheduling jobs on this GPU",
                f"{where}Reset it when idle (sudo nvidia-smi -r -i {number}) and watch the "
                f"counters (nvidia-smi -q -d ECC,ROW_REMAPPER -i {number})",
                "A remap failure, or errors that come back after a reset: run dcgmi diag -r 3 "
                "and open an RMA with the board's serial number",
            )
            severity, title = Severity.CRITICAL, "Memory errors: this GPU's memory is failing"
        else:
            remedies = (
                f"{where}Reset the GPU when it is idle (sudo nvidia-smi -r -i {number}) or "
                "reboot: the repair takes effect then",
                "Drain it first so no job is on it during the reset; it may keep working "
                "until then",
            )
            severity, title = (
                Severity.WARNING,
                "Memory health: a repair waits for a reset, or errors to watch",
            )
        yield Candidate(
            rule=RuleId.MEMORY_HEALTH,
            severity=severity,
            gpu=sample.index,
            title=title,
            evidence=tuple(critical + warning + context),
            remedies=remedies,
            hold_s=0.0,
        )


def not_reporting(ctx: Context) -> Iterator[Candidate]:
    """A GPU the source lists but did not read this tick, while others were read: on a
    remote source, its node's exporter or its scrape stopped."""
    read = {s.index for s in ctx.frame.gpus}
    if not read:
        return  # nothing at all this tick: the source's own failure, said in its notes
    # a cluster read through its aggregates: a node that reports, not read in full this
    # tick (not on screen, not suspect), is not silent
    up = {n.node for n in ctx.frame.nodes if n.up}
    for index, device in ctx.devices.items():
        if index in read or (device.node is not None and device.node in up):
            continue
        last = ctx.history.last_seen(index)
        since = (
            f"for {fmt_duration(ctx.frame.time - last)}" if last is not None else "since the start"
        )
        where = f" on node {device.node}" if device.node else ""
        _where, number = smi_target(device, index)  # its number on its node
        yield Candidate(
            rule=RuleId.NOT_REPORTING,
            severity=Severity.WARNING,
            gpu=index,
            title=f"No readings from this GPU{where}",
            evidence=(f"no reading from GPU {number}{where} {since}, while others report",),
            remedies=SILENT,
        )
    yield from _nodes_down(ctx)


SILENT = (
    "Check the node's dcgm-exporter (its pod or service) and that Prometheus still scrapes "
    "it (up{job=...} == 1 for its target)",
    "On the node itself: nvidia-smi; a GPU that fell off the bus shows as lost",
)


def _nodes_down(ctx: Context) -> Iterator[Candidate]:
    """Nodes the source knows are down whose GPUs it never listed (down since before the
    history it read, known by their scrape target's up == 0): one finding for them all,
    however long ago they stopped; a down node whose GPUs are listed has its GPUs'."""
    listed = {d.node for d in ctx.devices.values() if d.node is not None}
    down = [n for n in ctx.frame.nodes if not n.up and n.node not in listed]
    if not down:
        return
    names = ", ".join(n.node for n in down[:5]) + (
        f" and {len(down) - 5} more" if len(down) > 5 else ""
    )
    yield Candidate(
        rule=RuleId.NOT_REPORTING,
        severity=Severity.WARNING,
        gpu=None,
        title=f"{len(down)} node(s) not reporting: {names}",
        evidence=tuple(f"node {n.node} {n.down or 'is down'}" for n in down[:5]),
        remedies=SILENT,
        hold_s=0.0,  # the source has already waited for its scrapes to be missed
    )


RULES = (
    Rule(
        RuleId.GPU_ERRORS,
        "hardware",
        "GPU lost, Xid events (NVIDIA's Xid catalogue: meaning, class, severity, remedy)",
        "a GPU is lost (critical), or an Xid was reported in the last {t.xid_window_s:g} s, "
        "at its class's severity: application Xids (13, 31, 43, ...) a warning that points at "
        "the program; 63 (row remap recorded) a warning to reset when idle; 48, 64, 79, 95, "
        "NVLink and GSP Xids critical, each with its remedy; at once, no waiting",
        "by class: the program, a reset when idle, the bus, NVLink, GSP, RMA",
        gpu_errors,
        needs_history="",
        never_claims="a hardware fault from an application Xid (13, 31, 43): those point at "
        "the program; anything from Xid 45 alone (cleanup after another error)",
    ),
    Rule(
        RuleId.MEMORY_HEALTH,
        "hardware",
        "the driver's memory-health state, read at start and every tick: volatile and "
        "aggregate uncorrectable ECC counts, corrected ECC growth, row remapping (rows "
        "remapped, pending, failure), retired pages and their pending flag",
        "critical: a row remap failed, uncorrectable ECC errors since the driver loaded, or "
        ">= {t.retired_pages_limit} retired pages (DCGM health's fail); warning: a remap or "
        "retirement pending (reset when idle), uncorrectable errors earlier in the board's "
        "life, or corrected errors at >= {t.ecc_storm_per_min:g} a minute; at once",
        "drain and reset; RMA on a remap failure or errors that come back",
        memory_health,
        needs_history="",
        never_claims="that a board without ECC reporting (most GeForce cards) is error-free; "
        "a failure from rows remapped successfully (the board repaired itself)",
    ),
    Rule(
        RuleId.NOT_REPORTING,
        "hardware / remote",
        "which GPUs the source read this tick, the last time each was read",
        "a GPU the source lists gave no reading while others did, for {t.start_after_s:g} s; "
        "a node the source knows is down (its scrape target's up == 0) whose GPUs it never "
        "listed, at once, however long ago it stopped",
        "check the node's exporter and the Prometheus target",
        not_reporting,
        never_claims="that the GPU itself failed: only that its readings stopped arriving",
    ),
)
