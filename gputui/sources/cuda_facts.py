"""What a GPU process's own files say about its CUDA stack: the runtime it mapped (and
where that was read), the CUDA libraries, and the few environment variables gputui reads
(the rest may hold secrets)."""

from __future__ import annotations

import re
from pathlib import Path

from gputui.core.records import frozen
from gputui.sources import proc_files

# The only environment variables gputui reads (the rest may hold secrets).
CUDA_ENV_VARS = (
    "CUDA_LAUNCH_BLOCKING",
    "CUDA_VISIBLE_DEVICES",
    "PYTORCH_CUDA_ALLOC_CONF",
    "OMP_NUM_THREADS",
    "NCCL_P2P_DISABLE",
    "NCCL_IB_DISABLE",
    # settings that cost throughput (advisor/environment.py)
    "PYTORCH_NO_CUDA_MEMORY_CACHING",
    "TORCH_DISTRIBUTED_DEBUG",
    "CUDA_DEVICE_ORDER",
    # the framework allocators: why VRAM sits high and flat
    "XLA_PYTHON_CLIENT_PREALLOCATE",
    "XLA_PYTHON_CLIENT_MEM_FRACTION",
    "TF_FORCE_GPU_ALLOW_GROWTH",
    # the launcher: which processes are ranks of one distributed job
    "MASTER_ADDR",
    "MASTER_PORT",
    "WORLD_SIZE",
    "RANK",
    "LOCAL_RANK",
    "LOCAL_WORLD_SIZE",
    "SLURM_JOB_ID",
    "SLURM_STEP_ID",
    "OMPI_COMM_WORLD_SIZE",
    "OMPI_COMM_WORLD_RANK",
    "PMI_SIZE",
    "PMI_RANK",
    # ... and which rank it is on this node, of how many (a rank gone from a hung job)
    "OMPI_COMM_WORLD_LOCAL_RANK",
    "OMPI_COMM_WORLD_LOCAL_SIZE",
    "SLURM_PROCID",
    "SLURM_LOCALID",
)


_CUDART = re.compile(r"libcudart(?:-[0-9a-f]+)?\.so\.(\d+(?:\.\d+)*)")


# Mapped libraries worth keeping: the runtime, the driver (a compat copy is forward
# compatibility), and the frameworks whose allocators explain a VRAM plateau.
_KEEP_LIBS = (
    "libcudart",
    "libcuda.so",
    "libtorch_cuda",
    "libc10_cuda",
    "libtensorflow",
    "xla_extension",
    "vllm",
)


_MAX_LIBS = 16


_TORCH_CUDA = re.compile(r"""^cuda\s*(?::\s*[\w.\[\]|]+\s*)?=\s*['"](\d+\.\d+)""", re.M)


_TF_CUDA = re.compile(r"""['"]cuda_version['"]\s*:\s*['"](\d+\.\d+)""")


@frozen
class CudaFacts:
    """What a process's maps and environment say about its CUDA stack."""

    runtime: str | None = None
    evidence: str | None = None
    libraries: tuple[str, ...] = ()
    env: tuple[str, ...] = ()


def runtime_version(path: str) -> tuple[str | None, str | None]:
    """The CUDA runtime version of a mapped libcudart, and what it rests on.

    A full soname (``libcudart.so.12.4.127``) says it; ``libcudart.so.12`` or a wheel's
    hashed copy (``libcudart-d0da41ae.so.12``) gives only the major, and the exact version
    is in files beside it: the ``nvidia-cuda-runtime-cu12`` package metadata, torch's
    ``version.py``, TensorFlow's ``build_info.py``.
    """
    name = path.rsplit("/", 1)[-1]
    match = _CUDART.search(name)
    if match is None:
        return None, None
    version = match.group(1)
    parts = version.split(".")
    if len(parts) >= 2:
        return ".".join(parts[:2]), name
    lib = Path(path).parent
    site = _site_packages(lib)
    candidates: list[tuple[Path, re.Pattern[str] | None]] = []
    if site is not None:
        for info in sorted(site.glob(f"nvidia_cuda_runtime_cu{parts[0]}-*.dist-info")):
            candidates.append((info / "METADATA", None))
        candidates.append((site / "torch" / "version.py", _TORCH_CUDA))
        candidates.append((site / "tensorflow" / "python" / "platform" / "build_info.py", _TF_CUDA))
    for file, pattern in candidates:
        found = _version_in(file, pattern, parts[0])
        if found is not None:
            return found, str(file.relative_to(site)) if site is not None else str(file)
    return parts[0], name


def _site_packages(lib: Path) -> Path | None:
    for parent in (lib, *lib.parents):
        if parent.name in ("site-packages", "dist-packages"):
            return parent
    return None


def _version_in(file: Path, pattern: re.Pattern[str] | None, major: str) -> str | None:
    try:
        text = proc_files.regular_head(file, 20000).decode("utf-8", "replace")
    except OSError:
        return None
    if pattern is None:  # package metadata: "Version: 12.4.127"
        match = re.search(r"^Version:\s*(\d+)\.(\d+)", text, re.M)
        found = f"{match.group(1)}.{match.group(2)}" if match else None
    else:
        match = pattern.search(text)
        found = match.group(1) if match else None
    return found if found is not None and found.split(".")[0] == major else None


def process_facts(pid: int, proc: str = "/proc") -> CudaFacts:
    """The runtime (and where its version was read), CUDA libraries and the few variables
    gputui reads of a process; empty where not permitted."""
    runtime = evidence = None
    libraries: list[str] = []
    try:
        maps, _cut = proc_files.lines(
            f"{proc}/{pid}/maps", proc_files.MAX_MAPS_BYTES, proc_files.MAX_MAPS_LINES
        )
    except OSError:
        maps = iter(())
    for line in maps:
        path = line.split(None, 5)[-1].strip() if line.count(" ") >= 5 else ""
        if not path.startswith("/"):
            continue
        name = path.rsplit("/", 1)[-1]
        if not any(key in name for key in _KEEP_LIBS) or path in libraries:
            continue
        if len(libraries) < _MAX_LIBS:
            libraries.append(path)
        if runtime is None and "libcudart" in name:
            runtime, evidence = runtime_version(path)
    try:
        variables = proc_files.environment(pid, proc)
    except OSError:
        variables = []
    env = [f"{key}={value}" for key, value in variables if key in CUDA_ENV_VARS]
    return CudaFacts(runtime, evidence, tuple(libraries), tuple(sorted(env)))
