"""Stuck, not slow, in the engine: a GPU busy without work, and a job's ranks that wait in
a collective that does not complete.

A tick is read as the live rules read it (``advisor.work``): utilisation at or above
``spin_util_pct`` while power, memory activity and SM activity (two of them read, none
above its bound) and PCIe with NVLink traffic say nothing is computed or moved. The run's
hold is counted in the expression, over the readings the server already holds (a
subquery), so an alert needs no wait of its own after the rules are loaded.
"""

from __future__ import annotations

from gputui.advisor.hang import BUSY_TITLE, busy_remedies, waiting_remedies
from gputui.advisor.promrules.alert import GPU, WHERE, Alert, on_node, value
from gputui.advisor.promrules.health import job_figures
from gputui.advisor.promrules.heat import make
from gputui.advisor.promrules.promql import GPU_IDS, JOB, NVLINK_BYTES, SANE, Terms, number
from gputui.core.names import RuleId, Severity
from gputui.core.units import fmt_duration


def _spinning(terms: Terms) -> str:
    """Each GPU busy without work now, valued by its utilisation."""
    t = terms.t
    util = f"({terms.sel('util_gpu')} or 100 * {terms.sel('gr_active')})"
    zero = f"({util} * 0)"
    power, limit = terms.sane("power_w", "power"), terms.sane("power_limit_w", "power")
    mem = terms.sane("util_mem", "pct")
    sm = f"(100 * {terms.sane('sm_activity', 'pct')})"
    names = (*terms.names("pcie_rx_bps"), *terms.names("pcie_tx_bps"), *NVLINK_BYTES)
    links = f"sum without (__name__) ({terms.metric(*names)} < {number(SANE['bytes'])})"
    works = (
        f"({power} > {number(t.spin_power_share)} * {limit}) "
        f"or ({mem} > {number(t.spin_mem_pct)}) or ({sm} > {number(t.spin_sm_pct)}) "
        f"or ({links} >= {number(t.spin_link_bps)})"
    )
    read = " + ".join(
        f"(({known}) * 0 + 1 or {zero})" for known in (f"{power} and {limit} > 0", mem, sm)
    )
    return f"(({util} >= {number(t.spin_util_pct)}) unless ({works})) and ({read} >= 2)"


def _spun_for(terms: Terms, seconds: float) -> str:
    """Each GPU busy without work through the last ``seconds`` (and ``min_points``
    readings at least, as the live run needs), valued by its mean utilisation: every
    evaluation of the span's subquery found it so. The alert's hold of one scrape
    interval brings the run to ``seconds``."""
    span = max(seconds, terms.window)
    readings = terms.record(
        f"spin_readings_{number(span)}s", terms.subquery(_spinning(terms), "count_over_time", span)
    )
    need = max(terms.t.min_points, int(seconds // terms.scrape_s))
    return f"({terms.util()} and ({readings} >= {number(need)}))"


def _waiting_ranks(terms: Terms) -> str:
    """The GPUs of a job (of two GPUs or more, by its workload label) busy without work
    for ``hang_unseen_s``, labelled with the job."""
    _, util = job_figures(terms)
    spun = f"({terms.jobbed(_spun_for(terms, terms.t.hang_unseen_s))} unless on({JOB}) vector(1))"
    return f"{spun} and on({JOB}) (count by ({JOB}) ({util}) >= 2)"


def _no_work(terms: Terms, seconds: float) -> str:
    t = terms.t
    return (
        f"{value()} % utilisation (mean over the last {fmt_duration(terms.window)}) with no "
        f"work through the last {fmt_duration(seconds)}: power at most "
        f"{100 * t.spin_power_share:g} % of the enforced limit, memory activity at most "
        f"{t.spin_mem_pct:g} %, SM activity at most {t.spin_sm_pct:g} % (two of these read, "
        f"none above), PCIe and NVLink traffic under {t.spin_link_bps / 1e9:g} GB/s"
    )


def stuck(terms: Terms) -> list[Alert]:
    t = terms.t
    waiting = _waiting_ranks(terms)
    pid = f"PID (nvidia-smi --query-compute-apps=pid --format=csv -i {GPU} names it)"
    hang = make(
        terms,
        RuleId.COLLECTIVE_HANG,
        "GputuiCollectiveHang",
        Severity.WARNING,
        waiting,
        (
            "Probable hang: this rank of a job waits in a collective that does not complete",
            f"{_no_work(terms, t.hang_unseen_s)}; a GPU of job {{{{ $labels.{JOB} }}}} "
            f"({JOB}, with other GPUs): its collective waits for a rank that does not join "
            "(idle, gone, at work on its CPU, or on another node)",
            (
                "Find the rank that does not join: the job's GPUs that idle (their "
                "GputuiStragglerIdle alert) or stopped reporting, and its process's log",
                on_node(
                    f"nvidia-smi --query-compute-apps=pid,process_name --format=csv -i {GPU} "
                    "names the waiting rank's PID"
                ),
                *waiting_remedies("PID"),
            ),
        ),
    )
    busy = make(
        terms,
        RuleId.BUSY_NO_WORK,
        "GputuiBusyNoWork",
        Severity.WARNING,
        f"{_spun_for(terms, t.spin_alone_s)} unless on({', '.join(GPU_IDS)}) ({waiting})",
        (
            BUSY_TITLE,
            f"{_no_work(terms, t.spin_alone_s)}; no other GPU shares its workload label: a "
            "context whose process is gone, a kernel that spins, or a rank of a job the "
            "labels do not name",
            busy_remedies(f"py-spy dump --native --pid {pid}", f"On {WHERE}: ", GPU),
        ),
    )
    return [hang, busy]
