"""gputui's NVML source on a real NVIDIA GPU, checked in one command, as JSON.

Usage: python -m benchmarks.real_gpu_check [--gpu 0] [--busy-s 12] [--out check.json]

Needs the NVIDIA driver only (libnvidia-ml.so.1, libcuda.so.1; no CUDA toolkit, no
framework). It starts 3 processes that each create a CUDA context on the GPU through the
driver's own libcuda with ctypes (cuInit, cuCtxCreate, cuMemAlloc, then cuMemsetD32 in a
loop for load), and prints:

- ``call_time_us``: the driver's time per native NVML call gputui makes (count, median and
  max µs per function, over every tick read while idle and busy);
- ``calls_per_gpu_per_tick``: what the source counted on its last ticks;
- ``fields``: whether field ids 197/198 (PCIe byte counters) and the others in gputui's
  batch answer, the value type and so the counter width;
- ``pcie_throughput_ms``: the wall time of one nvmlDeviceGetPcieThroughput;
- ``processes``: the process list gputui sees against
  ``nvidia-smi --query-compute-apps=pid,used_memory --format=csv`` with the 3 processes
  running, the process function and entry layout gputui resolved;
- ``clock_events``: clock-event reasons idle and busy;
- ``mig``: MIG mode and the instances gputui lists;
- ``readings``: one busy sample (margin, violation counters, utilisation samples...).

It only reads: no clock, limit, mode or any other setting of the card is changed. It runs
for about 30 s (well under 3 minutes); the CUDA processes are stopped on every path.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import dataclasses
import json
import multiprocessing as mp
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

WORKERS = 3
WORKER_BYTES = 256 * 1024 * 1024


# -- load through libcuda --------------------------------------------------------------
def _cuda_check(cuda: Any, what: str, ret: int) -> None:
    if ret != 0:
        name = ctypes.c_char_p()
        with contextlib.suppress(Exception):
            cuda.cuGetErrorName(ret, ctypes.byref(name))
        raise RuntimeError(f"{what} failed: {ret} {name.value!r}")


def cuda_worker(ordinal: int, ready: Any, stop: Any, errors: Any) -> None:
    """One GPU process: a context, WORKER_BYTES of memory, memsets until told to stop."""
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
        _cuda_check(cuda, "cuInit", cuda.cuInit(0))
        device = ctypes.c_int()
        _cuda_check(cuda, "cuDeviceGet", cuda.cuDeviceGet(ctypes.byref(device), ordinal))
        context = ctypes.c_void_p()
        create = getattr(cuda, "cuCtxCreate_v2", None) or cuda.cuCtxCreate
        _cuda_check(cuda, "cuCtxCreate", create(ctypes.byref(context), 0, device))
        pointer = ctypes.c_ulonglong()
        _cuda_check(
            cuda,
            "cuMemAlloc",
            cuda.cuMemAlloc_v2(ctypes.byref(pointer), ctypes.c_size_t(WORKER_BYTES)),
        )
        memset = cuda.cuMemsetD32_v2
        memset.argtypes = [ctypes.c_ulonglong, ctypes.c_uint, ctypes.c_size_t]
        ready.put(os.getpid())
        value = 0
        while not stop.is_set():
            for _ in range(64):
                _cuda_check(cuda, "cuMemsetD32", memset(pointer, value, WORKER_BYTES // 4))
                value += 1
            _cuda_check(cuda, "cuCtxSynchronize", cuda.cuCtxSynchronize())
        cuda.cuMemFree_v2(pointer)
        cuda.cuCtxDestroy_v2(context)
    except Exception as exc:  # reported to the parent, which says so in the JSON
        errors.put(f"{type(exc).__name__}: {exc}")
        ready.put(None)


@contextlib.contextmanager
def cuda_load(ordinal: int, env: dict[str, str]) -> Iterator[dict[str, Any]]:
    """WORKERS processes on the GPU, stopped on every path."""
    ctx = mp.get_context("spawn")
    ready, errors, stop = ctx.Queue(), ctx.Queue(), ctx.Event()
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    procs = [
        ctx.Process(target=cuda_worker, args=(ordinal, ready, stop, errors), daemon=True)
        for _ in range(WORKERS)
    ]
    state: dict[str, Any] = {"pids": [], "errors": []}
    try:
        for proc in procs:
            proc.start()
        for _ in procs:
            with contextlib.suppress(Exception):
                pid = ready.get(timeout=60)
                if pid is not None:
                    state["pids"].append(pid)
        while not errors.empty():
            state["errors"].append(errors.get())
        yield state
    finally:
        stop.set()
        for proc in procs:
            proc.join(timeout=10)
            if proc.is_alive():
                proc.kill()
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


# -- timing every native NVML call -----------------------------------------------------
class CallTimer:
    """Wraps pynvml's symbol lookup so every native call is timed, whoever makes it."""

    def __init__(self) -> None:
        self.times: dict[str, list[float]] = defaultdict(list)
        self._original: Callable[[str], Any] | None = None

    def install(self) -> None:
        import pynvml

        original = pynvml._nvmlGetFunctionPointer
        self._original = original
        cache: dict[str, Any] = {}

        def lookup(name: str) -> Any:
            fn = original(name)  # raises FUNCTION_NOT_FOUND as before
            wrapped = cache.get(name)
            if wrapped is None:

                def wrapped(*args: Any) -> Any:
                    start = time.perf_counter()
                    try:
                        return fn(*args)
                    finally:
                        self.times[name].append(time.perf_counter() - start)

                cache[name] = wrapped
            return wrapped

        pynvml._nvmlGetFunctionPointer = lookup

    def uninstall(self) -> None:
        import pynvml

        if self._original is not None:
            pynvml._nvmlGetFunctionPointer = self._original

    def report(self) -> dict[str, dict[str, float]]:
        return {
            name: {
                "count": len(values),
                "median_us": round(statistics.median(values) * 1e6, 1),
                "max_us": round(max(values) * 1e6, 1),
            }
            for name, values in sorted(self.times.items())
        }


# -- the checks ------------------------------------------------------------------------
def field_report(handle: Any) -> dict[str, Any]:
    import pynvml

    from gputui.sources.nvml import bindings as nvml

    out: dict[str, Any] = {}
    ids = [*nvml.CANDIDATE_FIELDS]
    try:
        values = pynvml.nvmlDeviceGetFieldValues(handle, ids)
    except pynvml.NVMLError as exc:
        return {"error": str(exc)}
    for fid, _scope, ret, kind, raw in nvml.field_rows(values):
        entry: dict[str, Any] = {"return": ret}
        if ret == pynvml.NVML_SUCCESS:
            entry["value_type"] = kind
            entry["width_bits"] = nvml.value_bits(kind)
            entry["value"] = nvml.field_unsigned(kind, raw)
        out[str(fid)] = entry
    out["pcie_counters_answer"] = all(
        out.get(str(f), {}).get("return") == 0
        for f in (nvml.FI_PCIE_TX_BYTES, nvml.FI_PCIE_RX_BYTES)
    )
    return out


def throughput_ms(handle: Any) -> float | str:
    import pynvml

    start = time.perf_counter()
    try:
        pynvml.nvmlDeviceGetPcieThroughput(handle, pynvml.NVML_PCIE_UTIL_RX_BYTES)
    except pynvml.NVMLError as exc:
        return f"error: {exc}"
    return round((time.perf_counter() - start) * 1e3, 2)


def nvidia_smi_apps() -> list[dict[str, Any]] | str:
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return "nvidia-smi not found"
    try:
        out = subprocess.run(
            [smi, "--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        ).stdout
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"nvidia-smi failed: {exc}"
    apps = []
    for line in out.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) == 2 and parts[0].isdigit():
            mib = int(parts[1]) if parts[1].isdigit() else None
            apps.append({"pid": int(parts[0]), "used_mib": mib})
    return apps


def read_ticks(source: Any, seconds: float) -> Any:
    frame = None
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        frame = source.read()
        time.sleep(1.0)
    return frame


def run(gpu: int, busy_s: float) -> dict[str, Any]:
    import pynvml

    from gputui.formats.values import record
    from gputui.sources.nvml import NvmlSource
    from gputui.sources.nvml import bindings as nvml

    started = time.monotonic()
    timer = CallTimer()
    result: dict[str, Any] = {"gpu": gpu}
    source = NvmlSource(host=None)
    devices = source.open()  # nvmlInit, so pynvml's library is loaded before timing
    timer.install()
    try:
        device = devices[gpu]
        result["device"] = record(device)
        result["bindings"] = getattr(pynvml, "__version__", None) or _bindings_version()
        result["r535_process_layout"] = nvml.r535_process_layout()
        handle = pynvml.nvmlDeviceGetHandleByIndex(gpu)
        idle_frame = read_ticks(source, 1.0)
        idle_sample = idle_frame.gpu(gpu) if idle_frame is not None else None
        result["topology"] = {
            "numa_node": device.numa_node,
            "cpu_affinity": device.cpu_affinity,
            "common_ancestor": {
                f"GPU{j}": cell for j, cell in enumerate(device.pcie_topology or ())
            },
            "nvlink_version": device.nvlink_version,
            "nvlink_remote": device.nvlink_remote,
            "nvlink_states": [n.active for n in idle_sample.nvlinks] if idle_sample else None,
            "nvlink_errors": idle_sample.nvlink_errors if idle_sample else None,
            "fabric_state": idle_sample.fabric_state if idle_sample else None,
            "stopped": sorted(
                k
                for k in source._gpus[gpu].stopped
                if k.startswith(("topology", "nvlink", "numa", "cpu_affinity", "fabric"))
            ),
        }
        print(json.dumps({"topology": result["topology"]}, default=str), file=sys.stderr)
        result["fields"] = field_report(handle)
        result["pcie_throughput_ms"] = throughput_ms(handle)
        idle = read_ticks(source, 4.0)
        result["clock_events"] = {"idle": list(idle.gpu(gpu).reason_names) if idle else None}
        env = {"CUDA_DEVICE_ORDER": "PCI_BUS_ID"}
        first_mig = None
        if device.mig_mode and idle is not None:
            migs = idle.gpu(gpu).mig_instances
            first_mig = migs[0].uuid if migs else None
            if first_mig:
                env["CUDA_VISIBLE_DEVICES"] = first_mig
        with cuda_load(0 if first_mig else gpu, env) as load:
            result["load"] = {"pids": load["pids"], "errors": load["errors"]}
            busy = read_ticks(source, busy_s)
            smi = nvidia_smi_apps()
            if busy is not None:
                sample = busy.gpu(gpu)
                result["clock_events"]["busy"] = list(sample.reason_names) if sample else None
                seen = [
                    {"pid": p.pid, "gpu": p.gpu_index, "gpu_memory": p.gpu_memory, "kind": p.kind}
                    for p in busy.processes
                ]
                smi_pids = {a["pid"] for a in smi} if isinstance(smi, list) else set()
                ours = {p["pid"] for p in seen if "compute" in str(p["kind"]) or p["kind"] == "mps"}
                result["processes"] = {
                    "gputui": seen,
                    "nvidia_smi": smi,
                    "workers_listed": sorted(set(load["pids"]) & {p["pid"] for p in seen}),
                    "match": isinstance(smi, list) and ours == smi_pids,
                    "layouts": {
                        kind: fns[:1] for kind, fns in source._gpus[gpu].process_fns.items()
                    },
                }
                result["readings"] = record(sample) if sample else None
                result["mig"] = {
                    "mode": device.mig_mode,
                    "instances": [dataclasses.asdict(m) for m in sample.mig_instances]
                    if sample
                    else [],
                }
        result["calls_per_gpu_per_tick"] = source.last_calls
        result["capabilities"] = {
            "stopped": sorted(source._gpus[gpu].stopped),
            "batch_fields": list(source._gpus[gpu].fields),
            "pcie_counters": source._gpus[gpu].counters,
            "gpm": source._gpus[gpu].gpm,
            "events": source._gpus[gpu].events,
        }
    finally:
        timer.uninstall()
        source.close()
    result["call_time_us"] = timer.report()
    result["elapsed_s"] = round(time.monotonic() - started, 1)
    return result


def _bindings_version() -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("nvidia-ml-py")
    except PackageNotFoundError:
        return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--gpu", type=int, default=0, help="NVML index of the GPU to load")
    parser.add_argument("--busy-s", type=float, default=12.0, help="seconds read under load")
    parser.add_argument("--out", type=Path, help="also write the JSON here")
    args = parser.parse_args(argv)
    from gputui.core.source import SourceUnavailable

    try:
        result = run(args.gpu, args.busy_s)
    except SourceUnavailable as exc:
        print(json.dumps({"error": str(exc)}, indent=2))
        return 2
    text = json.dumps(result, indent=2, default=str)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
