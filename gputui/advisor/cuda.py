"""Cause 3 of the article: CUDA and driver configuration."""

from __future__ import annotations

from collections.abc import Iterator

from gputui.advisor.context import Context
from gputui.advisor.finding import Candidate
from gputui.advisor.jobs import env_holders, set_to
from gputui.advisor.rule import Rule
from gputui.core.names import RuleId, Severity


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
    """On each GPU process's environment, and doctor's own (the job a script will start)."""
    for holder in env_holders(ctx):
        value = set_to(holder.env, "CUDA_LAUNCH_BLOCKING")
        if value is None:
            continue
        for gpu in holder.gpus:
            yield Candidate(
                rule=RuleId.CUDA_LAUNCH_BLOCKING,
                severity=Severity.WARNING,
                gpu=gpu,
                title="CUDA_LAUNCH_BLOCKING is set: every kernel launch waits for the GPU",
                evidence=(f"{holder.who} runs with CUDA_LAUNCH_BLOCKING={value}",),
                remedies=(
                    "Unset CUDA_LAUNCH_BLOCKING: it is a debugging aid that serialises every "
                    "kernel launch",
                ),
            )


def compat_library(libraries: tuple[str, ...]) -> str | None:
    """The forward-compatibility libcuda (cuda-compat) a process loaded, if any."""
    for path in libraries:
        name = path.rsplit("/", 1)[-1]
        if name.startswith("libcuda.so") and "/compat/" in path:
            return path
    return None


def _mismatch(
    runtime: tuple[int, int | None],
    driver: tuple[int, int | None],
    compat: str | None,
    where: str,
) -> tuple[Severity, str, list[str]] | None:
    """How a process's CUDA runtime stands to the driver's CUDA version, if it matters."""
    newer_major = runtime[0] > driver[0]
    newer_minor = (
        runtime[0] == driver[0]
        and runtime[1] is not None
        and driver[1] is not None
        and runtime[1] > driver[1]
    )
    if newer_major and compat is None:
        return (
            Severity.CRITICAL,
            "CUDA runtime of a major version the driver does not support",
            [where, "no forward-compatibility libcuda (cuda-compat) in its maps"],
        )
    if newer_major:
        return (
            Severity.INFO,
            "Newer CUDA runtime through the forward-compatibility package",
            [where, f"forward compatibility: {compat} (data-centre GPUs only)"],
        )
    if newer_minor:
        return (
            Severity.INFO,
            "CUDA runtime newer than the driver, within one major: minor-version compatibility",
            [
                where,
                f"CUDA {runtime[0]}.x runs on this driver; only PTX JIT of code built for "
                f"the newer runtime, and its newest APIs, need a newer driver",
            ],
        )
    if runtime[0] < driver[0] - 1:
        return (
            Severity.INFO,
            "CUDA runtime several major versions older than the driver's",
            [where],
        )
    return None


def driver_mismatch(ctx: Context) -> Iterator[Candidate]:
    for sample, device in ctx.samples():
        driver = _version(device.cuda_driver_version)
        if driver is None:
            continue
        for proc in ctx.processes(sample.index):
            runtime = _version(proc.cuda_runtime)
            if runtime is None:
                continue
            source = proc.cuda_runtime_evidence or "its mapped libcudart"
            where = (
                f"pid {proc.pid} {proc.name or ''} loaded CUDA runtime {proc.cuda_runtime} "
                f"(read from {source}); the driver ({device.driver_version or '?'}) supports "
                f"CUDA {device.cuda_driver_version}"
            )
            found = _mismatch(runtime, driver, compat_library(proc.cuda_libraries), where)
            if found is None:
                continue
            severity, title, lines = found
            wheel = (
                f" (e.g. a PyTorch wheel for cu{device.cuda_driver_version.replace('.', '')})"
                if device.cuda_driver_version
                else ""
            )
            yield Candidate(
                rule=RuleId.CUDA_DRIVER_MISMATCH,
                severity=severity,
                gpu=sample.index,
                title=title,
                evidence=tuple(lines),
                remedies=(
                    f"Install a framework build for the driver's CUDA version{wheel}",
                    "Or update the NVIDIA driver to one that supports this CUDA version",
                )
                if severity is not Severity.INFO
                else ("Nothing needed while it runs; a newer driver removes the caveat",),
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
        "the environment of the processes on the GPU (where permitted), and doctor's own",
        "a process runs with CUDA_LAUNCH_BLOCKING set to anything but 0",
        "unset it",
        launch_blocking,
        needs_history="",
    ),
    Rule(
        RuleId.CUDA_DRIVER_MISMATCH,
        "3 configuration",
        "the CUDA runtime each GPU process loaded (libcudart's full soname, else the version "
        "files beside a hashed or pip copy: the framework's version module, the "
        "nvidia-cuda-runtime package metadata), a cuda-compat libcuda in its maps, the "
        "driver's CUDA version",
        "a runtime of a newer major version than the driver's without a cuda-compat libcuda "
        "(critical); a newer minor of the same major (minor-version compatibility), a newer "
        "major through cuda-compat, or 2+ major versions older (info)",
        "a framework build for the driver's CUDA, or a newer driver",
        driver_mismatch,
        needs_history="",
        needs=("cuda_driver_version",),
        never_claims="a mismatch for a 12.x runtime on a 12.y driver (minor-version "
        "compatibility) or for a newer runtime loaded with cuda-compat",
    ),
    Rule(
        RuleId.PERSISTENCE_OFF,
        "3 configuration",
        "persistence mode",
        "persistence mode disabled (Linux)",
        "nvidia-persistenced or nvidia-smi -pm 1",
        persistence_off,
        needs_history="",
        needs=("persistence_mode",),
    ),
)
