"""The GPU settings the configuration checks read through the real nvidia-ml-py code over
the fake driver: peer-to-peer status between GPUs, pending ECC and MIG modes, the device
number, the P0 clock ceiling; and the settings reader's place in a tick."""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from pathlib import Path

import pytest

from gputui.core.manual_clock import ManualClock
from gputui.core.model import HostSettings, JobSettings, ProcessSample
from gputui.sources.host import HostReader
from gputui.sources.nvml import NvmlSource
from gputui.sources.nvml.bindings import function
from gputui.sources.settings import SettingsReader
from tests.nvml_double import NO_PERMISSION, NOT_SUPPORTED, FakeNvmlLib, driver, hgx, install

HAS_P0 = function("nvmlDeviceGetMinMaxClockOfPState") is not None


def _open(monkeypatch: pytest.MonkeyPatch, lib: FakeNvmlLib, **options: object) -> NvmlSource:
    install(monkeypatch, lib)
    source = NvmlSource(
        clock=ManualClock(1_700_000_000.0),
        monotonic=ManualClock(1000.0),
        sysfs=Path("/nonexistent"),
        **options,  # type: ignore[arg-type]
    )
    return source


def test_peer_to_peer_status_between_every_pair(monkeypatch: pytest.MonkeyPatch) -> None:
    gpus = hgx(4)
    gpus[0].p2p = {1: 1, 3: 5}  # chipset not supported to GPU 1, not supported to GPU 3
    source = _open(monkeypatch, driver(570, gpus))
    devices = source.open()
    assert devices[0].p2p_read == ("X", "CNS", "OK", "NS")
    assert devices[0].p2p_write == ("X", "CNS", "OK", "NS")
    assert devices[1].p2p_read == ("OK", "X", "OK", "OK")
    assert "p2p_read" not in devices[0].unsupported
    source.close()


def test_peer_to_peer_not_offered_or_not_permitted(monkeypatch: pytest.MonkeyPatch) -> None:
    source = _open(monkeypatch, driver(570, hgx(2), missing={"nvmlDeviceGetP2PStatus"}))
    devices = source.open()
    assert devices[0].p2p_read is None and "p2p_read" in devices[0].unsupported
    source.close()
    gpus = hgx(2)
    for gpu in gpus:
        gpu.errors["nvmlDeviceGetP2PStatus"] = NO_PERMISSION
    source = _open(monkeypatch, driver(570, gpus))
    devices = source.open()
    # unknown, not "not offered": the check says it could not judge
    assert devices[0].p2p_read is None and "p2p_read" not in devices[0].unsupported
    source.close()


def test_pending_modes_device_number_and_clock_ceiling(monkeypatch: pytest.MonkeyPatch) -> None:
    gpus = hgx(2)
    gpus[0].mig_pending, gpus[0].ecc_pending = 1, 0
    gpus[1].minor, gpus[1].p0_range = 7, (345, 1410)
    source = _open(monkeypatch, driver(570, gpus))
    devices = source.open()
    assert (devices[0].mig_mode, devices[0].mig_pending) == (False, True)
    assert (devices[0].ecc_enabled, devices[0].ecc_pending) == (True, False)
    assert (devices[1].mig_mode, devices[1].mig_pending) == (False, False)
    assert devices[0].minor_number == 0 and devices[1].minor_number == 7
    if HAS_P0:
        assert devices[0].p0_max_graphics_mhz == 1980 and devices[1].p0_max_graphics_mhz == 1410
    source.close()
    gpus = hgx(1)
    gpus[0].errors["nvmlDeviceGetMinMaxClockOfPState"] = NOT_SUPPORTED
    source = _open(monkeypatch, driver(570, gpus))
    (device,) = source.open()
    assert device.p0_max_graphics_mhz is None and "p0_max_graphics_mhz" in device.unsupported
    source.close()


class _Reader(SettingsReader):
    """The settings reader, recording what a tick hands it."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[tuple[int, ...], set[int]]] = []

    def read(
        self,
        processes: Sequence[ProcessSample],
        workers_of: Callable[[int], Sequence[int]],
        exclusive_minors: Collection[int] = (),
    ) -> tuple[tuple[JobSettings, ...], HostSettings]:
        self.calls.append((tuple(p.pid for p in processes), set(exclusive_minors)))
        return (JobSettings(pids=(1,)),), HostSettings(governor="performance")


def test_a_tick_carries_the_settings_and_names_exclusive_gpus(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    gpus = hgx(2)
    gpus[1].compute_mode = 3  # EXCLUSIVE_PROCESS
    gpus[1].minor = 5
    reader = _Reader()
    source = _open(monkeypatch, driver(570, gpus), host=HostReader(), settings=reader)
    source.open()
    frame = source.read()
    assert frame.jobs == (JobSettings(pids=(1,)),)
    assert frame.settings is not None and frame.settings.governor == "performance"
    assert reader.calls[0][1] == {5}  # waiters are looked for on the exclusive GPU only
    source.close()
    plain = _open(monkeypatch, driver(570, hgx(1)), host=HostReader())
    plain.open()
    assert plain.read().settings is None  # no reader: no configuration, rules stay silent
    plain.close()
