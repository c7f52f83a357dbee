"""Power: capping at the limit, a lowered limit, and application clocks held down."""

from __future__ import annotations

from collections.abc import Iterator

from gputui import clock_events as ce
from gputui.advisor import evidence
from gputui.advisor.context import Context
from gputui.advisor.finding import Candidate
from gputui.advisor.rule import Rule
from gputui.names import Metric, RuleId, Severity


def power_cap(ctx: Context) -> Iterator[Candidate]:
    t = ctx.t
    for sample, device in ctx.samples():
        if ctx.under_load(sample.index) is False:
            continue
        share = ctx.fraction(sample.index, ce.SW_POWER_CAP)
        power = ctx.stats(sample.index, Metric.POWER_W)
        limit = ctx.stats(sample.index, Metric.POWER_LIMIT_W)
        if share is None or power is None or limit is None or limit.mean <= 0:
            continue
        if share < t.power_cap_fraction or power.mean < t.power_at_limit * limit.mean:
            continue
        lines = [
            f"power {power.mean:.0f} W of the {limit.mean:.0f} W enforced limit "
            f"({100 * power.mean / limit.mean:.0f} %)"
        ]
        default = device.power_default_limit_w
        if default is not None and limit.mean < default - t.limit_lowered_w:
            lines.append(f"the limit is lowered from the default {default:.0f} W")
        lines += evidence.clock_and_reasons(ctx, sample, device, ce.SW_POWER_CAP, share)
        yield Candidate(
            rule=RuleId.POWER_CAP,
            severity=Severity.WARNING,
            gpu=sample.index,
            title="Power capped: clocks held down to stay within the power limit",
            evidence=tuple(lines),
            remedies=(
                "Expected for some heavy loads; compare with the card's specified TDP",
                f"Check the limit: nvidia-smi -i {sample.index} -q -d POWER",
                "Better cooling lowers power at a given clock (leakage falls with temperature)",
            ),
        )


def power_limit_lowered(ctx: Context) -> Iterator[Candidate]:
    for sample, device in ctx.samples():
        default = device.power_default_limit_w
        enforced = sample.power_limit_w
        if default is None or enforced is None:
            continue
        if enforced >= default - ctx.t.limit_lowered_w:
            continue
        yield Candidate(
            rule=RuleId.POWER_LIMIT_LOWERED,
            severity=Severity.WARNING,
            gpu=sample.index,
            title="Power limit set below the card's default",
            evidence=(
                f"enforced limit {enforced:.0f} W, default {default:.0f} W "
                f"({100 * (enforced / default - 1):+.0f} %)",
            ),
            remedies=(
                f"Restore it (needs root): sudo nvidia-smi -i {sample.index} -pl {default:.0f}",
                "Check for a startup script, a datacenter power policy or DCGM that lowers it",
            ),
        )


def clocks_limited(ctx: Context) -> Iterator[Candidate]:
    for sample, device in ctx.samples():
        if ctx.under_load(sample.index) is False:
            continue
        # The applications-clocks reason bit is not evidence on its own: drivers set it on
        # busy GPUs running at their (default) application clocks, and NVML deprecates the
        # applications-clocks API. A setting below the default is what limits the clocks.
        default = device.default_app_sm_clock_mhz
        current = sample.app_sm_clock_mhz
        lowered = (
            default is not None
            and current is not None
            and current < ctx.t.app_clock_lowered * default
        )
        if not lowered:
            continue
        share = ctx.fraction(sample.index, ce.APPLICATIONS_CLOCKS)
        lines = []
        if current is not None and default is not None:
            lines.append(f"application SM clock {current} MHz, default {default} MHz")
        lines += evidence.clock_and_reasons(ctx, sample, device, ce.APPLICATIONS_CLOCKS, share)
        yield Candidate(
            rule=RuleId.CLOCKS_LIMITED,
            severity=Severity.WARNING,
            gpu=sample.index,
            title="Clocks limited by an application-clocks or locked-clocks setting",
            evidence=tuple(lines),
            remedies=(
                f"Reset application clocks (needs root): sudo nvidia-smi -i {sample.index} -rac",
                f"Reset locked GPU clocks (needs root): sudo nvidia-smi -i {sample.index} -rgc",
            ),
        )


RULES = (
    Rule(
        RuleId.POWER_CAP,
        "power",
        "clock-event reasons (SW power cap), power draw, enforced limit, SM clock",
        "not idle, SW power cap set in >= {t.power_cap_fraction:share} of the last "
        "{t.window_s:g} s "
        "and power >= {t.power_at_limit:share} of the limit",
        "expected for some loads; check the limit; better cooling lowers power at a given clock",
        power_cap,
        needs=("clock_reasons", "power_w", "power_limit_w"),
        never_claims="a cap from the reason bit alone: power must sit at the limit too",
    ),
    Rule(
        RuleId.POWER_LIMIT_LOWERED,
        "3 configuration",
        "enforced and default power limits",
        "enforced limit more than {t.limit_lowered_w:g} W below the default (any load)",
        "restore with nvidia-smi -pl <default> (root)",
        power_limit_lowered,
        needs_history="",
        needs=("power_limit_w", "power_default_limit_w"),
        never_claims="that a limit set on purpose is wrong: it names the limit and the way back",
    ),
    Rule(
        RuleId.CLOCKS_LIMITED,
        "3 configuration",
        "application vs default SM clock (the applications-clocks reason as context only)",
        "not idle, application clocks below {t.app_clock_lowered:share} of default",
        "nvidia-smi -rac / -rgc (root)",
        clocks_limited,
        needs=("app_sm_clock_mhz",),
        never_claims="anything from the applications-clocks reason bit alone: drivers set it "
        "on busy GPUs at their default clocks",
    ),
)
