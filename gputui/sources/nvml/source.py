"""The live source: NVML opened once, read once a tick, every GPU apart from the others."""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pynvml

from gputui.core.judgement import gpu_list
from gputui.core.model import (
    DeviceInfo,
    Frame,
    GpuSample,
    HostSettings,
    JobSettings,
    Note,
    XidEvent,
)
from gputui.core.names import NoteKind, SourceKind
from gputui.core.source import SourceUnavailable
from gputui.sources.host import GpuProcess, HostReader
from gputui.sources.nvml import bindings as b
from gputui.sources.nvml.device import device_info, peer_status, resolve, topology
from gputui.sources.nvml.policy import (
    RETRY_AFTER_S,
    Gpu,
    GpuLost,
    Query,
    Verdict,
    error_code,
    meaning,
)
from gputui.sources.nvml.processes import process_util, processes
from gputui.sources.nvml.rates import Windows
from gputui.sources.nvml.sample import free_gpm, sample
from gputui.sources.settings import SettingsReader

MAX_EVENTS_PER_READ = 64


class NvmlSource:
    """Reads real GPUs. Initialise once; ``close`` only after the sampler has stopped."""

    label = "NVML"
    kind = SourceKind.LIVE

    def __init__(
        self,
        host: HostReader | None = None,
        clock: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
        pcie_throughput_fallback: bool = True,
        sysfs: Path = Path("/sys"),
        settings: SettingsReader | None = None,
    ) -> None:
        self._sysfs = sysfs
        self._host = host
        self._settings = settings
        self._exclusive: set[int] = set()  # device numbers of GPUs in EXCLUSIVE_PROCESS
        self._clock = clock
        self._monotonic = monotonic
        self._q = Query()
        self._windows = Windows(self._q, pcie_throughput_fallback)
        self._gpus: list[Gpu] = []
        self._system = Gpu(index=-1, handle=None)
        self._open = False
        self._event_set: Any = None
        self._by_handle: dict[int, Gpu] = {}
        #: the GPUs' facts whose topology the first full read completes (``topology_later``)
        self._paths_later = False
        self._paths_due: list[DeviceInfo] | None = None
        #: NVML calls the last ``read`` made per GPU (benchmarks/tick_cost.py prints them).
        self.last_calls: dict[int, int] = {}

    # -- lifecycle ---------------------------------------------------------------
    def topology_later(self) -> None:
        """``open`` leaves the GPUs' topology (PCIe paths, NVLinks, NUMA node, CPU affinity,
        peer-to-peer status) to the first full ``read``, whose frame brings the GPUs' facts
        complete (``Frame.joined``): the live screen's first paint waits for none of it
        (the paths and the P2P matrix are calls for every pair of GPUs)."""
        self._paths_later = True

    def open(self) -> tuple[DeviceInfo, ...]:
        try:
            pynvml.nvmlInit()
        except pynvml.NVMLError as exc:
            raise SourceUnavailable(_init_failure(exc)) from exc
        self._open = True
        q = self._q
        q.now = self._monotonic()
        try:
            count = pynvml.nvmlDeviceGetCount()
        except pynvml.NVMLError as exc:
            self.close()
            raise SourceUnavailable(f"NVML could not count the GPUs ({exc}).") from exc
        system = self._system
        driver = q.ask(system, "driver", pynvml.nvmlSystemGetDriverVersion)
        cuda = q.ask_first(
            system,
            "cuda",
            [
                (b.function("nvmlSystemGetCudaDriverVersion_v2"), ()),
                (b.function("nvmlSystemGetCudaDriverVersion"), ()),
            ],
        )
        r535 = b.r535_process_layout()
        devices = []
        for index in range(count):
            try:
                handle = pynvml.nvmlDeviceGetHandleByIndex(index)
            except pynvml.NVMLError as exc:
                gpu = Gpu(index=index, handle=None, lost=True)
                self._gpus.append(gpu)
                devices.append(DeviceInfo(index=index, name=f"unreadable GPU ({exc})"))
                continue
            gpu = Gpu(index=index, handle=handle)
            self._gpus.append(gpu)
            try:
                info = device_info(q, gpu, driver, cuda)
                resolve(q, gpu, r535)
            except GpuLost:  # one DeviceInfo per GPU, lost ones too
                gpu.lost = True
                devices.append(DeviceInfo(index=index, name="lost GPU"))
            else:
                devices.append(info)
        if self._paths_later:
            self._paths_due = devices
        else:
            devices = self._paths(devices)
        self._exclusive = {
            d.minor_number
            for d in devices
            if d.compute_mode == "Exclusive_Process" and d.minor_number is not None
        }
        self._open_events()
        return tuple(devices)

    def _paths(self, devices: list[DeviceInfo]) -> list[DeviceInfo]:
        return peer_status(self._q, self._gpus, topology(self._q, self._gpus, devices, self._sysfs))

    def close(self) -> None:
        if not self._open:
            return
        self._windows.close()  # every thread out of NVML before it shuts down
        for gpu in self._gpus:
            free_gpm(gpu.gpm_samples)
            for mig in gpu.migs:
                free_gpm(mig.gpm_samples)
        if self._event_set is not None:
            with contextlib.suppress(pynvml.NVMLError):
                pynvml.nvmlEventSetFree(self._event_set)
            self._event_set = None
        self._open = False
        if self._host is not None:
            self._host.close()
        with contextlib.suppress(pynvml.NVMLError):
            pynvml.nvmlShutdown()

    # -- one tick ----------------------------------------------------------------
    def read(self) -> Frame:
        return self._read(full=True)

    def glance(self) -> Frame:
        """A first frame for the first screen, quick: every GPU reading a tick takes and
        the GPUs' processes, with the host's memory and load; the processes' host details
        (command, user, CPU, environment, libraries), the host's CPU share, the settings
        of the jobs and the host, and the PCIe throughput windows of GPUs without byte
        counters (a thread each) wait for the first ``read``."""
        return self._read(full=False)

    def _read(self, full: bool) -> Frame:
        now = self._clock()
        q = self._q
        q.now = self._monotonic()
        xids = self._poll_events(now)
        self._windows.harvest(self._gpus)
        samples: list[GpuSample] = []
        found: list[GpuProcess] = []
        for gpu in self._gpus:
            if gpu.lost:
                samples.append(GpuSample(index=gpu.index, lost=True))
                continue
            q.calls = 0
            try:
                procs = processes(q, gpu)
                one = sample(q, self._windows, gpu, procs, xids.get(gpu.index, ()))
                sm_util = process_util(q, gpu, procs)
                samples.append(one)
                found.extend(
                    GpuProcess(p.pid, gpu.index, p.memory, kind, sm_util.get(p.pid))
                    for kind, p in procs
                )
            except GpuLost:
                gpu.lost = True
                samples.append(GpuSample(index=gpu.index, lost=True))
            self.last_calls[gpu.index] = q.calls
        if full:  # a glance starts no window: eight threads' start held up the first screen
            self._windows.start(self._gpus, self.last_calls)
        frame = self._host_side(now, found) if full else self._glance_host(now, found)
        lost = [s.index for s in samples if s.lost]
        notes = frame.notes
        unread = tuple(g.index for g in self._gpus if g.processes_unread and not g.lost)
        if unread:
            notes += (_unread_note(unread),)
        if lost:
            notes += (
                Note(
                    NoteKind.GPU_LOST,
                    "GPU " + ", ".join(str(i) for i in lost) + " fell off the bus (GPU is lost): "
                    "check dmesg for Xid 79; it needs a reset or a reboot.",
                ),
            )
        joined: tuple[DeviceInfo, ...] = ()
        if full and self._paths_due is not None:
            joined, self._paths_due = tuple(self._paths(self._paths_due)), None
        return dataclasses.replace(
            frame, gpus=tuple(samples), notes=notes, processes_unread=unread, joined=joined
        )

    def _host_side(self, now: float, found: list[GpuProcess]) -> Frame:
        """The tick's host half: the GPU processes joined with the host's view of them, the
        host's readings, and the settings of the jobs and the host where they are read."""
        if self._host is None:
            return Frame(time=now, gpus=(), processes=tuple(p.sample() for p in found))
        out, notes = self._host.join_processes(found)
        host = self._host.read_host()
        jobs: tuple[JobSettings, ...] = ()
        settings: HostSettings | None = None
        if self._settings is not None:
            jobs, settings = self._settings.read(out, self._host.workers_of, self._exclusive)
        return Frame(now, (), host, out, notes, jobs, settings)

    def _glance_host(self, now: float, found: list[GpuProcess]) -> Frame:
        host = self._host.read_host(cpu=False) if self._host is not None else None
        return Frame(time=now, gpus=(), host=host, processes=tuple(p.sample() for p in found))

    def wait_windows(self, timeout: float = 2.0) -> None:
        """Wait until the PCIe throughput windows in flight are done (tests and the real-GPU
        check; the app never waits: a tick uses the newest finished window)."""
        self._windows.wait(self._gpus, timeout)

    # -- events ------------------------------------------------------------------
    def _open_events(self) -> None:
        """One event set for every GPU, registered for critical Xid errors."""
        create = b.function("nvmlEventSetCreate")
        register = b.function("nvmlDeviceRegisterEvents")
        if create is None or register is None or not self._gpus:
            return
        try:
            self._event_set = create()
        except pynvml.NVMLError:
            return
        for gpu in self._gpus:
            if gpu.lost:
                continue
            try:
                register(gpu.handle, b.XID_EVENT, self._event_set)
            except pynvml.NVMLError as exc:
                if meaning(error_code(exc)) is Verdict.LOST:
                    gpu.lost = True
                continue
            gpu.events = True
            key = b.handle_key(gpu.handle)
            if key is not None:
                self._by_handle[key] = gpu
        if not self._by_handle:
            with contextlib.suppress(pynvml.NVMLError):
                pynvml.nvmlEventSetFree(self._event_set)
            self._event_set = None

    def _poll_events(self, now: float) -> dict[int, list[XidEvent]]:
        """Xid errors since the previous tick: the event set drained without waiting."""
        out: dict[int, list[XidEvent]] = {}
        q = self._q
        if self._event_set is None or q.now < self._system.retry_at.get("events", 0.0):
            return out
        for _ in range(MAX_EVENTS_PER_READ):
            try:
                data = pynvml.nvmlEventSetWait_v2(self._event_set, 0)
            except pynvml.NVMLError as exc:
                code = error_code(exc)
                if code != pynvml.NVML_ERROR_TIMEOUT:  # anything but "nothing waiting"
                    if meaning(code) is Verdict.STOP:
                        with contextlib.suppress(pynvml.NVMLError):
                            pynvml.nvmlEventSetFree(self._event_set)
                        self._event_set = None
                    else:
                        self._system.retry_at["events"] = q.now + RETRY_AFTER_S
                break
            gpu = self._by_handle.get(b.handle_key(data.device) or -1)
            if gpu is not None and int(data.eventType) & b.XID_EVENT:
                out.setdefault(gpu.index, []).append(XidEvent(code=int(data.eventData), time=now))
        return out


def _init_failure(exc: BaseException) -> str:
    code = error_code(exc)
    if code in (pynvml.NVML_ERROR_LIBRARY_NOT_FOUND, pynvml.NVML_ERROR_DRIVER_NOT_LOADED):
        return (
            "No NVIDIA driver found on this machine (libnvidia-ml.so.1 could not be loaded), "
            "so there are no GPUs to read; run `gputui --demo` to see gputui on a simulated node."
        )
    if code == pynvml.NVML_ERROR_LIB_RM_VERSION_MISMATCH:
        return (
            "The NVIDIA driver's library and kernel module are different versions "
            "(driver updated without a reboot?); reload the nvidia module or reboot, "
            "or run `gputui --demo`."
        )
    if code == pynvml.NVML_ERROR_NO_PERMISSION:
        return (
            "Not allowed to open the NVIDIA devices (/dev/nvidia*): check your group "
            "membership or container device mounts, or run `gputui --demo`."
        )
    return f"NVML failed to start ({exc}); run `gputui --demo` to see a simulated node."


def _unread_note(gpus: tuple[int, ...]) -> Note:
    which = gpu_list(gpus)
    return Note(
        NoteKind.GENERAL,
        f"{which}: the driver did not give the process list (no permission, or an error): the "
        "checks that read a GPU's processes cannot judge it; run gputui as root, or in the "
        "job's container",
    )
