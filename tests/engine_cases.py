"""Unit tests of the engine's rules (``gputui rules``) as ``promtool test rules`` runs them:
for each alert, GPUs on synthetic dcgm-exporter series with the problem planted on one of
them and healthy peers beside it, and the alerts expected, their labels and annotations
rendered; at the evaluation time every other alert of the file must be silent.

Series are promtool's expanding notation at the scrape interval (``60x40``: 41 readings
of 60; ``stale``: the series ends as a failed scrape ends it). Expected values are worked
out by hand from the series, so the test checks the PromQL, not a copy of it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from gputui.advisor.promrules import Engine
from gputui.advisor.promrules.alert import render
from gputui.advisor.promrules.promql import GPU_IDS, JOB, NODE, NODE_IDS
from gputui.core.xid import XIDS

READINGS = 60  # each series runs this many scrape intervals

#: a busy, healthy H100 as dcgm-exporter with the operator's extended counters shows it
HEALTHY: Mapping[str, float] = {
    "DCGM_FI_DEV_GPU_UTIL": 95,
    "DCGM_FI_DEV_GPU_TEMP": 60,
    "DCGM_FI_DEV_SLOWDOWN_TEMP": 87,
    "DCGM_FI_DEV_MAX_SM_CLOCK": 1980,
    "DCGM_FI_DEV_SM_CLOCK": 1950,
    "DCGM_FI_DEV_CLOCKS_EVENT_REASONS": 0,
    "DCGM_FI_DEV_POWER_USAGE": 500,
    "DCGM_FI_DEV_POWER_MGMT_LIMIT": 700,
    "DCGM_FI_DEV_POWER_MGMT_LIMIT_DEF": 700,
    "DCGM_FI_DEV_PCIE_LINK_GEN": 5,
    "DCGM_FI_DEV_PCIE_LINK_WIDTH": 16,
    "DCGM_FI_DEV_PCIE_MAX_LINK_GEN": 5,
    "DCGM_FI_DEV_PCIE_MAX_LINK_WIDTH": 16,
    "DCGM_FI_PROF_PCIE_RX_BYTES": 2e9,
    "DCGM_FI_PROF_PCIE_TX_BYTES": 3e8,
    "DCGM_FI_DEV_PCIE_REPLAY_COUNTER": 3,
    "DCGM_FI_DEV_FB_USED": 60000,
    "DCGM_FI_DEV_FB_FREE": 20000,
    "DCGM_FI_DEV_FB_RESERVED": 500,
    "DCGM_FI_DEV_XID_ERRORS": 0,
    "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL": 0,
    "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL": 0,
    "DCGM_FI_DEV_ROW_REMAP_FAILURE": 0,
    "DCGM_FI_DEV_ROW_REMAP_PENDING": 0,
    "DCGM_FI_DEV_RETIRED_SBE": 0,
    "DCGM_FI_DEV_RETIRED_DBE": 0,
    "DCGM_FI_DEV_RETIRED_PENDING": 0,
    "DCGM_FI_DEV_MEM_COPY_UTIL": 40,
    "DCGM_FI_PROF_SM_ACTIVE": 0.8,
    "DCGM_FI_DEV_FAN_SPEED": 45,
}
JOB_NAME = "dcgm"


@dataclass
class Gpu:
    node: str
    gpu: int
    #: metric -> a value, or promtool's notation for the whole series
    series: dict[str, float | str] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)

    def identity(self) -> dict[str, str]:
        return {
            "gpu": str(self.gpu),
            "UUID": f"GPU-{self.node}-{self.gpu}",
            "Hostname": self.node,
            "instance": f"{self.node}:9400",
            "job": JOB_NAME,
        }

    def all_labels(self) -> dict[str, str]:
        return {**self.identity(), "modelName": "NVIDIA H100 80GB HBM3", **self.labels}


@dataclass
class Expected:
    alert: str
    node: str
    gpu: int | None
    value: float
    #: which labels the alert keeps: the GPU's ("gpu"), its identity ("ids"), its node's
    #: ("node") or its scrape target's ("target")
    kind: str = "gpu"
    extra: dict[str, str] = field(default_factory=dict)


@dataclass
class Case:
    name: str
    gpus: list[Gpu]
    expected: list[Expected]
    eval_s: float = 600.0
    #: scrape targets with up == 0 that carry no DCGM series
    down_targets: tuple[str, ...] = ()


def _values(value: float | str) -> str:
    return value if isinstance(value, str) else f"{value:g}x{READINGS}"


def _series(case: Case) -> list[dict[str, str]]:
    out = []
    nodes: dict[str, list[Gpu]] = {}
    for gpu in case.gpus:
        nodes.setdefault(gpu.node, []).append(gpu)
        labels = ",".join(f'{k}="{v}"' for k, v in gpu.all_labels().items())
        for metric, values in {**HEALTHY, **gpu.series}.items():
            if metric != "up":  # the node's, below
                out.append({"series": f"{metric}{{{labels}}}", "values": _values(values)})
    for node, members in nodes.items():
        up = members[0].series.get("up", 1.0)
        out.append(
            {"series": f'up{{instance="{node}:9400",job="{JOB_NAME}"}}', "values": _values(up)}
        )
    for target in case.down_targets:
        out.append(
            {"series": f'up{{instance="{target}:9400",job="{JOB_NAME}"}}', "values": _values(0)}
        )
    return out


def _rendered(template: str, labels: Mapping[str, str], value: float) -> str:
    """An annotation as Prometheus renders it (the forms the rules use)."""
    text = render(template, labels, value)
    assert "{{" not in text, text
    return text


def _labels(case: Case, expected: Expected) -> dict[str, str]:
    if expected.kind == "target":
        return {"instance": f"{expected.node}:9400", "job": JOB_NAME, NODE: expected.node}
    gpu = next(g for g in case.gpus if g.node == expected.node and (expected.gpu in (None, g.gpu)))
    labels = gpu.all_labels()
    keep: Sequence[str] = {"gpu": tuple(labels), "ids": GPU_IDS, "node": NODE_IDS}[expected.kind]
    return {**{k: labels[k] for k in keep}, NODE: expected.node, **expected.extra}


def promtool_tests(engine: Engine, rules_file: str, scrape_s: float, cases: Sequence[Case]) -> str:
    """promtool's test file (JSON, which YAML reads) for ``cases``."""
    by_name = {alert.name: alert for alert in engine.alerts}
    tests = []
    for case in cases:
        checks = []
        for name, alert in by_name.items():
            wanted = []
            for expected in (e for e in case.expected if e.alert == name):
                labels = {**_labels(case, expected), **alert.labels}
                annotations = {
                    k: _rendered(v, {**labels, "alertname": name}, expected.value)
                    for k, v in alert.annotations.items()
                }
                wanted.append({"exp_labels": labels, "exp_annotations": annotations})
            checks.append(
                {"eval_time": f"{case.eval_s:g}s", "alertname": name, "exp_alerts": wanted}
            )
        tests.append(
            {
                "name": case.name,
                "interval": f"{scrape_s:g}s",
                "input_series": _series(case),
                "alert_rule_test": checks,
            }
        )
    document = {
        "rule_files": [rules_file],
        "evaluation_interval": f"{scrape_s:g}s",
        "tests": tests,
    }
    return json.dumps(document, indent=1)


def _one(node: str, gpu: int, **series: float | str) -> Gpu:
    return Gpu(node, gpu, dict(series))


def _pair(**series: float | str) -> list[Gpu]:
    """A healthy GPU 0 and the faulty GPU 1 on one node."""
    return [_one("node-a", 0), _one("node-a", 1, **series)]


def cases(scrape_s: float) -> list[Case]:
    """Every alert's case at this scrape interval, and a healthy node."""
    per_reading = scrape_s / 60.0  # minutes a reading
    stale = int(270 // scrape_s)  # readings until 270 s: silent for 330 s at 600 s
    out = [
        Case("healthy", [_one("node-a", g) for g in range(3)], []),
        Case(
            "thermal-throttle: thermal reasons set",
            _pair(DCGM_FI_DEV_CLOCKS_EVENT_REASONS=0x60, DCGM_FI_DEV_GPU_TEMP=88),
            [Expected("GputuiThermalThrottle", "node-a", 1, 88)],
        ),
        Case(
            "thermal-throttle: at the slowdown limit, no reason read as set",
            _pair(DCGM_FI_DEV_GPU_TEMP=87),
            [Expected("GputuiThermalThrottle", "node-a", 1, 87)],
        ),
        Case(
            "thermal-hot: within 3 degrees of the slowdown limit",
            _pair(DCGM_FI_DEV_GPU_TEMP=85),
            [Expected("GputuiThermalHot", "node-a", 1, 85)],
        ),
        Case(
            "thermal-hot: an idle GPU as hot is left alone",
            _pair(DCGM_FI_DEV_GPU_TEMP=85, DCGM_FI_DEV_GPU_UTIL=0, DCGM_FI_DEV_FB_USED=500),
            [],
        ),
        Case(
            "hw-slowdown: under load",
            _pair(DCGM_FI_DEV_CLOCKS_EVENT_REASONS=0x8),
            [Expected("GputuiHwSlowdown", "node-a", 1, 100)],
        ),
        Case(
            "power-cap: at a lowered limit",
            _pair(
                DCGM_FI_DEV_CLOCKS_EVENT_REASONS=0x4,
                DCGM_FI_DEV_POWER_USAGE=398,
                DCGM_FI_DEV_POWER_MGMT_LIMIT=400,
            ),
            [
                Expected("GputuiPowerCap", "node-a", 1, 398),
                Expected("GputuiPowerLimitLowered", "node-a", 1, 300),
            ],
        ),
        Case(
            "power-cap: at the default limit under a heavy load is normal",
            _pair(DCGM_FI_DEV_CLOCKS_EVENT_REASONS=0x4, DCGM_FI_DEV_POWER_USAGE=699),
            [],
        ),
        Case(
            "power-limit-lowered: at any load",
            _pair(
                DCGM_FI_DEV_POWER_MGMT_LIMIT=600, DCGM_FI_DEV_GPU_UTIL=0, DCGM_FI_DEV_FB_USED=500
            ),
            [Expected("GputuiPowerLimitLowered", "node-a", 1, 100)],
        ),
        Case(
            "clocks-held: busy at 55 % of the maximum, no reason named",
            _pair(DCGM_FI_DEV_SM_CLOCK=1095),
            [Expected("GputuiClocksHeld", "node-a", 1, 100 * 1095 / 1980)],
        ),
        Case(
            "clocks-held: the same clock with the power cap named is not it",
            _pair(DCGM_FI_DEV_SM_CLOCK=1095, DCGM_FI_DEV_CLOCKS_EVENT_REASONS=0x4),
            [],
        ),
        Case(
            "vram-pressure: growing, full in 15 minutes",
            _pair(
                DCGM_FI_DEV_FB_USED=f"60000+{scrape_s:g}x{READINGS}",
                DCGM_FI_DEV_FB_FREE=f"1500-{scrape_s:g}x{READINGS}",
            ),
            [Expected("GputuiVramGrowing", "node-a", 1, 900)],
        ),
        Case(
            "vram-pressure: growing, full in under 5 minutes",
            _pair(
                DCGM_FI_DEV_FB_USED=f"60000+{scrape_s:g}x{READINGS}",
                DCGM_FI_DEV_FB_FREE=f"700-{scrape_s:g}x{READINGS}",
            ),
            [Expected("GputuiVramFullSoon", "node-a", 1, 100)],
        ),
        Case(
            "vram-pressure: at the ceiling while the work stalls",
            _pair(
                DCGM_FI_DEV_FB_USED=f"78000x{int(150 // scrape_s) - 1} 79300x{READINGS}",
                DCGM_FI_DEV_FB_FREE=f"1500x{int(150 // scrape_s) - 1} 200x{READINGS}",
                DCGM_FI_DEV_GPU_UTIL=f"95x{int(180 // scrape_s) - 1} 5x{READINGS}",
            ),
            [Expected("GputuiVramCeiling", "node-a", 1, 100 * 79300 / 80000)],
            eval_s=360.0,
        ),
        Case(
            "vram-pressure: high and flat is a framework's reserve",
            _pair(DCGM_FI_DEV_FB_USED=79300, DCGM_FI_DEV_FB_FREE=200),
            [],
        ),
        Case(
            "idle-allocated: 58.6 GiB held, the GPU idle for 5 minutes",
            _pair(DCGM_FI_DEV_GPU_UTIL=0),
            [Expected("GputuiIdleAllocated", "node-a", 1, 60000 / 1024)],
        ),
        Case(
            "pcie-link-degraded: Gen4 in a Gen5 slot",
            _pair(DCGM_FI_DEV_PCIE_LINK_GEN=4),
            [Expected("GputuiPcieLinkDegraded", "node-a", 1, 50)],
        ),
        Case(
            "pcie-link-degraded: an idle link trains down",
            _pair(DCGM_FI_DEV_PCIE_LINK_GEN=1, DCGM_FI_DEV_GPU_UTIL=0, DCGM_FI_DEV_FB_USED=500),
            [],
        ),
        Case(
            "pcie-saturated: 55 GB/s of 63",
            _pair(DCGM_FI_PROF_PCIE_RX_BYTES=55e9),
            [Expected("GputuiPcieSaturated", "node-a", 1, 100 * 55 / 63)],
        ),
        Case(
            "pcie-errors: 10 replays a minute",
            _pair(DCGM_FI_DEV_PCIE_REPLAY_COUNTER=f"3+{10 * per_reading:g}x{READINGS}"),
            [Expected("GputuiPcieReplays", "node-a", 1, 10)],
        ),
        Case(
            "pcie-errors: 120 replays a minute",
            _pair(DCGM_FI_DEV_PCIE_REPLAY_COUNTER=f"3+{120 * per_reading:g}x{READINGS}"),
            [Expected("GputuiPcieReplaysHigh", "node-a", 1, 120)],
        ),
        Case(
            "gpu-errors: Xid 45 alone is benign, an old Xid no news",
            [
                _one("node-a", 0, DCGM_FI_DEV_XID_ERRORS=f"0x10 45x{READINGS}"),
                _one("node-a", 1, DCGM_FI_DEV_XID_ERRORS=79),
            ],
            [],
            eval_s=480.0,
        ),
        Case(
            "gpu-errors: an Xid gputui does not know is checked as hardware",
            _pair(DCGM_FI_DEV_XID_ERRORS=f"0x{int(300 // scrape_s)} 1000x{READINGS}"),
            [Expected("GputuiXidUnlisted", "node-a", 1, 1000)],
            eval_s=480.0,
        ),
        Case(
            "memory-health: a row remap failed",
            _pair(DCGM_FI_DEV_ROW_REMAP_FAILURE=1),
            [Expected("GputuiMemoryFailing", "node-a", 1, 1)],
        ),
        Case(
            "memory-health: a row remap pending",
            _pair(DCGM_FI_DEV_ROW_REMAP_PENDING=1),
            [Expected("GputuiMemoryRepairPending", "node-a", 1, 1)],
        ),
        Case(
            "not-reporting: one GPU went silent",
            _pair(DCGM_FI_DEV_GPU_TEMP=f"60x{stale} stale"),
            [Expected("GputuiGpuNotReporting", "node-a", 1, 330, kind="ids")],
        ),
        Case(
            "not-reporting: a whole node went silent, its scrapes failing",
            [
                _one("node-a", 0),
                Gpu("node-b", 0, _silent_after(stale)),
            ],
            [Expected("GputuiNodeNotReporting", "node-b", None, 330, kind="node")],
        ),
        Case(
            "not-reporting: a DCGM target whose scrapes fail, never seen",
            [_one("node-a", 0)],
            [Expected("GputuiExporterDown", "node-c", None, 0, kind="target")],
            down_targets=("node-c",),
        ),
        *_stragglers(),
        *_xid_classes(scrape_s),
        *_stuck(scrape_s),
        *_fans(scrape_s),
    ]
    return out


def _silent_after(readings: int) -> dict[str, float | str]:
    """Every series of a node that stops reporting after ``readings``, its scrapes failing."""
    out: dict[str, float | str] = {m: f"{v:g}x{readings} stale" for m, v in HEALTHY.items()}
    out["up"] = f"1x{readings} 0x{READINGS}"
    return out


def _stragglers() -> list[Case]:
    pod = {"exported_pod": "train-0", "exported_namespace": "ml"}
    ranks = [Gpu("node-a", g, labels=dict(pod)) for g in range(3)]
    slow = [*ranks[:2], Gpu("node-a", 2, {"DCGM_FI_DEV_SM_CLOCK": 1100}, dict(pod))]
    # the slow one names a cause (the power cap) so it is the straggler alone
    slow[2].series["DCGM_FI_DEV_CLOCKS_EVENT_REASONS"] = 0x4
    idle = [*ranks[:2], Gpu("node-a", 2, {"DCGM_FI_DEV_GPU_UTIL": 40}, dict(pod))]
    job = {JOB: "train-0"}
    return [
        Case("straggler: the ranks of one pod at the same pace", ranks, []),
        Case(
            "straggler: one rank's SM clock far below its peers'",
            slow,
            [Expected("GputuiStragglerClock", "node-a", 2, 100 * 1100 / 1980, extra=job)],
        ),
        Case(
            "straggler: one rank waits while its peers work",
            idle,
            [Expected("GputuiStragglerIdle", "node-a", 2, 40, extra=job)],
        ),
    ]


def _xid_classes(scrape_s: float) -> list[Case]:
    """One case a class of Xid: its first code, 3 minutes before the evaluation."""
    seen: dict[tuple[str, str, tuple[str, ...]], int] = {}
    for code, xid in sorted(XIDS.items()):
        if xid.origin != "benign":
            seen.setdefault((xid.origin, xid.level, xid.remedies), code)
    return [
        Case(
            f"gpu-errors: Xid {code} ({origin}, {level})",
            _pair(DCGM_FI_DEV_XID_ERRORS=f"0x{int(300 // scrape_s)} {code}x{READINGS}"),
            [Expected(f"GputuiXid{origin.capitalize()}{code}", "node-a", 1, code)],
            eval_s=480.0,
        )
        for (origin, level, _remedies), code in seen.items()
    ]


#: busy without work: 100 % utilisation at 130 W of 700, memory and SMs at rest, no traffic
SPIN: Mapping[str, float | str] = {
    "DCGM_FI_DEV_GPU_UTIL": 100,
    "DCGM_FI_DEV_POWER_USAGE": 130,
    "DCGM_FI_DEV_MEM_COPY_UTIL": 0,
    "DCGM_FI_PROF_SM_ACTIVE": 0.04,
    "DCGM_FI_PROF_PCIE_RX_BYTES": 1e6,
    "DCGM_FI_PROF_PCIE_TX_BYTES": 1e6,
}


def _stuck(scrape_s: float) -> list[Case]:
    since_420 = int(420 // scrape_s) - 1  # readings before 420 s: spinning 3 minutes at 600 s
    pod = {"exported_pod": "train-0", "exported_namespace": "ml"}
    idle: dict[str, float | str] = {
        **SPIN,
        "DCGM_FI_DEV_GPU_UTIL": 0,
        "DCGM_FI_DEV_POWER_USAGE": 90,
    }
    late: dict[str, float | str] = {
        **SPIN,
        "DCGM_FI_DEV_POWER_USAGE": f"500x{since_420} 130x{READINGS}",
    }
    ranks = [Gpu("node-a", g, dict(SPIN), dict(pod)) for g in range(2)]
    job = {JOB: "train-0"}
    return [
        Case(
            "busy-no-work: 100 % busy for 10 minutes with nothing computed or moved",
            _pair(**SPIN),
            [Expected("GputuiBusyNoWork", "node-a", 1, 100)],
        ),
        Case(
            "busy-no-work: the same for 3 minutes is not called yet",
            _pair(**late),
            [],
        ),
        Case(
            "busy-no-work: memory-bound decode at modest power is work",
            _pair(**{**SPIN, "DCGM_FI_DEV_POWER_USAGE": 200, "DCGM_FI_DEV_MEM_COPY_UTIL": 60}),
            [],
        ),
        Case(
            "busy-no-work: traffic over NVLink is work",
            _pair(**SPIN, DCGM_FI_PROF_NVLINK_TX_BYTES=4e10),
            [],
        ),
        Case(
            "busy-no-work: one reading of power alone says nothing",
            _pair(
                **{
                    k: v
                    for k, v in SPIN.items()
                    if k not in ("DCGM_FI_DEV_MEM_COPY_UTIL", "DCGM_FI_PROF_SM_ACTIVE")
                }
            ),
            [],
        ),
        Case(
            "busy-no-work: a pod of one GPU is no job's rank",
            [_one("node-a", 0), Gpu("node-a", 1, dict(SPIN), dict(pod))],
            [Expected("GputuiBusyNoWork", "node-a", 1, 100)],
        ),
        Case(
            "collective-hang: two ranks of a pod wait while the third idles",
            [*ranks, Gpu("node-a", 2, idle, dict(pod))],
            [
                Expected("GputuiCollectiveHang", "node-a", 0, 100, extra=job),
                Expected("GputuiCollectiveHang", "node-a", 1, 100, extra=job),
                Expected("GputuiStragglerIdle", "node-a", 2, 0, extra=job),
                Expected("GputuiIdleAllocated", "node-a", 2, 60000 / 1024),
            ],
        ),
    ]


def _rising(scrape_s: float, mean: float, eval_s: float = 600.0) -> str:
    """A temperature rising 2 °C a minute whose mean over the rules' window (the last
    ``min_points`` + 1 = 6 readings) is ``mean`` at ``eval_s``."""
    step = 2 * scrape_s / 60
    last = eval_s / scrape_s
    return f"{mean - step * (last - 2.5):g}+{step:g}x{READINGS}"


def _fans(scrape_s: float) -> list[Case]:
    return [
        Case(
            "fan-fault: a stopped fan on a board 12 degrees from its limit",
            _pair(DCGM_FI_DEV_FAN_SPEED=0, DCGM_FI_DEV_GPU_TEMP=75),
            [Expected("GputuiFanStopped", "node-a", 1, 75)],
        ),
        Case(
            "fan-fault: a stopped fan near the limit is critical",
            _pair(DCGM_FI_DEV_FAN_SPEED=0, DCGM_FI_DEV_GPU_TEMP=85),
            [
                Expected("GputuiFanStoppedNearLimit", "node-a", 1, 85),
                Expected("GputuiThermalHot", "node-a", 1, 85),
            ],
        ),
        Case(
            "fan-fault: a zero-RPM stop on an idle, cool board is calm",
            _pair(
                DCGM_FI_DEV_FAN_SPEED=0,
                DCGM_FI_DEV_GPU_TEMP=45,
                DCGM_FI_DEV_GPU_UTIL=0,
                DCGM_FI_DEV_FB_USED=500,
            ),
            [],
        ),
        Case(
            "fan-fault: held at 25 % while a hot board heats",
            _pair(DCGM_FI_DEV_FAN_SPEED=25, DCGM_FI_DEV_GPU_TEMP=_rising(scrape_s, 75.7)),
            [Expected("GputuiFanHeldLow", "node-a", 1, 75.7)],
        ),
        Case(  # past the warning's zone for longer than it is kept after it ends
            "fan-fault: held at 25 % near the limit and heating is critical",
            _pair(DCGM_FI_DEV_FAN_SPEED=25, DCGM_FI_DEV_GPU_TEMP=_rising(scrape_s, 86.6)),
            [
                Expected("GputuiFanHeldLowNearLimit", "node-a", 1, 86.6),
                Expected("GputuiThermalHot", "node-a", 1, 86.6),
            ],
        ),
        Case(
            "fan-fault: held at 25 % on a hot board that does not heat is its curve",
            _pair(DCGM_FI_DEV_FAN_SPEED=25, DCGM_FI_DEV_GPU_TEMP=76),
            [],
        ),
    ]
