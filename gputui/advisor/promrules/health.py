"""Health, silence and stragglers in the engine: Xids by class, the memory's health, a GPU
or a node that stopped reporting (however long ago), a straggler among a job's GPUs."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

from gputui.advisor.health import SILENT
from gputui.advisor.promrules.alert import GPU, WHERE, Alert, Recording, value
from gputui.advisor.promrules.heat import make
from gputui.advisor.promrules.promql import GPU_IDS, JOB, NODE_IDS, SANE, Terms, duration, number
from gputui.core.names import RuleId, Severity
from gputui.core.units import fmt_duration
from gputui.core.xid import UNKNOWN, XIDS

#: the series that remembers each GPU's last reading, so a GPU or a node that stopped
#: reporting stays a finding however long ago it stopped (a rule reads its own output)
LAST_SEEN = "gputui:dcgm_gpu:last_seen_timestamp"
#: a GPU silent this long is taken as retired: the series forgets it
FORGET_S = 7 * 86400.0
#: how far back the series is seeded when the rules are first loaded (every five minutes:
#: an instant lookup finds the last reading up to five minutes before each)
SEED_S = 3600.0
_SEVERITY = {"info": Severity.INFO, "warning": Severity.WARNING, "critical": Severity.CRITICAL}


def xids(terms: Terms) -> list[Alert]:
    """One alert a class of Xid (the same severity and remedies), firing for
    ``xid_window_s`` after the last Xid's code changed to one of the class's."""
    t = terms.t
    # the GPUs whose last Xid's code changed in the window, valued by it: a handful,
    # recorded once for the classes' alerts to pick from
    code = terms.record(
        "xid_new",
        f"({terms.sel('xid')} < {number(SANE['xid'])} > 0) "
        f"and (changes({terms.sel('xid')}[{duration(t.xid_window_s)}]) > 0)",
    )
    classes: dict[tuple[str, str, tuple[str, ...]], list[int]] = {}
    for number_, xid in sorted(XIDS.items()):
        if xid.origin != "benign":
            classes.setdefault((xid.origin, xid.level, xid.remedies), []).append(number_)
    out = []
    for (origin, level, remedies), codes in classes.items():
        meanings = "; ".join(f"{c} {XIDS[c].meaning}" for c in codes)
        out.append(
            make(
                terms,
                RuleId.GPU_ERRORS,
                f"GputuiXid{origin.capitalize()}{codes[0]}",
                _SEVERITY[level],
                _any_of(code, codes),
                (
                    _title(origin),
                    f"Xid {value()} in the last {fmt_duration(t.xid_window_s)} ({origin}: "
                    f"{meanings})",
                    tuple(_on_gpu(r) for r in remedies),
                ),
                hold_s=0.0,
            )
        )
    listed = sorted(XIDS)
    out.append(
        make(
            terms,
            RuleId.GPU_ERRORS,
            "GputuiXidUnlisted",
            Severity.WARNING,
            f"{code} unless ({_any_of(code, listed)})",
            (
                _title("hardware"),
                f"Xid {value()} in the last {fmt_duration(t.xid_window_s)}: not in gputui's "
                "catalogue, checked as hardware (NVIDIA's Xid catalogue has its meaning)",
                tuple(_on_gpu(r) for r in UNKNOWN.remedies),
            ),
            hold_s=0.0,
        )
    )
    return out


def _any_of(code: str, codes: Sequence[int]) -> str:
    return " or ".join(f"{code} == {c}" for c in codes)


def _title(origin: str) -> str:
    if origin == "application":
        return "Application error on this GPU: look at the program first"
    return "Hardware errors on this GPU"


def _on_gpu(remedy: str) -> str:
    if "{gpu}" not in remedy:
        return remedy
    return f"On {WHERE}: " + remedy.replace("{gpu}", GPU)


def memory(terms: Terms) -> list[Alert]:
    t = terms.t

    def state(attr: str) -> str:
        return f"({terms.sel(attr)} < {number(SANE['reasons'])})"

    retired = f"({state('retired_pages_sbe')} + {state('retired_pages_dbe')})"
    failing = (
        f"({state('ecc_volatile_uncorrected')} > 0) or ({state('remapped_rows_failure')} > 0) "
        f"or ({retired} >= {t.retired_pages_limit})"
    )
    storm = f"60 * rate({terms.sel('ecc_volatile_corrected')}[{duration(terms.window)}])"
    pending = (
        f"({state('remapped_rows_pending')} > 0) or ({state('retired_pages_pending')} > 0) "
        f"or ({storm} >= {number(t.ecc_storm_per_min)})"
    )
    reset = f"sudo nvidia-smi -r -i {GPU}"
    return [
        make(
            terms,
            RuleId.MEMORY_HEALTH,
            "GputuiMemoryFailing",
            Severity.CRITICAL,
            failing,
            (
                "Memory errors: this GPU's memory is failing",
                "uncorrectable ECC errors since the driver loaded, a failed row remap, or "
                f">= {t.retired_pages_limit} retired pages (DCGM health's fail)",
                (
                    "Drain the node: stop scheduling jobs on this GPU",
                    f"On {WHERE}: reset it when idle ({reset}) and watch the counters "
                    f"(nvidia-smi -q -d ECC,ROW_REMAPPER -i {GPU})",
                    "A remap failure, or errors that come back after a reset: run dcgmi diag "
                    "-r 3 and open an RMA with the board's serial number",
                ),
            ),
            hold_s=0.0,
        ),
        make(
            terms,
            RuleId.MEMORY_HEALTH,
            "GputuiMemoryRepairPending",
            Severity.WARNING,
            f"({pending}) unless ({failing})",
            (
                "Memory health: a repair waits for a reset, or errors to watch",
                "a row remap or page retirement pending (it takes effect at the next GPU "
                f"reset), or corrected ECC errors at >= {t.ecc_storm_per_min:g} a minute",
                (
                    f"On {WHERE}: reset the GPU when it is idle ({reset}) or reboot: the "
                    "repair takes effect then",
                    "Drain it first so no job is on it during the reset; it may keep working "
                    "until then",
                ),
            ),
            hold_s=0.0,
        ),
    ]


def _by(labels: Sequence[str], terms: Terms) -> str:
    """A ``by`` clause of ``labels`` and those the user's ``--match`` names (two rule
    files for two clusters keep their remembered GPUs apart)."""
    named = re.findall(r"([A-Za-z_][A-Za-z0-9_]*)\s*(?:=~|!~|!=|=)", terms.match)
    return ", ".join(dict.fromkeys([*labels, *named]))


def last_seen(terms: Terms) -> Recording:
    by = _by(GPU_IDS, terms)
    ref = terms.ref()
    carried = terms.of(LAST_SEEN)
    return Recording(
        LAST_SEEN,
        f"max by ({by}) (timestamp({ref}))"
        f" or max by ({by}) ({carried} > time() - {number(FORGET_S)})"
        f" or max by ({by}) (max_over_time(timestamp({ref})[{duration(SEED_S)}:5m]))",
    )


def silent(terms: Terms) -> list[Alert]:
    gpus, nodes = _by(GPU_IDS, terms), _by(NODE_IDS, terms)
    carried = terms.of(LAST_SEEN)
    ref = terms.ref()
    # a node is down once its newest reading is 1.5 of its scrape intervals old and a
    # second (``sources.prometheus.nodes.DOWN_AFTER_INTERVALS``: its second scrape missed)
    late = number(1.5 * terms.scrape_s + 1)
    # reporting: a reading that recent (a series a scrape no longer refreshes stays in an
    # instant query for the lookback's 5 minutes where no staleness marker ended it)
    fresh = f"(timestamp({ref}) > time() - {late})"
    reporting = f"count by ({nodes}) {fresh}"
    node_silent = f"(time() - max by ({nodes}) ({carried})) > {late}"
    gpu = make(
        terms,
        RuleId.NOT_REPORTING,
        "GputuiGpuNotReporting",
        Severity.WARNING,
        f"((time() - {carried}) > {late}) unless on({gpus}) {fresh} and on({nodes}) {reporting}",
        (
            "No readings from this GPU",
            f"no reading from GPU {GPU} on {WHERE} for {value()} s, while the node's other "
            "GPUs report",
            SILENT,
        ),
    )
    node = make(
        terms,
        RuleId.NOT_REPORTING,
        "GputuiNodeNotReporting",
        Severity.WARNING,
        f"{node_silent} unless on({nodes}) {reporting}",
        (
            "Node not reporting",
            f"no reading from any GPU of {WHERE} for {value()} s (it reported before: the "
            f"engine remembers a GPU for {fmt_duration(FORGET_S)})",
            SILENT,
        ),
    )
    target = make(
        terms,
        RuleId.NOT_REPORTING,
        "GputuiExporterDown",
        Severity.WARNING,
        f"(up == 0) and on(job) count by (job) ({ref}) unless on(instance) {carried}",
        (
            "Node not reporting",
            f"the scrape of {WHERE}'s exporter fails (up == 0), in a job whose other targets "
            "export DCGM series, and no GPU of it reported since the rules were loaded",
            SILENT,
        ),
    )
    return [gpu, replace(node, node_level=True), replace(target, node_level=True)]


def job_figures(terms: Terms) -> tuple[str, str]:
    """Each GPU of a job (labelled with it), its SM clock share where busy and its
    utilisation, recorded once: the medians and both alerts read them (a job's GPUs are a
    small part of a cluster's where few carry a workload label)."""

    def jobbed(expr: str) -> str:
        return f"({terms.jobbed(expr)} unless on({JOB}) vector(1))"

    busy = f"({terms.util()} >= {number(terms.t.busy_util_pct)})"
    share = f"100 * {terms.mean('sm_clock_mhz')} / {terms.max_clock()} and {busy}"
    clock = terms.record("job_clock_share", jobbed(share))
    return clock, terms.record("job_util", jobbed(terms.util()))


def stragglers(terms: Terms) -> list[Alert]:
    t = terms.t
    clock, util = job_figures(terms)
    peers = f"(count by ({JOB}) ({clock}) >= 2)"
    slow_clock = (
        f"{clock} <= on({JOB}) group_left() (quantile by ({JOB}) (0.5, {clock}) - "
        f"{number(100 * t.straggler_clock_gap)}) and on({JOB}) {peers}"
    )
    median_util = f"quantile by ({JOB}) (0.5, {util})"
    slow_util = (
        f"{util} <= on({JOB}) group_left() ({median_util} - {number(t.straggler_util_gap_pct)}) "
        f"and on({JOB}) ({median_util} >= {number(t.busy_util_pct)})"
    )
    remedies = (
        "Fix this GPU's own cause first (see its other alerts): a data-parallel job runs at "
        "the pace of its slowest GPU",
        "Check that every rank gets the same amount of work (uneven shards, sequence lengths)",
    )
    title = "Straggler: this GPU is slower than the other GPUs of its job"
    window = fmt_duration(terms.window)
    return [
        make(
            terms,
            RuleId.STRAGGLER,
            "GputuiStragglerClock",
            Severity.WARNING,
            slow_clock,
            (
                title,
                f"SM clock at {value()} % of its maximum over the last {window}, "
                f">= {100 * t.straggler_clock_gap:g} points below the median of its job's busy "
                f"GPUs ({JOB}: {{{{ $labels.{JOB} }}}})",
                remedies,
            ),
            hold_s=terms.window,
        ),
        make(
            terms,
            RuleId.STRAGGLER,
            "GputuiStragglerIdle",
            Severity.WARNING,
            f"({slow_util}) unless on({JOB}, {', '.join(GPU_IDS)}) ({slow_clock})",
            (
                title,
                f"utilisation {value()} % over the last {window}, >= "
                f"{t.straggler_util_gap_pct:g} points below the median of its job's GPUs "
                f"({JOB}: {{{{ $labels.{JOB} }}}}) while they are busy",
                remedies,
            ),
            hold_s=terms.window,
        ),
    ]
