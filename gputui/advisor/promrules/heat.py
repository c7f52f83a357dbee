"""Heat, power and clocks in the engine: thermal throttling, running hot, hardware
slowdown, the power cap, a lowered limit, a clock held down with no reason named, and a fan
that does not cool."""

from __future__ import annotations

from gputui.advisor.cooling import FAN_TITLES, HELD, STOPPED, fan_remedies
from gputui.advisor.promrules.alert import GPU, Alert, on_node, value
from gputui.advisor.promrules.promql import (
    HW_SLOWDOWN,
    NAMED_CAUSES,
    POWER_CAP,
    THERMAL,
    Terms,
    duration,
    number,
)
from gputui.advisor.thermal import COOLING
from gputui.core.names import RuleId, Severity
from gputui.core.units import fmt_duration


def make(
    terms: Terms,
    rule: RuleId,
    name: str,
    severity: Severity,
    expr: str,
    texts: tuple[str, str, tuple[str, ...]],
    hold_s: float | None = None,
) -> Alert:
    """An alert at the terms' scrape interval: held as the live rule holds (its own hold,
    else ``start_after_s``), for one scrape interval at least: two evaluations in a row,
    even where the live finding shows at once (an Xid: one more reading's delay, and no
    notification lost to a server that starts with the problem already there, before it
    has found its Alertmanager); kept as long as the live finding outlasts its condition
    (``end_after_s``, stretched)."""
    t = terms.t
    hold = t.start_after_s if hold_s is None else hold_s
    title, evidence, remedies = texts
    return Alert(
        rule=rule,
        name=name,
        severity=severity,
        expr=terms.named(expr),
        for_s=max(terms.scrape_s, hold),
        keep_s=t.end_after_s,
        title=title,
        evidence=evidence,
        remedies=remedies,
    )


def _over(terms: Terms) -> str:
    return f"over the last {fmt_duration(terms.window)}"


def thermal(terms: Terms) -> list[Alert]:
    t = terms.t
    temp = terms.mean("temp_c", t.hot_mean_s)
    throttled = f"{terms.bit_share(THERMAL)} >= {number(t.thermal_fraction)}"
    at_slowdown = f"{temp} >= {terms.slowdown()}"
    throttle = make(
        terms,
        RuleId.THERMAL_THROTTLE,
        "GputuiThermalThrottle",
        Severity.CRITICAL,
        terms.not_idle(f"{temp} and (({throttled}) or ({at_slowdown}))"),
        (
            "Thermal throttling: the GPU slows itself down to cool off",
            f"{value()} °C ({fmt_duration(t.hot_mean_s)} mean), not idle; SW or HW thermal "
            f"slowdown set in >= {100 * t.thermal_fraction:g} % of the readings {_over(terms)}, or "
            "the temperature at or above the board's slowdown limit",
            COOLING,
        ),
    )
    near = f"{temp} >= ({terms.slowdown()} - {number(t.hot_margin_c)})"
    no_limit = f"({temp} >= {number(t.hot_temp_c)}) unless {terms.slowdown()}"
    hot = make(
        terms,
        RuleId.THERMAL_HOT,
        "GputuiThermalHot",
        Severity.WARNING,
        terms.not_idle(f"(({near}) or ({no_limit})) unless ({throttled}) unless ({at_slowdown})"),
        (
            "Running hot: at the board's own temperature limit",
            f"{value()} °C ({fmt_duration(t.hot_mean_s)} mean), within {t.hot_margin_c:g} °C "
            f"of the board's slowdown limit (or >= {t.hot_temp_c:g} °C on a board that reports "
            "none), not idle, not yet throttling",
            COOLING,
        ),
    )
    return [throttle, hot, _hw_slowdown(terms)]


def _hw_slowdown(terms: Terms) -> Alert:
    t = terms.t
    busy = f"({terms.sel('util_gpu')} >= bool {number(t.busy_util_pct)})"
    hits = terms.record(
        "hw_slowdown_busy_readings",
        terms.subquery(f"{terms.any_bit(HW_SLOWDOWN)} * {busy}", "sum_over_time", terms.window),
    )
    busy_n = terms.record("busy_readings", terms.subquery(busy, "sum_over_time", terms.window))
    # a reason bit is an instant: it must hold for hw_slowdown_min_s, over at least
    # hw_slowdown_min_readings of the source's readings
    need = max(t.hw_slowdown_min_readings, -(-t.hw_slowdown_min_s // terms.scrape_s))
    return make(
        terms,
        RuleId.HW_SLOWDOWN,
        "GputuiHwSlowdown",
        Severity.CRITICAL,
        f"100 * {hits} / {busy_n} >= {number(100 * t.hw_slowdown_fraction)} "
        f"and {hits} >= {number(need)}",
        (
            "Hardware slowdown under load: the board cuts its clocks (power or temperature)",
            f"HW slowdown or HW power brake in {value()} % of the busy readings "
            f"{_over(terms)} (at least {100 * t.hw_slowdown_fraction:g} %, in {need:g} readings or "
            "more)",
            (
                "Check the power supply units and the GPU's power cables",
                "An external power brake signal (chassis / BMC) may be asserted: check the BMC log",
                "Check board and memory temperature; this is a hardware or chassis issue",
            ),
        ),
    )


def power(terms: Terms) -> list[Alert]:
    t = terms.t
    draw, limit = terms.mean("power_w"), terms.mean("power_limit_w")
    default = f"({terms.sel('power_default_limit_w')} < 1e5)"
    capped = (
        f"({draw} >= {number(t.power_at_limit)} * {limit}) "
        f"and ({terms.bit_share(POWER_CAP)} >= {number(t.power_cap_fraction)})"
    )
    lowered = f"({limit} < ({default} - {number(t.limit_lowered_w)}))"
    hot = (
        f"({terms.bit_share(THERMAL)} >= {number(t.thermal_fraction)}) or "
        f"({terms.mean('temp_c', t.hot_mean_s)} >= ({terms.slowdown()} - {number(t.hot_margin_c)}))"
    )
    slow = (
        f"({terms.mean('sm_clock_mhz')} < {number(t.power_cap_clock_floor)} * {terms.max_clock()})"
    )
    cap = make(
        terms,
        RuleId.POWER_CAP,
        "GputuiPowerCap",
        Severity.WARNING,
        terms.not_idle(f"({capped}) and ({lowered} or {hot} or {slow})"),
        (
            "Power capped: clocks held down to stay within the power limit",
            f"power {value()} W, >= {100 * t.power_at_limit:g} % of the enforced limit with the SW "
            f"power cap set in >= {100 * t.power_cap_fraction:g} % of the readings {_over(terms)}, "
            "and a cause to act on: the limit below the board's default, the board hot too, "
            f"or the SM clock under {100 * t.power_cap_clock_floor:g} % of its maximum",
            (
                on_node(f"check the limit: nvidia-smi -i {GPU} -q -d POWER"),
                "Where the limit is below the default: restore it (root), nvidia-smi -pl "
                "<default>; where the board is hot: cool it (airflow, fan curve, inlet)",
                "Check the power delivery (PSU, cables) if clocks stay low at the limit",
            ),
        ),
    )
    below = make(
        terms,
        RuleId.POWER_LIMIT_LOWERED,
        "GputuiPowerLimitLowered",
        Severity.WARNING,
        f"({default} - {terms.sel('power_limit_w')}) > {number(t.limit_lowered_w)}",
        (
            "Power limit set below the card's default",
            f"the enforced power limit is {value()} W below the board's default",
            (
                on_node(f"restore it (root): sudo nvidia-smi -i {GPU} -pl <its default>"),
                "Check for a startup script, a datacenter power policy or DCGM that lowers it",
            ),
        ),
    )
    return [cap, below]


def clocks(terms: Terms) -> list[Alert]:
    t = terms.t
    share = f"100 * {terms.mean('sm_clock_mhz')} / {terms.max_clock()}"
    return [
        make(
            terms,
            RuleId.CLOCKS_HELD,
            "GputuiClocksHeld",
            Severity.WARNING,
            f"({share} < {number(100 * t.held_clock_share)}) "
            f"and ({terms.util()} >= {number(t.held_busy_pct)}) "
            f"and ({terms.bit_share(NAMED_CAUSES)} <= {number(t.held_named_share)})",
            (
                "SM clock held far below its maximum, and the driver names no reason",
                f"SM clock at {value()} % of its maximum {_over(terms)} while busy "
                f"(utilisation >= {t.held_busy_pct:g} %), and no power cap, thermal or "
                "hardware slowdown, power brake or sync boost named in more than "
                f"{100 * t.held_named_share:g} % of the readings: locked clocks or a limit from "
                "outside the GPU",
                (
                    on_node(
                        f"see what holds it: nvidia-smi -i {GPU} -q -d CLOCK,PERFORMANCE "
                        "(locked or application clocks, the clock-event reasons)"
                    ),
                    on_node(
                        f"locked clocks: reset them (root): sudo nvidia-smi -i {GPU} -rgc; "
                        f"application clocks: sudo nvidia-smi -i {GPU} -rac"
                    ),
                    "No lock set: a limit from outside the GPU holds it (the chassis or BMC "
                    "power capping, a datacenter power policy): check the BMC's power and "
                    "thermal logs",
                ),
            ),
        )
    ]


def _fan_evidence(terms: Terms) -> dict[str, str]:
    """The evidence of a stopped fan's alert and of a fan held low's."""
    t = terms.t

    def board(speed: float) -> str:
        return (
            f"the board at {value()} °C ({fmt_duration(t.hot_mean_s)} mean), the fan speed "
            f"the driver asks for at or below {speed:g} % through the last "
            f"{fmt_duration(terms.window)}: within {t.fan_hot_margin_c:g} °C of its slowdown "
            f"limit (or of {t.hot_temp_c:g} °C where it reports none)"
        )

    return {
        STOPPED: board(t.fan_stopped_pct)
        + f", or above {t.fan_stop_max_c:g} °C and heating >= {t.fan_rising_c_min:g} °C/min "
        f"under load; a zero-RPM fan stop holds fans off at idle up to about "
        f"{t.fan_stop_max_c:g} °C, never on a hot board",
        HELD: board(t.fan_low_pct) + f" and heating >= {t.fan_rising_c_min:g} °C/min; a "
        "driver's own fan curve runs faster than this on a board this hot",
    }


def fans(terms: Terms) -> list[Alert]:
    """A fan stopped on a hot (or warm and heating) board, or held low while a hot board
    heats: a warning, and critical within ``hot_margin_c`` of the board's limit."""
    t = terms.t
    fan = terms.record("fan_pct_max", terms.over("max_over_time", "fan_pct", terms.window))
    temp = terms.mean("temp_c", t.hot_mean_s)
    limit = f"({terms.slowdown()} or ({temp} * 0 + {number(t.hot_temp_c)}))"
    rising = (
        f"(60 * deriv({terms.sel('temp_c')}[{duration(terms.window)}]) "
        f">= {number(t.fan_rising_c_min)})"
    )
    hot = f"({temp} >= ({limit} - {number(t.fan_hot_margin_c)}))"
    heating = terms.not_idle(f"({temp} >= {number(t.fan_stop_max_c)}) and {rising}")
    stopped = f"{temp} and ({fan} <= {number(t.fan_stopped_pct)}) and ({hot} or ({heating}))"
    held = (
        f"({temp} and ({fan} <= {number(t.fan_low_pct)}) and {hot} and {rising}) unless ({stopped})"
    )
    near = f"({temp} >= ({limit} - {number(t.hot_margin_c)}))"
    evidence = _fan_evidence(terms)
    out = []
    for kind, name, expr in (
        (STOPPED, "GputuiFanStopped", stopped),
        (HELD, "GputuiFanHeldLow", held),
    ):
        for severity, suffix, cut, said in (
            (Severity.WARNING, "", "unless", ""),
            (
                Severity.CRITICAL,
                "NearLimit",
                "and",
                f"; within {t.hot_margin_c:g} °C of the limit: it throttles next",
            ),
        ):
            texts = (FAN_TITLES[kind], evidence[kind] + said, fan_remedies(GPU, kind))
            alert = make(
                terms, RuleId.FAN_FAULT, name + suffix, severity, f"({expr}) {cut} {near}", texts
            )
            out.append(alert)
    return out
