"""Real dcgm-exporter pages (built from public facts, tests/dcgm_pages.py) read right."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from gputui.core import clock_events as ce
from gputui.core.dcgm import BY_NAME, FIELDS, INT32_BLANK, INT64_BLANK, is_blank
from gputui.core.manual_clock import ManualClock
from gputui.core.model import DeviceInfo, Frame
from gputui.core.names import NoteKind, RuleId
from gputui.core.source import SourceUnavailable
from gputui.sources.remote import RemoteSource, ScrapeError, parse_exposition
from tests.dcgm_pages import default_page, family, labels

MIB = 1024**2


def source_of(*pages: str | Callable[[], str]) -> RemoteSource:
    """A remote source whose nodes answer the given pages (a callable: a page per read)."""
    by_url = {f"http://n{i}:9400/metrics": p for i, p in enumerate(pages)}

    def fetch(url: str, timeout: float) -> str:
        page = by_url[url]
        return page() if callable(page) else page

    return RemoteSource(list(by_url), clock=ManualClock(1e9), fetcher=fetch)


def read(page: str) -> tuple[tuple[DeviceInfo, ...], Frame]:
    source = source_of(page)
    devices = source.open()
    return devices, source.read()


def test_counter_typed_series_are_read_under_their_total_names() -> None:
    # default-counters.csv declares the energy and PCIe replay fields `counter`; the
    # parser names their samples NAME_total.
    _devices, frame = read(default_page())
    s = frame.gpus[0]
    assert s.energy_j == pytest.approx(4_400_000.0)  # 4.4e9 mJ, an int64 above 2**31
    assert s.pcie_replay_count == 3


def test_a_gpu_only_in_counter_series_is_counted() -> None:
    only_counter = family(
        "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter", "mJ", [(labels("node-a", 5), 12)]
    )
    _host, gpus = parse_exposition(only_counter)
    assert sorted(gpus) == [5]


def test_mig_instances_listed_under_their_parent() -> None:
    # MIG series carry GPU_I_PROFILE / GPU_I_ID (dcgm-exporter issues #369, #544); GPU-wide
    # fields (temperature, power) are repeated per instance; FB_* and PROF_* are the
    # instance's own. Utilisation of an instance is GR_ENGINE_ACTIVE, a ratio.
    def mig(i: int, profile: str) -> dict[str, str]:
        return labels("node-m", 0, "NVIDIA A100-SXM4-80GB", GPU_I_PROFILE=profile, GPU_I_ID=str(i))

    page = (
        family(
            "DCGM_FI_DEV_GPU_TEMP", "gauge", "t", [(mig(1, "1g.10gb"), 41), (mig(2, "2g.20gb"), 41)]
        )
        + family(
            "DCGM_FI_DEV_FB_USED",
            "gauge",
            "u",
            [(mig(1, "1g.10gb"), 12), (mig(2, "2g.20gb"), 15000)],
        )
        + family(
            "DCGM_FI_DEV_FB_FREE",
            "gauge",
            "f",
            [(mig(1, "1g.10gb"), 9700), (mig(2, "2g.20gb"), 4800)],
        )
        + family(
            "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
            "gauge",
            "g",
            [(mig(1, "1g.10gb"), 0.784913), (mig(2, "2g.20gb"), 0.290336)],
        )
        + family(
            "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
            "gauge",
            "p",
            [(mig(1, "1g.10gb"), 0.5), (mig(2, "2g.20gb"), 0.0)],
        )
    )
    devices, frame = read(page)
    assert len(devices) == 1 and devices[0].mig_mode is True
    s = frame.gpus[0]
    assert s.temp_c == 41
    a, b = s.mig_instances
    assert (a.gpu_instance_id, a.profile, b.gpu_instance_id, b.profile) == (
        1,
        "1g.10gb",
        2,
        "2g.20gb",
    )
    assert a.mem_used == 12 * MIB and a.mem_total == (12 + 9700) * MIB
    assert b.mem_used == 15000 * MIB
    assert a.gr_active == pytest.approx(78.4913) and b.gr_active == pytest.approx(29.0336)
    assert a.tensor_activity == pytest.approx(50.0)
    # the parent is not one instance's figures: no utilisation, no tensor activity of its own
    assert s.util_gpu is None and s.tensor_activity is None
    assert s.mem_used == (12 + 15000) * MIB


def test_a_mig_gpus_own_engine_activity_is_its_utilisation() -> None:
    # the GPU's own DCGM_FI_PROF_GR_ENGINE_ACTIVE (no GPU_I_ID) beside its instances'
    def mig(instance: int) -> dict[str, str]:
        return labels("node-a", 0, GPU_I_ID=str(instance), GPU_I_PROFILE="3g.40gb")

    page = default_page(gpus=1, drop=("DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_PROF_GR_ENGINE_ACTIVE"))
    page += family(
        "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
        "gauge",
        "g",
        [(labels("node-a", 0), 0.62), (mig(1), 0.9), (mig(2), 0.34)],
    )
    _devices, frame = read(page)
    s = frame.gpus[0]
    assert s.util_gpu == pytest.approx(62.0)
    assert [m.gr_active for m in s.mig_instances] == [pytest.approx(90.0), pytest.approx(34.0)]


def test_exporter_1x_lowercase_names_are_refused_with_the_version_needed() -> None:
    # dcgm-exporter 1.x (gpu-monitoring-tools) wrote dcgm_gpu_temp, dcgm_fb_used...
    page = 'dcgm_gpu_temp{gpu="0",uuid="GPU-1"} 34\ndcgm_fb_used{gpu="0",uuid="GPU-1"} 100\n'
    with pytest.raises(ScrapeError, match=r"dcgm-exporter 1\.x.*2\.0 or later"):
        parse_exposition(page)
    with pytest.raises(SourceUnavailable, match=r"dcgm-exporter 2\.0 or later"):
        source_of(page).open()


def test_dcgm_3_and_4_clock_event_names_both_read() -> None:
    # DCGM 3.3 renamed CLOCK_THROTTLE_REASONS to CLOCKS_EVENT_REASONS.
    for name in ("DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", "DCGM_FI_DEV_CLOCKS_EVENT_REASONS"):
        page = default_page(gpus=1) + family(name, "gauge", "r", [(labels("node-a", 0), 96)])
        _d, frame = read(page)
        assert frame.gpus[0].clock_reasons == ce.SW_THERMAL | ce.HW_THERMAL


@pytest.mark.parametrize(
    ("name", "value", "kept"),
    [
        # int32-sized fields: DCGM_INT32_BLANK .. 0x7FFFFFFF are blanks, nothing else
        ("DCGM_FI_DEV_FAN_SPEED", INT32_BLANK, False),
        ("DCGM_FI_DEV_FAN_SPEED", INT32_BLANK + 2, False),  # NOT_SUPPORTED
        ("DCGM_FI_DEV_GPU_TEMP", 0x7FFFFFFF, False),
        ("DCGM_FI_DEV_GPU_TEMP", 0x7FFFFFEF, True),
        # an int32-sized quantity DCGM keeps in an int64 field: its int64 blank too
        # (DCGM_FI_DEV_SLOWDOWN_TEMP answers 9223372036854775808 on boards without it)
        ("DCGM_FI_DEV_SLOWDOWN_TEMP", 9223372036854775808, False),
        ("DCGM_FI_DEV_SLOWDOWN_TEMP", INT64_BLANK, False),
        ("DCGM_FI_DEV_SLOWDOWN_TEMP", 87, True),
        # int64 fields: values above 2**31 are values, the int64 blanks are blanks
        ("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", 0x80000000, True),
        ("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", 0xFFFFFFFF, True),
        ("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", INT32_BLANK + 1, True),
        ("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", INT64_BLANK, False),
        ("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", INT64_BLANK + 2, False),
        ("DCGM_FI_PROF_PCIE_TX_BYTES", 5_000_000_000, True),
        # doubles: DCGM_FP64_BLANK (2**47) and up
        ("DCGM_FI_DEV_POWER_USAGE", 140737488355328.0, False),
        ("DCGM_FI_DEV_POWER_USAGE", 140737488355330.0, False),
        ("DCGM_FI_DEV_POWER_USAGE", 2147483632.0, True),
    ],
)
def test_blank_sentinels_exact_per_type(name: str, value: int | float, kept: bool) -> None:
    page = family(name, "gauge", "x", [(labels("node-a", 0), value)])
    page += family("DCGM_FI_DEV_SM_CLOCK", "gauge", "c", [(labels("node-a", 0), 1)])
    _host, gpus = parse_exposition(page)
    assert (BY_NAME[name].name in gpus[0].values) is kept
    assert is_blank(float(value), BY_NAME[name].blank) is not kept


def test_every_field_declares_its_blank_type() -> None:
    assert {f.blank for f in FIELDS} <= {"int32", "int64", "double"}


def test_fb_reserved_is_in_the_memory_total() -> None:
    _d, frame = read(default_page(gpus=1))
    s = frame.gpus[0]
    assert s.mem_reserved == 559 * MIB
    assert s.mem_total == (79000 + 1000 + 559) * MIB  # 80 GiB less nothing: the real total


def test_xid_code_and_meaning_from_value_and_labels() -> None:
    # dcgm-exporter 3.3.6+ labels XID_ERRORS with err_code / err_msg; the value is the code.
    xid = labels("node-a", 0, err_code="79", err_msg="GPU has fallen off the bus")
    page = default_page(gpus=1, drop=("DCGM_FI_DEV_XID_ERRORS",))
    page += family("DCGM_FI_DEV_XID_ERRORS", "gauge", "x", [(xid, 79)])
    source = source_of(page)
    source.open()
    first, second = source.read(), source.read()
    assert [x.code for x in first.gpus[0].xid_events] == [79]
    assert second.gpus[0].xid_events == ()  # the same last Xid is not a new event
    said = [n.text for n in first.notes if "Xid" in n.text]
    assert said == ["node node-a GPU 0: last Xid 79 (GPU has fallen off the bus)"]
    # without the labels (older exporters), the meaning comes from NVIDIA's catalogue
    plain = default_page(gpus=1, values={"DCGM_FI_DEV_XID_ERRORS": 48})
    _d, frame = read(plain)
    assert any("last Xid 48 (double-bit ECC error)" in n.text for n in frame.notes)


def test_default_counters_leave_rules_blind_and_say_which_csv_lines_enable_them() -> None:
    # default-counters.csv has no clock-event reasons, PCIe link generation or limits.
    _d, frame = read(default_page(gpus=1))
    blind = [n.text for n in frame.notes if n.kind == NoteKind.RULES_BLIND and "node-a" in n.text]
    assert len(blind) == 1
    text = blind[0]
    assert f"{RuleId.THERMAL_THROTTLE} (needs clock_reasons, max_sm_clock_mhz)" in text
    assert "DCGM_FI_DEV_CLOCKS_EVENT_REASONS, gauge, Current clock event reasons (bitmask)." in text
    assert "DCGM_FI_DEV_PCIE_LINK_GEN, gauge," in text
    assert "DCGM_FI_DEV_PCIE_MAX_LINK_GEN, gauge," in text
    assert f"{RuleId.PCIE_ERRORS}" not in text  # the replay counter is a default counter


def test_unknown_is_not_zero_or_none() -> None:
    # GDDR boards (an L4) have no memory-temperature sensor: DCGM reports 0 there.
    page = default_page(gpus=1, values={"DCGM_FI_DEV_MEMORY_TEMP": 0})
    _d, frame = read(page)
    s = frame.gpus[0]
    assert s.mem_temp_c is None
    # no clock-event series at all: the reasons are unknown, not "none"
    assert s.clock_reasons is None and s.reason_names == ()
    # PSTATE is read where the exporter's CSV has it
    _d, frame = read(page + family("DCGM_FI_DEV_PSTATE", "gauge", "p", [(labels("node-a", 0), 0)]))
    assert frame.gpus[0].pstate == 0


def test_node_names_and_kubernetes_labels() -> None:
    k8s = labels("node-k", 0, pod="trainer-0", namespace="ml", container="pytorch")
    page = family("DCGM_FI_DEV_GPU_TEMP", "gauge", "t", [(k8s, 50)])
    devices, _frame = read(page)
    d = devices[0]
    assert (d.node, d.pod, d.namespace, d.container) == ("node-k", "trainer-0", "ml", "pytorch")
    # older exporters: pod_name / pod_namespace / container_name; no Hostname: the URL's host
    old = {"gpu": "0", "pod_name": "p", "pod_namespace": "ns", "container_name": "c"}
    devices, _frame = read(family("DCGM_FI_DEV_GPU_TEMP", "gauge", "t", [(old, 50)]))
    assert (devices[0].node, devices[0].pod, devices[0].namespace) == ("n0:9400", "p", "ns")


def test_kubernetes_renamed_workload_labels_name_the_job_not_the_exporter() -> None:
    # scraped by a Prometheus in Kubernetes, pod/namespace/container are the exporter's own
    # target labels; the workload's are renamed exported_*
    k8s = labels(
        "node-k",
        0,
        pod="dcgm-exporter-x7k2p",
        namespace="gpu-operator",
        exported_pod="trainer-0",
        exported_namespace="ml",
        exported_container="pytorch",
    )
    devices, _frame = read(family("DCGM_FI_DEV_GPU_TEMP", "gauge", "t", [(k8s, 50)]))
    d = devices[0]
    assert (d.pod, d.namespace, d.container) == ("trainer-0", "ml", "pytorch")


def test_a_mig_gpu_shows_the_pods_of_its_instances() -> None:
    rows = [
        (labels("node-m", 0, GPU_I_ID=str(i), GPU_I_PROFILE="1g.10gb", pod=f"job-{i}"), 40)
        for i in (1, 2)
    ]
    devices, _frame = read(family("DCGM_FI_DEV_FB_USED", "gauge", "f", rows))
    assert devices[0].pod == "job-1, job-2"


def test_nodes_lacking_the_same_counters_share_one_note() -> None:
    source = source_of(*(default_page(f"node-{i}", gpus=1) for i in range(5)))
    source.open()
    blind = [n.text for n in source.read().notes if n.kind == NoteKind.RULES_BLIND]
    counters = [t for t in blind if "counters leave these rules blind" in t]
    assert len(counters) == 1 and counters[0].startswith("5 nodes (")


def test_rule_needs_names_real_rules() -> None:
    from gputui.core.dcgm import RULE_NEEDS

    assert {RuleId(r) for r in RULE_NEEDS}  # every key is a RuleId value


def test_a_page_cut_inside_its_last_line_never_reads_a_shorter_number() -> None:
    """A page cut short (a proxy's size limit, a dropped connection) ends without its line
    feed: its last value may be cut inside its digits, 2.03e+09 read as 2.03. That line is
    left out; the lines before it are read."""
    page = (
        'DCGM_FI_DEV_GPU_TEMP{gpu="0",UUID="GPU-a",Hostname="n1"} 61\n'
        'DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu="0",UUID="GPU-a",Hostname="n1"} 2.0356608502'
    )
    _host, gpus = parse_exposition(page)
    assert gpus[0].values["DCGM_FI_DEV_GPU_TEMP"] == 61
    assert "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION" not in gpus[0].values
    _host, whole = parse_exposition(page + "e+09\n")
    assert whole[0].values["DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"] == 2.0356608502e09
