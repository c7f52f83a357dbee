"""Cause 3 of the article: CUDA and driver configuration."""

from __future__ import annotations

from collections.abc import Iterator

from gputui.advisor.context import Context
from gputui.advisor.finding import Candidate
from gputui.advisor.rule import Rule
from gputui.names import RuleId, Severity


def _version(text: str | None) -> tuple[int, int | None] | None:
    if not text:
        return None
    parts = text.split(".")
    try:
        major = int(parts[0])
        minor = int(parts[1]) if len(parts) > 1 and parts[1] else None
    except ValueError:
        return None
    return major, minor


def launch_blocking(ctx: Context) -> Iterator[Candidate]:
    for sample, _device in ctx.samples():
        for proc in ctx.processes(sample.index):
            flag = next((e for e in proc.env if e.startswith("CUDA_LAUNCH_BLOCKING=")), None)
            if flag is None or flag.split("=", 1)[1].strip() in ("", "0"):
                continue
            yield Candidate(
                rule=RuleId.CUDA_LAUNCH_BLOCKING,
                severity=Severity.WARNING,
                gpu=sample.index,
                title="CUDA_LAUNCH_BLOCKING is set: every kernel launch waits for the GPU",
                evidence=(f"pid {proc.pid} {proc.name or ''} runs with {flag}",),
                remedies=(
                    "Unset CUDA_LAUNCH_BLOCKING: it is a debugging aid that serialises every "
                    "kernel launch",
                ),
            )
            break


def driver_mismatch(ctx: Context) -> Iterator[Candidate]:
    for sample, device in ctx.samples():
        driver = _version(device.cuda_driver_version)
        if driver is None:
            continue
        for proc in ctx.processes(sample.index):
            runtime = _version(proc.cuda_runtime)
            if runtime is None:
                continue
            newer = runtime[0] > driver[0] or (
                runtime[0] == driver[0]
                and runtime[1] is not None
                and driver[1] is not None
                and runtime[1] > driver[1]
            )
            much_older = runtime[0] < driver[0] - 1
            if not (newer or much_older):
                continue
            severity: Severity = Severity.CRITICAL if newer else Severity.INFO
            relation = (
                "newer than the driver supports"
                if newer
                else "several major versions older than the driver's"
            )
            yield Candidate(
                rule=RuleId.CUDA_DRIVER_MISMATCH,
                severity=severity,
                gpu=sample.index,
                title=f"CUDA runtime {relation}",
                evidence=(
                    f"pid {proc.pid} {proc.name or ''} loaded CUDA runtime {proc.cuda_runtime}; "
                    f"the driver ({device.driver_version or '?'}) supports CUDA "
                    f"{device.cuda_driver_version} at most",
                ),
                remedies=(
                    "Install a framework build for the driver's CUDA version "
                    f"(e.g. a PyTorch wheel for cu{device.cuda_driver_version.replace('.', '')})"
                    if device.cuda_driver_version
                    else "Install a framework build for the driver's CUDA version",
                    "Or update the NVIDIA driver to one that supports this CUDA version",
                ),
            )
            break


def persistence_off(ctx: Context) -> Iterator[Candidate]:
    for sample, device in ctx.samples():
        if device.persistence_mode is not False:
            continue
        yield Candidate(
            rule=RuleId.PERSISTENCE_OFF,
            severity=Severity.INFO,
            gpu=sample.index,
            title="Persistence mode is off: each new job pays the driver's start-up",
            evidence=("persistence mode disabled",),
            remedies=("Enable the nvidia-persistenced service (or sudo nvidia-smi -pm 1)",),
        )


RULES = (
    Rule(
        RuleId.CUDA_LAUNCH_BLOCKING,
        "3 configuration",
        "the environment of the processes on the GPU (where permitted)",
        "a process runs with CUDA_LAUNCH_BLOCKING set to anything but 0",
        "unset it",
        launch_blocking,
    ),
    Rule(
        RuleId.CUDA_DRIVER_MISMATCH,
        "3 configuration",
        "libcudart version each GPU process mapped (where permitted), the driver's CUDA version",
        "runtime newer than the driver's CUDA (critical), or 2+ major versions older (info)",
        "a framework build for the driver's CUDA, or a newer driver",
        driver_mismatch,
    ),
    Rule(
        RuleId.PERSISTENCE_OFF,
        "3 configuration",
        "persistence mode",
        "persistence mode disabled (Linux)",
        "nvidia-persistenced or nvidia-smi -pm 1",
        persistence_off,
    ),
)
