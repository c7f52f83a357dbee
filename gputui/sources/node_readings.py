"""A node's GPU series made into the model's readings: the device, its sample (MIG
instances included) and a fresh Xid as an event.

Both remote paths make their readings here: the scraped endpoints (``remote``) and a
Prometheus server's answers (``prometheus.reads``, ``prometheus.source``);
``prometheus.columns`` writes the same conversion out column by column for a range.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from gputui.core.dcgm import BY_NAME
from gputui.core.model import DeviceInfo, GpuSample, MigInstance, Note, XidEvent
from gputui.core.names import NoteKind
from gputui.core.ranges import within_ranges
from gputui.core.xid import describe_xid

#: Kubernetes labels, as dcgm-exporter's pod mapping names them (and its older names).
#: Scraped by a Prometheus in Kubernetes, the workload's labels clash with the target's own
#: (the exporter's pod) and are renamed exported_*: those name the job, so they come first.
K8S_LABELS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("pod", ("exported_pod", "pod", "pod_name")),
    ("namespace", ("exported_namespace", "namespace", "pod_namespace")),
    ("container", ("exported_container", "container", "container_name")),
)


@dataclass
class NodeMig:
    """One MIG instance's series (labels GPU_I_ID, GPU_I_PROFILE) of one GPU."""

    gpu_instance_id: int
    labels: dict[str, str]
    values: dict[str, float] = field(default_factory=dict)


@dataclass
class NodeGpu:
    """One GPU of one scrape: its labels and its numbers (by DCGM field name)."""

    gpu: int
    labels: dict[str, str]
    values: dict[str, float] = field(default_factory=dict)
    #: series for a field this GPU already had: ignored (the first is kept), and said
    duplicates: int = 0
    #: its MIG instances' series, by GPU instance id (never merged into the GPU's)
    mig: dict[int, NodeMig] = field(default_factory=dict)
    #: model attributes the page carried a series for, blank or not (what it can judge)
    present: set[str] = field(default_factory=set)


def device_of(index: int, node: str, entry: NodeGpu) -> DeviceInfo:
    labels = entry.labels
    facts: dict[str, Any] = {}
    for name, value in entry.values.items():
        dcgm = BY_NAME[name]
        if dcgm.on == "device":
            facts[dcgm.attr] = dcgm.to_model(value)
    for attr, keys in K8S_LABELS:
        found = _workload(labels, keys)
        # a MIG GPU runs one job per instance: each instance's series names its own pod
        instances = [_workload(entry.mig[i].labels, keys) for i in sorted(entry.mig)]
        named = list(dict.fromkeys(v for v in instances if v))
        if named:
            found = ", ".join(named[:8]) + (f" (+{len(named) - 8})" if len(named) > 8 else "")
        if found:
            facts[attr] = found
    return DeviceInfo(  # built once, facts and all: a cluster lists thousands
        index=index,
        name=labels.get("modelName") or f"GPU {entry.gpu}",
        uuid=labels.get("UUID") or labels.get("uuid"),
        pci_bus_id=labels.get("pci_bus_id"),
        driver_version=labels.get("DCGM_FI_DRIVER_VERSION"),
        node=node,
        node_index=entry.gpu,
        mig_mode=True if entry.mig else None,
        **facts,
    )


def _workload(labels: dict[str, str], keys: tuple[str, ...]) -> str | None:
    return next((labels[k] for k in keys if labels.get(k, "").strip()), None)


_NOT_SAMPLE_FIELDS = frozenset(("xid", "gr_active"))


def _memory(fields: dict[str, Any]) -> None:
    """used + free + reserved is the total (DCGM: FB_TOTAL = used + free + reserved)."""
    used, free = fields.get("mem_used"), fields.get("mem_free")
    if used is not None and free is not None:
        fields["mem_total"] = used + free + (fields.get("mem_reserved") or 0)


def _model_fields(values: dict[str, float]) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    for name, value in values.items():
        dcgm = BY_NAME[name]
        if dcgm.on == "sample":
            fields[dcgm.attr] = dcgm.to_model(value)
    return fields


def _mig(mig: NodeMig) -> MigInstance:
    fields = _model_fields(mig.values)
    _memory(fields)
    return MigInstance(
        gpu_instance_id=mig.gpu_instance_id,
        profile=mig.labels.get("GPU_I_PROFILE") or None,
        mem_used=fields.get("mem_used"),
        mem_total=fields.get("mem_total"),
        sm_activity=fields.get("sm_activity"),
        gr_active=fields.get("gr_active"),
        tensor_activity=fields.get("tensor_activity"),
    )


def sample_of(index: int, entry: NodeGpu) -> GpuSample:
    own = _model_fields(entry.values)
    fields = {k: v for k, v in own.items() if k not in _NOT_SAMPLE_FIELDS}
    if "util_gpu" not in fields and own.get("gr_active") is not None:
        # the GPU's own graphics-engine activity (no GPU_I_ID) is its utilisation: a MIG
        # GPU has no GPU_UTIL, and profiling-only counter sets leave it out
        fields["util_gpu"] = own["gr_active"]
    if fields.get("mem_temp_c") == 0:  # GDDR boards have no sensor; DCGM says 0 there
        del fields["mem_temp_c"]
    _memory(fields)
    if entry.mig:
        instances = tuple(_mig(entry.mig[i]) for i in sorted(entry.mig))
        fields["mig_instances"] = instances
        used = [m.mem_used for m in instances]
        if "mem_used" not in fields and used and all(u is not None for u in used):
            fields["mem_used"] = sum(u for u in used if u is not None)
    return within_ranges(GpuSample(index=index, **fields))


def with_xid(
    sample: GpuSample,
    entry: NodeGpu,
    node: str,
    seen: dict[int, int],
    now: float,
    notes: list[Note],
) -> GpuSample:
    """DCGM's XID_ERRORS holds the last Xid's code: a code not seen before is an event."""
    code = entry.values.get("DCGM_FI_DEV_XID_ERRORS")
    if code is None or code == 0:
        return sample
    number = int(code)
    message = entry.labels.get("err_msg")
    notes.append(
        Note(
            NoteKind.GENERAL,
            f"node {node} GPU {entry.gpu}: last Xid {number} ({message or describe_xid(number)})",
        )
    )
    if seen.get(entry.gpu) == number:
        return sample
    seen[entry.gpu] = number
    return replace(sample, xid_events=(XidEvent(number, now),))
