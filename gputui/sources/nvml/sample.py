"""One GPU's readings at one tick, each on its own cadence.

Only live readings are asked for every tick; slower ones are asked for on their own period
and the last answer is reused in between (the ``*_PERIOD_S`` constants), so a tick stays
within about 12 NVML calls per GPU (benchmarks/tick_cost.py counts them).
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
from collections.abc import Callable, Sequence
from typing import Any

import pynvml

from gputui.core.model import GpuSample, MigInstance, NvLinkSample, XidEvent
from gputui.core.ranges import within_ranges
from gputui.core.records import frozen
from gputui.sources.nvml import bindings as b
from gputui.sources.nvml.policy import Gpu, GpuLost, Mig, Query, Verdict, error_code, meaning
from gputui.sources.nvml.processes import Proc
from gputui.sources.nvml.rates import Windows, kib_rate

STATIC_PERIOD_S = 30.0  # settings: application clocks, enforced limit, MIG layout
GPM_PERIOD_S = 2.0  # GPM samples (SM and tensor activity over the period)
MARGIN_PERIOD_S = 2.0  # the thermal margin (R570+)
LINK_PERIOD_S = 10.0  # current PCIe generation and width
SLOW_PERIOD_S = 10.0  # fan, performance state, memory and graphics clocks
VIOLATION_PERIOD_S = 10.0  # cumulative throttle counters
MIG_PERIOD_S = 5.0  # each MIG instance's memory
NVLINK_PERIOD_S = 10.0  # every link's state, throughput and error counters: one batch
FABRIC_PERIOD_S = 30.0  # the NVSwitch fabric state (Fabric Manager can start later)
_SAMPLE_ROOM = 128  # the driver keeps fewer utilisation samples than this
# made once: ctypes keeps an array type only while something holds it
_SAMPLE_BUFFER = b.Sample * _SAMPLE_ROOM


@frozen
class _Answers:
    """What NVML answered this tick (``None``: no answer), before units and sanity checks."""

    util: Any
    memory: Any
    temp: Any
    reasons: Any
    power_mw: int | None
    sm_clock: int | None
    margin: Any
    fields: dict[int, int]
    slow: dict[str, Any]
    static: dict[str, Any]
    violations: dict[str, float | None]
    link: tuple[int | None, int | None]
    gpm: tuple[float | None, float | None]


def sample(
    q: Query, windows: Windows, gpu: Gpu, procs: list[tuple[str, Proc]], xids: Sequence[XidEvent]
) -> GpuSample:
    a = _ask(q, gpu)
    rx, tx, counter_based = windows.rates(gpu, a.fields, a.link)
    nvlinks: tuple[NvLinkSample, ...] = ()
    if gpu.nvlinks:
        nvlinks = q.every(gpu, "nvlink", NVLINK_PERIOD_S, lambda: _nvlink(q, gpu)) or ()
    nvlink_errors = [
        n
        for link_sample in nvlinks
        for n in (link_sample.crc_errors, link_sample.replay_errors, link_sample.recovery_errors)
        if n is not None
    ]
    reading = _readings(
        q,
        gpu,
        a,
        util_samples=_util_samples(q, gpu),
        pcie_rx_bps=rx,
        pcie_tx_bps=tx,
        pcie_counter_based=counter_based,
        mig_instances=mig_instances(q, gpu, procs),
        xid_events=tuple(xids),
        nvlinks=nvlinks,
        nvlink_errors=sum(nvlink_errors) if nvlink_errors else None,
        fabric_state=q.every(gpu, "fabric", FABRIC_PERIOD_S, lambda: _fabric(q, gpu)),
        unsupported=unsupported(gpu, windows.fallback),
    )
    return within_ranges(reading)  # a broken driver's 0xFFFFFFFF is unknown, not 4 MW


def _ask(q: Query, gpu: Gpu) -> _Answers:
    h = gpu.handle
    ask = functools.partial(q.ask, gpu)
    temp_functions = [
        (b.temperature_v if b.TEMPERATURE_V else None, (h, pynvml.NVML_TEMPERATURE_GPU)),
        (pynvml.nvmlDeviceGetTemperature, (h, pynvml.NVML_TEMPERATURE_GPU)),
    ]
    reason_functions = [
        (b.function("nvmlDeviceGetCurrentClocksEventReasons"), (h,)),
        (b.function("nvmlDeviceGetCurrentClocksThrottleReasons"), (h,)),
    ]
    margin_function = b.function("nvmlDeviceGetMarginTemperature")
    return _Answers(
        util=ask("util", b.utilization, h),
        memory=memory_info(q, gpu, h, "memory"),
        temp=q.ask_first(gpu, "temp", temp_functions),
        reasons=q.ask_first(gpu, "reasons", reason_functions),
        power_mw=b.clean(ask("power", pynvml.nvmlDeviceGetPowerUsage, h)),
        sm_clock=b.clean(ask("sm_clock", pynvml.nvmlDeviceGetClockInfo, h, pynvml.NVML_CLOCK_SM)),
        fields=field_values(q, gpu, gpu.fields) if gpu.fields else {},
        margin=q.every(gpu, "margin", MARGIN_PERIOD_S, lambda: ask("margin", margin_function, h)),
        gpm=q.every(gpu, "gpm", GPM_PERIOD_S, lambda: _gpm(q, gpu)) or (None, None),
        slow=q.every(gpu, "slow", SLOW_PERIOD_S, lambda: _slow(q, gpu)) or {},
        link=q.every(gpu, "link", LINK_PERIOD_S, lambda: _link(q, gpu)) or (None, None),
        static=q.every(gpu, "static", STATIC_PERIOD_S, lambda: _static(q, gpu)) or {},
        violations=q.every(gpu, "violations", VIOLATION_PERIOD_S, lambda: _violations(q, gpu))
        or {},
    )


def _readings(q: Query, gpu: Gpu, a: _Answers, **rest: Any) -> GpuSample:
    """The answers in gputui's units, checked against what a card can report, and ``rest``."""
    memory, fields, slow = a.memory, a.fields, a.slow
    used = int(memory.used) if memory is not None else None
    total = int(memory.total) if memory is not None else None
    if used is not None and total is not None and used > total:
        used = None  # a reading no card can give: unknown, not "over 100 %"
    mem_temp = fields.get(b.FI_MEMORY_TEMP)
    energy_mj = fields.get(b.FI_ENERGY)
    if energy_mj is None and b.FI_ENERGY not in gpu.fields:
        energy_mj = b.clean(
            q.ask(gpu, "energy", pynvml.nvmlDeviceGetTotalEnergyConsumption, gpu.handle)
        )
    limit_mw = fields.get(b.FI_POWER_LIMIT) or a.static.get("limit_mw")
    replay = fields.get(b.FI_REPLAY)
    if replay is None and b.FI_REPLAY not in gpu.fields:
        replay = slow.get("replay")
    return GpuSample(
        index=gpu.index,
        util_gpu=b.percent(a.util.gpu) if a.util is not None else None,
        util_mem=b.percent(a.util.memory) if a.util is not None else None,
        sm_activity=a.gpm[0],
        tensor_activity=a.gpm[1],
        sm_clock_mhz=a.sm_clock,
        mem_clock_mhz=slow.get("mem_clock"),
        graphics_clock_mhz=slow.get("graphics_clock"),
        app_sm_clock_mhz=a.static.get("app_sm_clock"),
        temp_c=b.celsius(a.temp),
        mem_temp_c=b.celsius(mem_temp) if mem_temp else None,
        temp_margin_c=float(a.margin) if a.margin is not None and -100 < a.margin < 200 else None,
        fan_pct=b.fan(slow.get("fan")),
        fan_rpm=b.rpm(slow.get("fan_rpm")),
        power_w=a.power_mw / 1000.0 if a.power_mw is not None else None,
        power_limit_w=limit_mw / 1000.0 if limit_mw else None,
        pstate=_pstate(slow.get("pstate")),
        clock_reasons=int(a.reasons) if a.reasons is not None else None,
        mem_used=used,
        mem_free=int(memory.free) if memory is not None else None,
        mem_total=total,
        pcie_gen=a.link[0],
        pcie_width=a.link[1],
        pcie_replay_count=replay,
        ecc_volatile_corrected=fields.get(b.FI_ECC_SBE_VOL),
        ecc_volatile_uncorrected=fields.get(b.FI_ECC_DBE_VOL),
        ecc_aggregate_uncorrected=fields.get(b.FI_ECC_DBE_AGG),
        remapped_rows_pending=_flag(fields.get(b.FI_REMAPPED_PENDING)),
        remapped_rows_corrected=fields.get(b.FI_REMAPPED_COR),
        remapped_rows_uncorrected=fields.get(b.FI_REMAPPED_UNC),
        remapped_rows_failure=_flag(fields.get(b.FI_REMAPPED_FAILURE)),
        retired_pages_sbe=fields.get(b.FI_RETIRED_SBE),
        retired_pages_dbe=fields.get(b.FI_RETIRED_DBE),
        retired_pages_pending=_flag(fields.get(b.FI_RETIRED_PENDING)),
        energy_j=energy_mj / 1000.0 if energy_mj is not None else None,
        violation_power_s=a.violations.get("violation_power_s"),
        violation_thermal_s=a.violations.get("violation_thermal_s"),
        violation_board_s=a.violations.get("violation_board_s"),
        violation_reliability_s=a.violations.get("violation_reliability_s"),
        **rest,
    )


def _pstate(value: int | None) -> int | None:
    return value if value is not None and value <= 15 else None


def _flag(value: int | None) -> bool | None:
    return bool(value) if value is not None else None


# The readings each query key of the tick asks for, by model field: a key the policy has
# stopped asking (not supported here) makes them "unsupported" on the GPU's samples.
_READINGS_OF: dict[str, tuple[str, ...]] = {
    "util": ("util_gpu", "util_mem"),
    "memory": ("mem_used", "mem_free", "mem_total"),
    "temp": ("temp_c",),
    "reasons": ("clock_reasons",),
    "power": ("power_w",),
    "sm_clock": ("sm_clock_mhz",),
    "margin": ("temp_margin_c",),
    "fan": ("fan_pct", "fan_rpm"),  # no fan to ask, no tachometer to read
    "fan_rpm": ("fan_rpm",),
    "pstate": ("pstate",),
    "mem_clock": ("mem_clock_mhz",),
    "graphics_clock": ("graphics_clock_mhz",),
    "pcie_gen": ("pcie_gen",),
    "pcie_width": ("pcie_width",),
    "app_clock": ("app_sm_clock_mhz",),
    "util_samples": ("util_samples",),
    "fabric": ("fabric_state",),
    **{name: (name,) for name, _ in b.VIOLATIONS},
}
# Readings with two paths: unsupported only when neither answers.
_EITHER: tuple[tuple[int, str, str], ...] = (
    (b.FI_REPLAY, "replay", "pcie_replay_count"),
    (b.FI_ENERGY, "energy", "energy_j"),
    (b.FI_POWER_LIMIT, "limit", "power_limit_w"),
)


def unsupported(gpu: Gpu, fallback: bool) -> tuple[str, ...]:
    """The readings this GPU does not offer, worked out again only when the policy stops
    asking for one more."""
    cached = gpu.cache.get("unsupported")
    if cached is not None and cached[0] == len(gpu.stopped):
        return cached[1]  # type: ignore[no-any-return]
    names = {n for key, fields in _READINGS_OF.items() if key in gpu.stopped for n in fields}
    if "fields" in gpu.stopped:
        names.update(b.FIELD_READINGS.values())
    elif gpu.fields:  # the batch answered at open: the ids it left out are not offered
        names.update(n for fid, n in b.FIELD_READINGS.items() if fid not in gpu.fields)
    for fid, key, name in _EITHER:
        if fid not in gpu.fields and key in gpu.stopped:
            names.add(name)
    if not gpu.gpm or "gpm" in gpu.stopped:
        names.update(("sm_activity", "tensor_activity"))
    if not gpu.counters and ("throughput" in gpu.stopped or not fallback):
        names.update(("pcie_rx_bps", "pcie_tx_bps"))
    found = tuple(sorted(names))
    gpu.cache["unsupported"] = (len(gpu.stopped), found)
    return found


def memory_info(q: Query, gpu: Gpu, handle: Any, key: str) -> Any:
    # The v2 struct matches nvidia-smi's "used" on recent drivers; v1 for old ones.
    v2 = b.memory_v2 if b.MEMORY_V2 else None  # bindings from 12.535 on
    return q.ask_first(gpu, key, [(v2, (handle,)), (b.memory_v1, (handle,))])


_COUNTERS = frozenset({b.FI_PCIE_TX_BYTES, b.FI_PCIE_RX_BYTES})


def field_values(q: Query, gpu: Gpu, ids: Sequence[int], probe: bool = False) -> dict[int, int]:
    """Field id -> value for those that answered; at ``probe`` (open), also those that
    said no permission or unknown, which stay in the batch."""
    values = q.ask(gpu, "fields", b.get_field_values, gpu.field_arrays, gpu.handle, ids)
    out: dict[int, int] = {}
    if values is None:
        return out
    rows, gpu.field_kinds = b.read_rows(values, gpu.field_kinds)
    for fid, _scope, ret, kind, value in rows:
        if ret != pynvml.NVML_SUCCESS:
            if meaning(ret) is Verdict.LOST:
                raise GpuLost
            if probe and meaning(ret) is Verdict.RETRY:
                out[fid] = -1
            continue
        if fid in _COUNTERS:
            gpu.counter_bits = b.value_bits(kind)
            number = b.counter_value(kind, value)
        else:
            number = b.whole_number(value)
        if number is not None:
            out[fid] = number
        elif probe:
            out[fid] = -1
    return out


# -- slower readings -----------------------------------------------------------------
def _slow(q: Query, gpu: Gpu) -> dict[str, int | None]:
    h = gpu.handle
    ask = functools.partial(q.ask, gpu)
    out: dict[str, int | None] = {
        "fan": b.clean(ask("fan", pynvml.nvmlDeviceGetFanSpeed, h)),
        "pstate": b.clean(ask("pstate", pynvml.nvmlDeviceGetPerformanceState, h)),
        "mem_clock": b.clean(
            ask("mem_clock", pynvml.nvmlDeviceGetClockInfo, h, pynvml.NVML_CLOCK_MEM)
        ),
        "graphics_clock": b.clean(
            ask("graphics_clock", pynvml.nvmlDeviceGetClockInfo, h, pynvml.NVML_CLOCK_GRAPHICS)
        ),
    }
    if "fan" not in gpu.stopped:  # a board without fans has no tachometer either
        out["fan_rpm"] = b.clean(ask("fan_rpm", b.fan_rpm, h))
    if b.FI_REPLAY not in gpu.fields:
        out["replay"] = b.clean(ask("replay", pynvml.nvmlDeviceGetPcieReplayCounter, h))
    return out


def _nvlink(q: Query, gpu: Gpu) -> tuple[NvLinkSample, ...]:
    """Every link's state, error counters and throughput counters: one field batch."""
    ids = [(fid, link) for link in range(gpu.nvlinks) for fid in b.NVLINK_FIELDS]
    values = q.ask(gpu, "nvlink_fields", b.get_field_values, gpu.field_arrays, gpu.handle, ids)
    if values is None:
        return ()
    got: dict[tuple[int, int], int] = {}
    for fid, scope, ret, kind, raw in b.field_rows(values):
        if ret != pynvml.NVML_SUCCESS:
            if meaning(ret) is Verdict.LOST:
                raise GpuLost
            continue
        number = b.field_unsigned(kind, raw)
        if number is not None:
            got[(fid, scope)] = number
    out = []
    for link in range(gpu.nvlinks):
        state = got.get((b.FI_NVLINK_STATE, link))
        tx, rx = got.get((b.FI_NVLINK_TX_KIB, link)), got.get((b.FI_NVLINK_RX_KIB, link))
        rates: tuple[float | None, float | None] = (None, None)
        previous = gpu.nvlink_last.get(link)
        gpu.nvlink_last[link] = (q.now, rx, tx)
        if previous is not None and q.now > previous[0]:
            elapsed = q.now - previous[0]
            rates = (kib_rate(previous[1], rx, elapsed), kib_rate(previous[2], tx, elapsed))
        out.append(
            NvLinkSample(
                link=link,
                active=bool(state == 1) if state is not None else None,
                rx_bps=rates[0],
                tx_bps=rates[1],
                crc_errors=got.get((b.FI_NVLINK_CRC, link)),
                replay_errors=got.get((b.FI_NVLINK_REPLAY, link)),
                recovery_errors=got.get((b.FI_NVLINK_RECOVERY, link)),
            )
        )
    return tuple(out)


def _fabric(q: Query, gpu: Gpu) -> str | None:
    """The NVSwitch fabric state: the versioned call, else the first one."""
    return q.ask_first(  # type: ignore[no-any-return]
        gpu,
        "fabric",
        [
            (b.fabric_reader("nvmlDeviceGetGpuFabricInfoV", b.FabricInfoV2), (gpu.handle,)),
            (b.fabric_reader("nvmlDeviceGetGpuFabricInfo", b.FabricInfoV1), (gpu.handle,)),
        ],
    )


def _link(q: Query, gpu: Gpu) -> tuple[int | None, int | None]:
    h = gpu.handle
    return (
        b.clean(q.ask(gpu, "pcie_gen", pynvml.nvmlDeviceGetCurrPcieLinkGeneration, h)),
        b.clean(q.ask(gpu, "pcie_width", pynvml.nvmlDeviceGetCurrPcieLinkWidth, h)),
    )


def _static(q: Query, gpu: Gpu) -> dict[str, int | None]:
    """Settings that change only when someone changes them: asked for every 30 s."""
    h = gpu.handle
    out = {
        "app_sm_clock": b.clean(
            q.ask(gpu, "app_clock", pynvml.nvmlDeviceGetApplicationsClock, h, pynvml.NVML_CLOCK_SM)
        )
    }
    if b.FI_POWER_LIMIT not in gpu.fields:
        out["limit_mw"] = b.clean(q.ask(gpu, "limit", pynvml.nvmlDeviceGetEnforcedPowerLimit, h))
    return out


def _violations(q: Query, gpu: Gpu) -> dict[str, float | None]:
    out: dict[str, float | None] = {}
    fn = pynvml.nvmlDeviceGetViolationStatus
    for name, policy in b.VIOLATIONS:
        value = q.ask(gpu, name, fn, gpu.handle, policy)
        ns = b.clean(int(value.violationTime)) if value is not None else None
        out[name] = ns / 1e9 if ns is not None else None
    return out


def _util_samples(q: Query, gpu: Gpu) -> tuple[float, ...]:
    """The driver's GPU utilisation samples since the previous tick, oldest first: one call
    with a buffer sized beforehand (the bindings' wrapper makes two)."""
    key = "util_samples"
    if q.skip(gpu, key):
        return ()
    fn = q.symbol(gpu, key, "nvmlDeviceGetSamples")
    if fn is None:
        return ()
    buffer = _SAMPLE_BUFFER()
    count = ctypes.c_uint(_SAMPLE_ROOM)
    value_type = ctypes.c_int(0)
    q.calls += 1
    ret = fn(
        gpu.handle,
        ctypes.c_int(b.GPU_UTILIZATION_SAMPLES),
        ctypes.c_ulonglong(gpu.samples_seen or 0),
        ctypes.byref(value_type),
        ctypes.byref(count),
        buffer,
    )
    if ret == pynvml.NVML_ERROR_NOT_FOUND:
        return ()  # no sample since the last one seen
    if ret != pynvml.NVML_SUCCESS:
        q.failed(gpu, key, ret)
        return ()
    reader = b.VALUE_READERS.get(
        value_type.value, b.VALUE_READERS[pynvml.NVML_VALUE_TYPE_UNSIGNED_INT]
    )
    size = b.SAMPLE_ROW.size * min(count.value, _SAMPLE_ROOM)
    entries = sorted(b.SAMPLE_ROW.iter_unpack(memoryview(buffer).cast("B")[:size]))
    first = gpu.samples_seen is None
    if entries:
        gpu.samples_seen = max(gpu.samples_seen or 0, entries[-1][0])
    if first:
        return ()  # the driver's whole buffer, not "since the previous tick"
    out = []
    for _stamp, raw in entries:
        value = b.percent(reader.unpack_from(raw)[0])
        if value is not None:
            out.append(value)
    return tuple(out)


# -- GPM ---------------------------------------------------------------------------------
def free_gpm(samples: list[Any]) -> None:
    while samples:
        one = samples.pop()
        with contextlib.suppress(pynvml.NVMLError):
            pynvml.nvmlGpmSampleFree(one)


def _gpm(q: Query, gpu: Gpu) -> tuple[float | None, float | None]:
    """SM and tensor activity from GPM (Hopper+) over the last GPM period: two samples
    allocated at open, used in turn, freed at close whatever happens in between."""
    if not gpu.gpm or len(gpu.gpm_samples) != 2:
        return None, None
    return _gpm_metrics(q, gpu, gpu, "gpm", lambda s: pynvml.nvmlGpmSampleGet(gpu.handle, s))


def _gpm_metrics(
    q: Query, gpu: Gpu, state: Gpu | Mig, key: str, take: Callable[[Any], Any]
) -> tuple[float | None, float | None]:
    current = state.gpm_samples[state.gpm_current]
    previous = state.gpm_samples[1 - state.gpm_current]
    if q.ask(gpu, key, take, current) is None:
        state.gpm_have_previous = False
        if key in gpu.stopped:
            free_gpm(state.gpm_samples)
        return None, None
    had_previous, state.gpm_have_previous = state.gpm_have_previous, True
    state.gpm_current = 1 - state.gpm_current
    if not had_previous:
        return None, None
    request = pynvml.c_nvmlGpmMetricsGet_t()
    request.version = pynvml.NVML_GPM_METRICS_GET_VERSION
    request.numMetrics = 2
    request.sample1 = previous
    request.sample2 = current
    request.metrics[0].metricId = b.GPM_SM_UTIL
    request.metrics[1].metricId = b.GPM_ANY_TENSOR_UTIL
    if q.ask(gpu, key + ".metrics", pynvml.nvmlGpmMetricsGet, request) is None:
        return None, None
    sm, tensor = (
        b.percent(request.metrics[i].value) if request.metrics[i].nvmlReturn == 0 else None
        for i in range(2)
    )
    return sm, tensor


def alloc_gpm(q: Query, samples: list[Any]) -> bool:
    """Two GPM samples into ``samples``; none (and False) where the driver refuses."""
    try:
        for _ in range(2):
            q.calls += 1
            samples.append(pynvml.nvmlGpmSampleAlloc())
    except pynvml.NVMLError:
        free_gpm(samples)
        return False
    return True


# -- MIG ---------------------------------------------------------------------------------
def mig_layout(q: Query, gpu: Gpu) -> list[Mig]:
    """The GPU's MIG instances: no root needed, nothing changed."""
    for mig in gpu.migs:
        free_gpm(mig.gpm_samples)
    h = gpu.handle
    count = b.clean(q.ask(gpu, "mig_count", pynvml.nvmlDeviceGetMaxMigDeviceCount, h))
    out: list[Mig] = []
    for i in range(count or 0):
        q.calls += 1
        try:
            mh = pynvml.nvmlDeviceGetMigDeviceHandleByIndex(h, i)
        except pynvml.NVMLError as exc:
            if meaning(error_code(exc)) is Verdict.LOST:
                raise GpuLost from exc
            continue  # an empty slot
        key = f"mig{i}"
        gi = q.ask(gpu, key + ".gi", pynvml.nvmlDeviceGetGpuInstanceId, mh)
        if gi is None:
            continue
        ci = q.ask(gpu, key + ".ci", pynvml.nvmlDeviceGetComputeInstanceId, mh)
        name = q.ask(gpu, key + ".name", pynvml.nvmlDeviceGetName, mh)
        uuid = q.ask(gpu, key + ".uuid", pynvml.nvmlDeviceGetUUID, mh)
        mig = Mig(
            handle=mh,
            gpu_instance=int(gi),
            compute_instance=int(ci) if ci is not None else None,
            profile=b.mig_profile(b.text(name)) if name is not None else None,
            uuid=b.text(uuid) if uuid is not None else None,
        )
        if gpu.gpm and b.function("nvmlGpmMigSampleGet") is not None:
            alloc_gpm(q, mig.gpm_samples)
        out.append(mig)
    return out


def drop_migs(gpu: Gpu) -> None:
    for mig in gpu.migs:
        free_gpm(mig.gpm_samples)
    gpu.migs = []


def _mig_gpm(q: Query, gpu: Gpu, mig: Mig, key: str) -> tuple[float | None, float | None]:
    def take(one: Any) -> Any:
        return pynvml.nvmlGpmMigSampleGet(gpu.handle, mig.gpu_instance, one)

    return _gpm_metrics(q, gpu, mig, key + ".gpm", take)


def mig_instances(q: Query, gpu: Gpu, procs: list[tuple[str, Proc]]) -> tuple[MigInstance, ...]:
    if not gpu.mig:
        return ()
    if q.due(gpu, "mig_layout", STATIC_PERIOD_S):
        mode = q.ask(gpu, "mig_mode", pynvml.nvmlDeviceGetMigMode, gpu.handle)
        if mode is not None and not mode[0]:
            gpu.mig = False
            drop_migs(gpu)
            return ()
        drop_migs(gpu)  # the layout is read anew: free the old instances' samples
        gpu.migs = mig_layout(q, gpu)
    by_instance: dict[int, list[int]] = {}
    for _, proc in procs:
        if proc.gpu_instance is not None:
            by_instance.setdefault(proc.gpu_instance, []).append(proc.pid)
    out = []
    for i, mig in enumerate(gpu.migs):
        key = f"mig{i}"
        memory = q.every(
            gpu,
            key + ".memory",
            MIG_PERIOD_S,
            functools.partial(memory_info, q, gpu, mig.handle, key + ".mem"),
        )
        sm = None
        if len(mig.gpm_samples) == 2:
            activity = q.every(
                gpu, key + ".gpm", GPM_PERIOD_S, functools.partial(_mig_gpm, q, gpu, mig, key)
            )
            sm = activity[0] if activity is not None else None
        out.append(
            MigInstance(
                gpu_instance_id=mig.gpu_instance,
                compute_instance_id=mig.compute_instance,
                profile=mig.profile,
                uuid=mig.uuid,
                mem_used=int(memory.used) if memory is not None else None,
                mem_total=int(memory.total) if memory is not None else None,
                sm_activity=sm,
                pids=tuple(sorted(set(by_instance.get(mig.gpu_instance, ())))),
            )
        )
    return tuple(out)
