"""Training-shaped loads on a real NVIDIA GPU, watched by gputui: does the advisor say the
right thing about each?

Usage: python -m benchmarks.real_workloads --out DIR [--seconds 30] [--only heavy,starved-main]

Needs PyTorch with CUDA. For each workload it starts the load in a child process (a small
training loop: a DataLoader feeding bf16 matrix products), waits until the first steps ran,
then runs ``gputui record -o DIR/NAME.jsonl.gz`` and ``gputui doctor --json`` side by side for
``--seconds``, stops the load and prints, as JSON, per workload: the doctor's exit status, its
findings (rule, severity, title), what it could not judge, and the load's own figures (steps
per second, the share of each step spent waiting for data). Then a raw probe of the readings
the advisor's memory-health and power rules depend on, straight from NVML.

Workloads:
- ``idle``: nothing runs on the GPU;
- ``heavy``: back-to-back 8192x8192 bf16 products, fed from GPU memory (a healthy big job:
  power at the board's default limit is its normal state);
- ``fed``: the same with a DataLoader of 4 workers that keeps up (healthy);
- ``starved-workers``: a DataLoader of 4 workers, each burning a core to make a batch, that
  cannot keep up (the GPU busy about 40 % of the time);
- ``starved-main``: ``num_workers=0``: the main process makes every batch itself.

It only reads the GPU: no clock, limit, mode or any other setting is changed. The loads are
stopped on every path.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
WORKLOADS = ("idle", "heavy", "fed", "starved-workers", "starved-main")
GPU_STEP_S = 0.020  # the GPU time of one training step, calibrated at start
BATCH = 32


# -- the loads (run in a child: python -m benchmarks.real_workloads --load NAME) -----------
def _burn(seconds: float) -> None:
    """Keep one CPU core busy for ``seconds``, as decoding and augmenting a batch does."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def run_load(name: str, ready: Path, report: Path, where: str) -> None:
    import torch

    device = torch.device(where)
    big, mid = (8192, 4096) if device.type == "cuda" else (256, 128)  # a CPU only tries it
    a = torch.randn(big, big, device=device, dtype=torch.bfloat16)
    b = torch.randn(big, big, device=device, dtype=torch.bfloat16)
    weight = torch.randn(mid, mid, device=device, dtype=torch.bfloat16)

    def gpu_step(x: Any, products: int) -> Any:
        for _ in range(products):
            x = x @ weight
            x = x / x.abs().amax().clamp(min=1.0)
        return x

    def sync() -> None:
        if device.type == "cuda":
            torch.cuda.synchronize()

    # how many products make GPU_STEP_S on this GPU
    x0 = torch.randn(mid, mid, device=device, dtype=torch.bfloat16)
    gpu_step(x0, 2)
    sync()
    start = time.perf_counter()
    gpu_step(x0, 8)
    sync()
    per_product = (time.perf_counter() - start) / 8
    products = max(1, round(GPU_STEP_S / per_product))

    stop = False

    def on_term(_signum: int, _frame: Any) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, on_term)
    steps = 0
    waited = 0.0
    began = time.perf_counter()
    ready.write_text("ready")
    if name == "idle":
        while not stop:
            time.sleep(0.2)
    elif name == "heavy":
        while not stop:
            for _ in range(20):
                torch.matmul(a, b)
            sync()
            steps += 1
    else:
        workers = 0 if name == "starved-main" else 4
        # per batch, each worker (or the main process) burns this long
        if name == "fed":
            cost = GPU_STEP_S * workers * 0.5  # the workers keep ahead of the GPU
        elif name == "starved-workers":
            cost = GPU_STEP_S * workers / 0.4  # the GPU busy ~40 % of the time
        else:
            cost = GPU_STEP_S / 0.4 - GPU_STEP_S

        class Batches(torch.utils.data.IterableDataset[Any]):  # type: ignore[misc]
            def __iter__(self) -> Iterator[Any]:
                while True:
                    _burn(cost)
                    yield torch.full((BATCH, mid), 0.5, dtype=torch.bfloat16)

        if workers:
            loader = torch.utils.data.DataLoader(
                Batches(), batch_size=None, num_workers=workers, pin_memory=True, prefetch_factor=2
            )
        else:
            loader = torch.utils.data.DataLoader(Batches(), batch_size=None)
        batches = iter(loader)
        while not stop:
            t0 = time.perf_counter()
            batch = next(batches)
            waited += time.perf_counter() - t0
            x = batch.to(device, non_blocking=True).repeat(mid // BATCH, 1)
            gpu_step(x, products)
            sync()  # the loss read back, as every training loop does
            steps += 1
    elapsed = time.perf_counter() - began
    report.write_text(
        json.dumps(
            {
                "steps_per_s": round(steps / elapsed, 2),
                "waiting_for_data_share": round(waited / elapsed, 3),
                "products_per_step": products,
                "product_ms": round(per_product * 1000, 3),
            }
        )
    )


# -- the driver --------------------------------------------------------------------------
def _gputui(*args: str) -> list[str]:
    return [sys.executable, "-m", "gputui", *args]


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


@contextlib.contextmanager
def load(name: str, out: Path, where: str) -> Iterator[dict[str, Any]]:
    ready, report = out / f".{name}.ready", out / f".{name}.report"
    for path in (ready, report):
        path.unlink(missing_ok=True)
    command = [sys.executable, "-m", "benchmarks.real_workloads", "--load", name]
    proc = subprocess.Popen(
        [*command, "--out", str(out), "--device", where],
        cwd=ROOT,
        env=_env(),
    )
    state: dict[str, Any] = {"pid": proc.pid}
    try:
        deadline = time.monotonic() + 120
        while not ready.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        state["started"] = ready.exists()
        time.sleep(5.0)  # past the loader's start and the first steps
        yield state
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        with contextlib.suppress(OSError, ValueError):
            state["load"] = json.loads(report.read_text())
        state["load_exit"] = proc.returncode
        for path in (ready, report):
            path.unlink(missing_ok=True)


def watch(name: str, out: Path, seconds: float, where: str) -> dict[str, Any]:
    with load(name, out, where) as state:
        record = subprocess.Popen(
            _gputui("record", "-o", str(out / f"{name}.jsonl.gz"), "--duration", f"{seconds:g}"),
            cwd=ROOT,
            env=_env(),
            stdout=subprocess.DEVNULL,
        )
        doctor = subprocess.run(
            _gputui("doctor", "--duration", f"{seconds:g}", "--json"),
            cwd=ROOT,
            env=_env(),
            capture_output=True,
            text=True,
            timeout=seconds + 60,
        )
        record.wait(timeout=60)
    state["doctor_exit"] = doctor.returncode
    try:
        report = json.loads(doctor.stdout)
    except ValueError:
        state["doctor_output"] = (doctor.stdout + doctor.stderr)[-3000:]
        return state
    (out / f"{name}.doctor.json").write_text(json.dumps(report, indent=1))
    state["findings"] = [
        {k: f.get(k) for k in ("rule", "severity", "gpu", "title", "evidence")}
        for f in report.get("findings", [])
    ]
    state["judgement"] = report.get("judgement")
    return state


def probe() -> dict[str, Any]:  # pragma: no cover - GPU only
    """The raw answers behind the memory-health, power and thermal rules, per GPU."""
    import pynvml

    def ask(fn: Any, *args: Any) -> Any:
        try:
            value = fn(*args)
        except pynvml.NVMLError as exc:
            return f"error: {exc}"
        except Exception as exc:
            return f"{type(exc).__name__}: {exc}"
        if isinstance(value, bytes):
            return value.decode(errors="replace")
        if isinstance(value, list | tuple):
            return [v if isinstance(v, int | float | str) else repr(v) for v in value]
        if isinstance(value, int | float | str) or value is None:
            return value
        fields = getattr(value, "_fields_", None)
        if fields:
            return {f[0]: repr(getattr(value, f[0])) for f in fields}
        return repr(value)

    pynvml.nvmlInit()
    out: dict[str, Any] = {"driver": ask(pynvml.nvmlSystemGetDriverVersion)}
    try:
        for i in range(pynvml.nvmlDeviceGetCount()):
            h = pynvml.nvmlDeviceGetHandleByIndex(i)
            gpu: dict[str, Any] = {"name": ask(pynvml.nvmlDeviceGetName, h)}
            gpu["remapped_rows"] = ask(pynvml.nvmlDeviceGetRemappedRows, h)
            for etype, ename in ((0, "corrected"), (1, "uncorrected")):
                for ctype, cname in ((0, "volatile"), (1, "aggregate")):
                    gpu[f"ecc_{ename}_{cname}"] = ask(
                        pynvml.nvmlDeviceGetTotalEccErrors, h, etype, ctype
                    )
            for cause in (0, 1):
                gpu[f"retired_pages_{cause}"] = ask(pynvml.nvmlDeviceGetRetiredPages, h, cause)
            gpu["retired_pending"] = ask(pynvml.nvmlDeviceGetRetiredPagesPendingStatus, h)
            gpu["thresholds"] = {
                t: ask(pynvml.nvmlDeviceGetTemperatureThreshold, h, t) for t in range(8)
            }
            gpu["margin"] = ask(getattr(pynvml, "nvmlDeviceGetMarginTemperature", None), h)
            gpu["power"] = {
                "usage_mw": ask(pynvml.nvmlDeviceGetPowerUsage, h),
                "enforced_mw": ask(pynvml.nvmlDeviceGetEnforcedPowerLimit, h),
                "default_mw": ask(pynvml.nvmlDeviceGetPowerManagementDefaultLimit, h),
                "limit_mw": ask(pynvml.nvmlDeviceGetPowerManagementLimit, h),
                "constraints_mw": ask(pynvml.nvmlDeviceGetPowerManagementLimitConstraints, h),
            }
            gpu["ecc_mode"] = ask(pynvml.nvmlDeviceGetEccMode, h)
            gpu["mig_mode"] = ask(pynvml.nvmlDeviceGetMigMode, h)
            gpu["compute_mode"] = ask(pynvml.nvmlDeviceGetComputeMode, h)
            gpu["persistence"] = ask(pynvml.nvmlDeviceGetPersistenceMode, h)
            gpu["supported_event_reasons"] = ask(
                getattr(pynvml, "nvmlDeviceGetSupportedClocksEventReasons", None)
                or pynvml.nvmlDeviceGetSupportedClocksThrottleReasons,
                h,
            )
            gpu["clocks"] = {
                f"{kind}/{cid}": ask(pynvml.nvmlDeviceGetClock, h, kind, cid)
                for kind in (0, 1, 2)
                for cid in (0, 1, 2, 3)
            }
            gpu["max_clocks"] = {k: ask(pynvml.nvmlDeviceGetMaxClockInfo, h, k) for k in (0, 1, 2)}
            gpu["gpm"] = ask(getattr(pynvml, "nvmlGpmQueryDeviceSupport", None), h)
            gpu["numa"] = ask(getattr(pynvml, "nvmlDeviceGetNumaNodeId", None), h)
            # the driver's utilisation samples: how many a second, how far apart
            stamps: list[int] = []
            values: list[Any] = []
            last = 0
            for _ in range(6):
                time.sleep(0.5)
                try:
                    _vtype, samples = pynvml.nvmlDeviceGetSamples(h, 1, last)
                except pynvml.NVMLError:
                    samples = []
                for s in samples:
                    stamp = int(s.timeStamp)
                    if stamp > last:
                        stamps.append(stamp)
                        values.append(s.sampleValue.uiVal)
                if stamps:
                    last = max(stamps)
            gaps = [b - a for a, b in itertools.pairwise(stamps)]
            gpu["util_samples"] = {
                "count_in_3s": len(stamps),
                "gaps_us": gaps[:20],
                "values": values[:20],
            }
            out[str(i)] = gpu
    finally:
        pynvml.nvmlShutdown()
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--only", default=",".join(WORKLOADS))
    parser.add_argument("--load", choices=WORKLOADS, help=argparse.SUPPRESS)
    # "cpu" tries the script itself on a machine without a GPU (the loads then run on the CPU)
    parser.add_argument("--device", default="cuda", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    if args.load:
        ready, report = args.out / f".{args.load}.ready", args.out / f".{args.load}.report"
        run_load(args.load, ready, report, args.device)
        return 0
    result: dict[str, Any] = {}
    for name in args.only.split(","):
        result[name] = watch(name, args.out, args.seconds, args.device)
        print(json.dumps({name: result[name]}), flush=True)
    if args.device == "cuda":
        result["probe"] = probe()
    text = json.dumps(result, indent=1)
    (args.out / "real_workloads.json").write_text(text)
    print(json.dumps(result.get("probe")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
