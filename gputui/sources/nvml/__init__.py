"""The live source: NVIDIA's NVML through nvidia-ml-py. The only package importing pynvml.

One job a module:

- ``bindings``: what nvidia-ml-py and nvml.h give, whatever their version: names older
  releases lack, gputui's own structures, field ids, raw values decoded;
- ``policy``: the one query policy (what an NVML error means, cadences, retries) and the
  record of what each GPU answers;
- ``device``: a GPU's static facts, capabilities and topology, read once at open;
- ``sample``: one GPU's readings at one tick, each on its own cadence (GPM, MIG, NVLink);
- ``processes``: the processes on a GPU, in the layout each driver writes;
- ``rates``: PCIe byte counters and sampled throughput windows as rates;
- ``source``: ``NvmlSource``, which opens, reads and closes them all.
"""

from gputui.sources.nvml.source import NvmlSource

__all__ = ["NvmlSource"]
