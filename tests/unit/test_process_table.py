"""The process table without an app: commands that show what matters, every column sorts
either way, filters, a job's ranks under their launcher, selection that stays in view."""

from __future__ import annotations

from dataclasses import replace

import pytest

from gputui.core.config import Thresholds
from gputui.core.model import ProcessSample
from gputui.view.all_processes import all_processes
from gputui.view.cells import PidKey, plain_lines
from gputui.view.command_line import compact
from gputui.view.process_table import (
    FILTER_MAX_CHARS,
    SORTS,
    Entry,
    Group,
    ProcessChoices,
    elapsed,
    entries,
    gpu_list,
    listing,
    pids_in_order,
    shown_command,
    users,
)
from gputui.view.processes import processes

T = Thresholds()
NOW = 1_800_000_000.0
VENV_COMMAND = "/usr/local/lib/python3.11/venv/bin/python3 train.py --model llama --batch-size 16"


def _proc(pid: int, gpu: int = 0, **fields: object) -> ProcessSample:
    base = ProcessSample(
        pid=pid,
        gpu_index=gpu,
        gpu_memory=(pid % 7 + 1) << 30,
        user="mlteam",
        command="python train.py --model llama-3-8b --batch-size 64 --data /data/imagenet",
        cpu_percent=120.0,
        rss=12 << 30,
        threads=48,
        children=8,
        started=NOW - 9300,
        sm_util=80.0,
    )
    return replace(base, **fields)  # type: ignore[arg-type]


# -- commands ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("command", "shown"),
    [
        (VENV_COMMAND, "python3 train.py --model llama --batch-size 16"),
        ("/root/.pyenv/versions/3.11.7/bin/python3.11 -m torch.distributed.run --nproc 8 t.py",
         "python3.11 -m torch.distributed.run --nproc 8 t.py"),
        ("/opt/venv/bin/python3 /opt/venv/bin/torchrun --nproc-per-node 8 /home/ana/llm/train.py",
         "torchrun --nproc-per-node 8 …/train.py"),
        ("mpirun -np 8 /opt/conda/bin/python train.py --cfg /etc/run.yaml",
         "mpirun -np 8 python train.py --cfg /etc/run.yaml"),
        ("/usr/bin/env python3 /srv/jobs/eval.py --split test",
         "env python3 …/eval.py --split test"),
        # an unknown program keeps its path: it may be the point
        ("/opt/tritonserver/bin/tritonserver --model-repository=/models",
         "/opt/tritonserver/bin/tritonserver --model-repository=/models"),
        ("python -c import torch; torch.cuda.init()", "python -c import torch; torch.cuda.init()"),
        ("llm/train.py --x", "llm/train.py --x"),
    ],
)  # fmt: skip
def test_a_command_shows_what_was_run_not_where_the_interpreter_lives(
    command: str, shown: str
) -> None:
    assert compact(command) == shown


def test_the_script_and_its_first_arguments_show_at_80_and_160_columns() -> None:
    proc = _proc(4242, command=VENV_COMMAND)
    for width, gpus in ((78, False), (78, True), (158, True)):
        panel = processes([proc], [], 0, ProcessChoices(all_gpus=gpus), NOW, width, 6, T)
        row = plain_lines(panel, width)[1]
        assert "train.py --model llama" in row, (width, row)
        assert "/usr/local/lib" not in row


def test_secrets_are_masked_in_the_table_unless_kept() -> None:
    proc = _proc(7, command="python train.py --hf-token hf_abcdef --lr 3e-4")
    masked = plain_lines(processes([proc], [], 0, ProcessChoices(), NOW, 150, 6, T, True), 150)
    assert "hf_abcdef" not in "".join(masked) and "--hf-token ***" in "".join(masked)
    kept = plain_lines(processes([proc], [], 0, ProcessChoices(), NOW, 150, 6, T, False), 150)
    assert "hf_abcdef" in "".join(kept)


def test_scrolled_sideways_the_command_shows_its_tail() -> None:
    proc = _proc(7, command="python train.py " + " ".join(f"--flag{i} {i}" for i in range(30)))
    assert shown_command(proc, True, 0).startswith("python train.py")
    scrolled = shown_command(proc, True, 40)
    assert scrolled.startswith("…") and scrolled.endswith("--flag29 29")


# -- the table -------------------------------------------------------------------------------
def test_a_wide_table_shows_every_column() -> None:
    header = plain_lines(processes([_proc(1)], [], 0, ProcessChoices(), NOW, 160, 6, T), 160)[0]
    for name in ("PID", "USER", "GPU MEM", "SM%", "CPU%", "RSS", "TIME", "WORKERS", "THR"):
        assert name in header
    everyone = ProcessChoices(all_gpus=True)
    header = plain_lines(processes([_proc(1)], [], 0, everyone, NOW, 160, 6, T), 160)[0]
    assert " GPU " in header


def test_processes_that_do_not_fit_are_counted() -> None:
    panel = processes([_proc(p) for p in range(10)], [], 0, ProcessChoices("pid"), NOW, 120, 5, T)
    lines = plain_lines(panel, 120)
    assert len(lines) == 5 and lines[-1].startswith("+7 processes")


def test_elapsed_reads_like_ps() -> None:
    assert elapsed(NOW - 38, NOW) == "00:38"
    assert elapsed(NOW - 9312, NOW) == "2:35:12"
    assert elapsed(NOW - 3 * 86400 - 60, NOW) == "3-00:01:00"
    assert elapsed(None, NOW) == "n/a"


def test_gpu_lists_fold_runs() -> None:
    assert [gpu_list(g) for g in ((0,), (0, 3), (0, 1), (0, 1, 2, 3, 6), range(8))] == [
        "0",
        "0,3",
        "0,1",
        "0-3,6",
        "0-7",
    ]


def test_the_other_gpus_processes_only_when_asked() -> None:
    procs = [_proc(10, 0), _proc(20, 1), _proc(30, 1)]
    assert sorted(pids_in_order(listing(procs, ProcessChoices(), 1))) == [20, 30]
    assert sorted(pids_in_order(listing(procs, ProcessChoices()))) == [10, 20, 30]


# -- sorting ---------------------------------------------------------------------------------
def _varied() -> list[ProcessSample]:
    rows = [
        (11, 3, "kim", 5, 10.0, 300.0, 9, 100, 2, 12, "zeta.py"),
        (22, 0, "ana", 9, 90.0, 50.0, 3, 900, 0, 64, "alpha.py"),
        (33, 1, "lee", 1, 50.0, 100.0, 5, 400, 8, 30, "mid.py"),
    ]
    return [
        _proc(
            pid,
            gpu,
            user=user,
            gpu_memory=mem << 30,
            sm_util=sm,
            cpu_percent=cpu,
            rss=rss << 30,
            started=NOW - age,
            children=kids,
            threads=thr,
            command=f"python {script}",
            ppid=None,
        )
        for pid, gpu, user, mem, sm, cpu, rss, age, kids, thr, script in rows
    ] + [_proc(44, 2, user=None, gpu_memory=None, sm_util=None, cpu_percent=None, rss=None,
               started=None, children=None, threads=None, command=None, ppid=None)]  # fmt: skip


EXPECTED = {  # the column's own order; the unknown process (44) last either way
    "pid": [11, 22, 33],
    "gpu": [22, 33, 44, 11],  # 44 is on GPU 2: a GPU is always known
    "user": [22, 11, 33],
    "gpu_memory": [22, 11, 33],
    "sm_util": [22, 33, 11],
    "cpu_percent": [11, 33, 22],
    "rss": [11, 33, 22],
    "started": [22, 33, 11],  # the longest-running first
    "children": [33, 11, 22],
    "threads": [22, 33, 11],
    "command": [22, 33, 11],
}


@pytest.mark.parametrize("key", list(SORTS))
def test_every_column_sorts_both_ways_with_unknowns_last(key: str) -> None:
    procs = _varied()
    expected = EXPECTED[key]
    one_way = pids_in_order(listing(procs, ProcessChoices(key)))
    other_way = pids_in_order(listing(procs, ProcessChoices(key).sort_by(key)))
    if key == "pid":
        assert one_way == [11, 22, 33, 44] and other_way == [44, 33, 22, 11]
        return
    if key == "gpu":
        assert one_way == expected and other_way == expected[::-1]
        return
    assert one_way == [*expected, 44]
    assert other_way == [*expected[::-1], 44]


def test_the_header_marks_the_sorted_column_and_its_direction() -> None:
    choices = ProcessChoices("cpu_percent")
    header = plain_lines(processes(_varied(), [], 0, choices, NOW, 160, 8, T), 160)[0]
    assert "CPU%↓" in header
    flipped = choices.sort_by("cpu_percent")
    header = plain_lines(processes(_varied(), [], 0, flipped, NOW, 160, 8, T), 160)[0]
    assert "CPU%↑" in header
    assert ProcessChoices("pid").sort_by("rss") == ProcessChoices("rss")


def test_every_column_has_its_own_key() -> None:
    keys = [column.key for column in SORTS.values()]
    assert len(set(keys)) == len(keys) and all(k.isupper() for k in keys)
    assert not {"T", "I", "K", "N"} & set(keys)  # the signals and "previous finding"


# -- filters ---------------------------------------------------------------------------------
def test_filters_by_user_and_by_text() -> None:
    procs = _varied()
    assert users(procs) == ["ana", "kim", "lee"]
    assert pids_in_order(listing(procs, ProcessChoices(user="kim"))) == [11]
    assert pids_in_order(listing(procs, ProcessChoices(text="ALPHA"))) == [22]
    assert pids_in_order(listing(procs, ProcessChoices(text="33"))) == [33]
    assert ProcessChoices(user="kim", text="x").cleared() == ProcessChoices()
    names = ProcessChoices()
    for expected in ("ana", "kim", "lee", None):
        names = names.next_user(users(procs))
        assert names.user == expected


def test_every_gpu_page_merges_gpus_sorts_filters_and_folds_workers() -> None:
    procs = [
        _proc(10, 0, gpu_memory=4 << 30, ppid=None),
        _proc(10, 1, gpu_memory=4 << 30, ppid=None),
        _proc(20, 2, gpu_memory=20 << 30, user="alice", children=0, ppid=None),
        _proc(30, 3, gpu_memory=1 << 30, user="bob", workers_cpu_percent=340.0, ppid=None),
    ]
    first = entries(procs)[0]
    assert (first.process.pid, first.gpus, first.process.gpu_memory) == (10, (0, 1), 8 << 30)
    panel = all_processes(procs, ProcessChoices(), NOW, 150, 30, T)
    lines = plain_lines(panel, 150)
    assert [r.key.pid for r in panel.rows if isinstance(r.key, PidKey)] == [20, 10, 30]
    assert any(" 0,1 " in line for line in lines)
    assert any(" 8 workers (data loaders), CPU 340 % together" in line for line in lines)
    only_bob = all_processes(procs, ProcessChoices(user="bob"), NOW, 150, 30, T)
    assert [r.key.pid for r in only_bob.rows if isinstance(r.key, PidKey)] == [30]
    assert only_bob.title == "All GPU processes (1 of 3)"


# -- jobs ------------------------------------------------------------------------------------
def _job() -> list[ProcessSample]:
    launcher = "/opt/venv/bin/python3 /opt/venv/bin/torchrun --nproc-per-node 4 train.py"
    ranks = [
        _proc(100 + g, g, ppid=99, parent_command=launcher, gpu_memory=(10 + g) << 30)
        for g in range(4)
    ]
    alone = _proc(500, 5, ppid=3000, parent_command="-bash", gpu_memory=12 << 30, user="ana")
    return [*ranks, alone]


def test_a_jobs_ranks_are_grouped_under_their_launcher() -> None:
    lines = listing(_job(), ProcessChoices())
    assert isinstance(lines[0], Group) and lines[0].ppid == 99
    assert [e.process.pid for e in lines[0].members] == [103, 102, 101, 100]
    assert [type(line) for line in lines] == [Group, Entry, Entry, Entry, Entry, Entry]
    # the lone run sits where its memory puts it among the ranks' group: after it here
    assert pids_in_order(lines) == [103, 102, 101, 100, 500]
    page = plain_lines(all_processes(_job(), ProcessChoices(), NOW, 160, 30, T), 160)
    assert any("▾ torchrun --nproc-per-node 4 train.py" in line for line in page)
    assert any("4 ranks on GPUs 0-3" in line for line in page)
    assert any("└ python train.py" in line for line in page)


def test_a_group_sorts_where_its_first_rank_does() -> None:
    small = ProcessChoices("gpu_memory", reverse=True)  # smallest first
    assert pids_in_order(listing(_job(), small)) == [100, 101, 102, 103, 500]
    by_user = pids_in_order(listing(_job(), ProcessChoices("user")))
    assert by_user[0] == 500  # ana before mlteam


# -- selection -------------------------------------------------------------------------------
def test_selection_moves_in_the_order_shown_and_stays_in_view() -> None:
    procs = [_proc(p, ppid=None, gpu_memory=(100 - p) << 30) for p in range(40)]
    order = pids_in_order(listing(procs, ProcessChoices()))
    choices = ProcessChoices().select(order, 1)
    assert choices.pid == order[0]
    choices = choices.select(order, 25)
    assert choices.pid == order[25]
    assert choices.select(order, 100).pid == order[-1]
    panel = processes(procs, [], 0, choices, NOW, 120, 12, T)
    shown = [r.key.pid for r in panel.rows if isinstance(r.key, PidKey)]
    assert order[25] in shown
    lines = plain_lines(panel, 120)
    assert lines[1].startswith("↑ +") and lines[-2].startswith("+")
    marked = [line for line in lines if line.startswith("▶")]
    assert len(marked) == 1 and f" {order[25]} " in marked[0]
    assert lines[-1].startswith("▸ python train.py --model llama-3-8b")  # its whole command


def test_a_selected_process_that_left_hands_the_selection_back() -> None:
    order = [5, 6, 7]
    assert ProcessChoices(pid=42).select(order, 1).pid == 5
    assert ProcessChoices(pid=42).select(order, -1).pid == 7
    assert ProcessChoices(pid=6).select([], 1).pid is None


@pytest.mark.parametrize("key", list(SORTS))
def test_the_column_sorted_by_is_never_the_one_left_out(key: str) -> None:
    panel = processes(_varied(), [], 0, ProcessChoices(key, all_gpus=True), NOW, 78, 8, T)
    header = plain_lines(panel, 78)[0]
    assert SORTS[key].header in header, header


def test_the_text_filter_is_bounded_however_it_arrives() -> None:
    pasted = "x" * (FILTER_MAX_CHARS * 50)
    assert ProcessChoices(text=pasted).text == "x" * FILTER_MAX_CHARS
    assert replace(ProcessChoices(), text=pasted).text == "x" * FILTER_MAX_CHARS


def test_a_cluster_gpus_pod_shows_where_its_processes_would() -> None:
    """An exporter's page carries no processes, but names the Kubernetes pod on each GPU
    (docs/cluster.md: 'a GPU shows the job's pod'); nothing showed it."""
    from gputui.core.model import DeviceInfo
    from gputui.view.processes import workload_of

    device = DeviceInfo(
        index=4, name="H100", node="node-b", pod="train-0", namespace="ml", container="trainer"
    )
    workload = workload_of(device)
    assert workload == "pod ml/train-0 (container trainer)"
    assert workload_of(DeviceInfo(index=0, name="H100")) is None
    panel = processes([], [], 4, ProcessChoices(), NOW, 100, 6, T, workload=workload)
    assert any("pod ml/train-0" in line for line in plain_lines(panel, 100))
