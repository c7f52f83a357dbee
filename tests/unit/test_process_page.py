"""A process looked into, without an app: its own history kept while it lives, its
environment with the GPU's variables first and every credential masked, and the
confirmation a signal needs."""

from __future__ import annotations

from dataclasses import replace

from gputui.core.model import Frame, ProcessSample
from gputui.core.process_access import ProcessDetails, Relative
from gputui.core.sanitize import mask_variable
from gputui.sampling.process_history import ProcessHistory, ProcessMetric
from gputui.view.cells import plain_lines
from gputui.view.process_page import environment_order, process_page, signal_page

NOW = 1_800_000_000.0
PROC = ProcessSample(
    pid=4242,
    gpu_index=1,
    gpu_memory=30 << 30,
    user="ana",
    command="/opt/venv/bin/python3 train.py --token tok_1234 --lr 3e-4",
    cpu_percent=97.0,
    rss=8 << 30,
    threads=40,
    children=4,
    started=NOW - 600,
    sm_util=88.0,
    ppid=4000,
    parent_command="-bash",
    cpus_allowed="0-31",
    cpu_nodes=(0,),
    env=("CUDA_VISIBLE_DEVICES=1",),
)
ENVIRONMENT = (
    "HOME=/home/ana",
    "WANDB_API_KEY=abc123secret",
    "OPENAI_KEY=sk-live-999",
    "NCCL_DEBUG=INFO",
    "CUDA_VISIBLE_DEVICES=1",
    "PATH=/usr/bin",
    "HF_TOKEN=hf_xyz",
    "DATABASE_URL=postgres://bob:hunter2@db/x",
    "OMP_NUM_THREADS=8",
)


def _history(ticks: int) -> ProcessHistory:
    history = ProcessHistory(points=50)
    for i in range(ticks):
        procs = (
            replace(PROC, gpu_memory=(20 + i) << 30),
            replace(PROC, gpu_index=2, gpu_memory=1 << 30, sm_util=95.0),
        )
        history.add(Frame(time=NOW + i, gpus=(), processes=procs))
    return history


def test_a_process_history_adds_its_gpus_and_keeps_the_newest() -> None:
    history = _history(80)
    times, memory = history.series(PROC.pid, PROC.started, ProcessMetric.GPU_MEMORY)
    assert len(times) == 50 and times[-1] == NOW + 79
    assert memory[-1] == float((20 + 79 + 1) << 30)  # both GPUs' memory
    _, sm = history.series(PROC.pid, PROC.started, ProcessMetric.SM)
    assert sm[-1] == 95.0  # the busier GPU
    assert history.series(PROC.pid, NOW, ProcessMetric.CPU) == ([], [])  # another start


def test_a_process_that_leaves_is_forgotten_and_the_count_is_bounded() -> None:
    history = ProcessHistory(points=10, max_processes=3)
    many = tuple(replace(PROC, pid=p, gpu_memory=p << 20) for p in range(10))
    history.add(Frame(time=NOW, gpus=(), processes=many))
    assert len(history) == 3
    assert history.series(9, PROC.started, ProcessMetric.RSS)[0]  # the largest kept
    history.add(Frame(time=NOW + 1, gpus=(), processes=()))
    assert len(history) == 0


def test_environment_values_that_are_credentials_are_masked() -> None:
    masked = [mask_variable(v) for v in ENVIRONMENT]
    assert "WANDB_API_KEY=***" in masked and "OPENAI_KEY=***" in masked
    assert "HF_TOKEN=***" in masked and "DATABASE_URL=postgres://bob:***@db/x" in masked
    assert "PATH=/usr/bin" in masked and "NCCL_DEBUG=INFO" in masked


def test_the_page_shows_the_gpus_variables_first_and_masks_secrets() -> None:
    details = ProcessDetails(
        PROC.pid,
        environment=ENVIRONMENT,
        parent=Relative(4000, "-bash"),
        children=(Relative(4300, "python3 train.py", 35.0),),
        threads=40,
        gpu_devices=("/dev/nvidia1", "/dev/nvidiactl", "/dev/nvidia-uvm"),
    )
    page = process_page([PROC], details, _history(30), NOW, 100)
    text = "\n".join(plain_lines(page, 100))
    for secret in ("tok_1234", "abc123secret", "sk-live-999", "hf_xyz", "hunter2"):
        assert secret not in text
    assert "--token ***" in text and "OPENAI_KEY=***" in text
    lines = text.splitlines()
    env_at = next(i for i, line in enumerate(lines) if line.startswith("Environment (9"))
    variables = [line.strip() for line in lines[env_at + 1 : env_at + 10]]
    assert variables[:4] == [
        "CUDA_VISIBLE_DEVICES=1",
        "HF_TOKEN=***",
        "NCCL_DEBUG=INFO",
        "OMP_NUM_THREADS=8",
    ]
    assert variables[4:6] == ["DATABASE_URL=postgres://bob:***@db/x", "HOME=/home/ana"]
    assert "python3 train.py --token *** --lr 3e-4" in lines[0]
    assert any("/dev/nvidia1, /dev/nvidiactl, /dev/nvidia-uvm" in line for line in lines)
    assert any("4300" in line and "35 %" in line for line in lines)
    assert any(line.startswith("GPU memory") for line in lines)


def test_without_a_live_look_the_page_says_why_and_shows_what_was_read() -> None:
    why = "A simulated process: nothing more is read of it here."
    page = process_page([PROC], None, ProcessHistory(), NOW, 100, why_no_details=why)
    text = "\n".join(plain_lines(page, 100))
    assert why in text and "CUDA_VISIBLE_DEVICES=1" in text and "none kept yet" in text


def test_an_unreadable_environment_names_who_may_read_it() -> None:
    details = ProcessDetails(
        PROC.pid, unreadable=(("environment", "only ana or root may read its environment"),)
    )
    text = "\n".join(plain_lines(process_page([PROC], details, ProcessHistory(), NOW, 100), 100))
    assert "only ana or root may read its environment" in text


def test_environment_order_puts_the_gpu_first() -> None:
    ordered = sorted(ENVIRONMENT, key=environment_order)
    assert ordered[0].startswith("CUDA_") and ordered[-1].startswith("WANDB_")


def test_the_confirmation_names_pid_user_command_and_signal() -> None:
    lines = plain_lines(signal_page(PROC, "SIGTERM", root=True, width=100), 100)
    text = "\n".join(lines)
    assert lines[0] == "Send SIGTERM to PID 4242?"
    assert "ana (you are root" in text and "--token ***" in text and "tok_1234" not in text
    assert "n / Esc cancel: nothing is sent" in text
