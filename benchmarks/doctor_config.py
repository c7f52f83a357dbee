"""Wall time of `gputui doctor --config`: the whole command as a job script runs it (a new
Python process: imports, NVML open, one reading, every configuration check, the report),
and where the time goes inside.

Usage: python benchmarks/doctor_config.py [--runs 5] [--gpus 8] [--real]

Without --real the command runs over the test double of libnvidia-ml
(tests/nvml_double.py, an HGX board of --gpus GPUs): gputui's and pynvml's own time, not the
driver's. With --real it runs on this machine's GPUs (NVIDIA's driver needed). The host
side (cgroups, /dev/shm, limits, sysfs) is this machine's either way.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

_FAKE = """
import sys, pytest
from tests.nvml_double import driver, hgx, install
from gputui.cli import main
mp = pytest.MonkeyPatch()
install(mp, driver(570, hgx({gpus})))
sys.exit(main(["doctor", "--config"]))
"""


def command(gpus: int, real: bool) -> list[str]:
    if real:
        return [sys.executable, "-m", "gputui", "doctor", "--config"]
    return [sys.executable, "-c", _FAKE.format(gpus=gpus)]


def whole(runs: int, gpus: int, real: bool) -> None:
    times, statuses = [], set()
    for _ in range(runs):
        start = time.perf_counter()
        done = subprocess.run(
            command(gpus, real), cwd=ROOT, capture_output=True, text=True, check=False
        )
        times.append(time.perf_counter() - start)
        statuses.add(done.returncode)
        if done.returncode not in (0, 1, 2, 4):
            print(done.stdout, done.stderr, file=sys.stderr)
    where = "real driver" if real else f"fake driver, {gpus} GPUs"
    print(f"gputui doctor --config ({where}), {runs} runs, new process each:")
    print(f"  wall time median {statistics.median(times):.2f} s, max {max(times):.2f} s")
    print(f"  exit statuses: {sorted(statuses)}")


def stages(gpus: int, real: bool) -> None:
    """The same in one process: imports, open, one reading, the checks, the report."""
    start = time.perf_counter()
    import pytest

    from gputui.advisor.config_check import check_once
    from gputui.exporters.doctor import config_report_lines
    from gputui.sources.host import HostReader
    from gputui.sources.nvml import NvmlSource
    from gputui.sources.settings import SettingsReader

    imported = time.perf_counter()
    if not real:
        from tests.nvml_double import driver, hgx, install

        install(pytest.MonkeyPatch(), driver(570, hgx(gpus)))
    source = NvmlSource(host=HostReader(), settings=SettingsReader(own=True))
    t0 = time.perf_counter()
    devices = source.open()
    t1 = time.perf_counter()
    frame = source.read()
    t2 = time.perf_counter()
    source.close()
    verdict = check_once(devices, frame)
    t3 = time.perf_counter()
    config_report_lines("NVML", devices, frame, verdict, t3 - start)
    t4 = time.perf_counter()
    print("in one process:")
    for name, seconds in (
        ("imports", imported - start),
        ("NVML open (static facts, topology, P2P)", t1 - t0),
        ("one reading (GPUs, processes, host, settings)", t2 - t1),
        (f"{len(verdict.checks)} configuration checks", t3 - t2),
        ("the report's lines", t4 - t3),
    ):
        print(f"  {name:48} {1000 * seconds:8.1f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--real", action="store_true", help="this machine's GPUs")
    args = parser.parse_args()
    whole(args.runs, args.gpus, args.real)
    stages(args.gpus, args.real)


if __name__ == "__main__":
    main()
