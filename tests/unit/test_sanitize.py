"""The one sanitiser and the secret mask, on the hostile corpus."""

from __future__ import annotations

import dataclasses
import shlex
import subprocess
import sys
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gputui.core.model import (
    DeviceInfo,
    Finding,
    HostSample,
    MigInstance,
    Note,
    ProcessSample,
    SourceInfo,
)
from gputui.core.names import NoteKind, RuleId, Severity, SourceKind
from gputui.core.sanitize import MAX_TEXT, clean, is_secret_name, mask_secrets
from gputui.formats.values import parse_frame
from gputui.sources.host import GpuProcess, HostReader
from tests.hostile import CORPUS, FORBIDDEN, SECRET_COMMAND, SECRET_VALUES


@pytest.mark.parametrize("name", list(CORPUS))
def test_clean_leaves_nothing_a_terminal_acts_on(name: str) -> None:
    out = clean(CORPUS[name])
    assert not any(c in out for c in FORBIDDEN)
    assert all(c.isprintable() or c == " " for c in out)
    assert clean(out) == out  # idempotent: cleaning twice changes nothing
    assert len(out) <= MAX_TEXT * 11  # bounded (each character grows at most to <U+XXXX>)
    out.encode("utf-8")  # every file can hold it


def test_clean_makes_escapes_visible_rather_than_hiding_them() -> None:
    assert clean("\x1b[31mred") == "␛[31mred"
    assert clean("a\nb\tc") == "a␊b␉c"
    assert clean("x\u202ey") == "x<U+202E>y"
    assert clean("plain text, ünïcode 名前") == "plain text, ünïcode 名前"
    assert clean("x" * 50, limit=10) == "x" * 9 + "…"


def test_every_model_string_is_clean_wherever_it_comes_from() -> None:
    hostile = CORPUS["OSC 52 clipboard write"] + CORPUS["BiDi override"]
    objects = [
        DeviceInfo(index=0, name=hostile, uuid=hostile, node=hostile),
        ProcessSample(
            pid=1,
            gpu_index=0,
            kind=hostile,
            name=hostile,
            command=hostile,
            user=hostile,
            env=(hostile,),
            cuda_runtime=hostile,
            cuda_libraries=(hostile, "libcudart.so.12"),
        ),
        MigInstance(gpu_instance_id=1, profile=hostile, uuid=hostile),
        HostSample(hostname=hostile),
        Note(NoteKind.GENERAL, hostile),
        SourceInfo(hostile, SourceKind.REMOTE, hostile),
        Finding(RuleId.GPU_ERRORS, Severity.INFO, 0, hostile, (hostile,), (hostile,), 0, 0),
    ]
    for obj in objects:
        for field in dataclasses.fields(obj):  # type: ignore[arg-type]
            value = getattr(obj, field.name)
            texts = value if isinstance(value, tuple) else (value,)
            for text in texts:
                if isinstance(text, str):
                    assert not any(c in text for c in FORBIDDEN), (type(obj), field.name)
                    assert clean(text) == text, (type(obj), field.name)


def test_secrets_are_masked_and_their_names_kept() -> None:
    masked = mask_secrets(SECRET_COMMAND)
    assert not any(secret in masked for secret in SECRET_VALUES)
    assert "--password=***" in masked and "--api-key ***" in masked
    assert "https://bob:***@data.example.org/x" in masked and "HF_TOKEN=***" in masked


@pytest.mark.parametrize(
    "text",
    [
        "python train.py --max-tokens 512 --tokenizer gpt2 --batch-size 16",
        "torchrun --nproc-per-node 8 train.py --lr 3e-4 max_tokens=5",
        "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True python x.py --author me",
    ],
)
def test_ordinary_arguments_are_left_alone(text: str) -> None:
    assert mask_secrets(text) == text


def test_secret_names_are_whole_words() -> None:
    assert is_secret_name("HF_TOKEN") and is_secret_name("--db-password")
    assert is_secret_name("WANDB_API_KEY") and is_secret_name("AWS_SECRET_ACCESS_KEY")
    assert not is_secret_name("max_tokens") and not is_secret_name("--tokenizer")
    assert not is_secret_name("--keypoints") and not is_secret_name("--author")


def test_a_recordings_gpu_text_is_clean_though_gpu_samples_clean_nothing_themselves() -> None:
    hostile = CORPUS["OSC 52 clipboard write"]
    frame = parse_frame(
        {
            "time": 1.0,
            "gpus": [{"index": 0, "fabric_state": hostile, "unsupported": [hostile]}],
        }
    )
    gpu = frame.gpus[0]
    assert gpu.fabric_state == clean(hostile) and gpu.unsupported == (clean(hostile),)
    assert not any(c in gpu.fabric_state for c in FORBIDDEN)


def test_a_short_p_password_is_masked_and_a_port_is_not() -> None:
    assert mask_secrets("mysql -u root -p hunter2 db") == "mysql -u root -p *** db"
    assert mask_secrets("sshpass -p s3cret ssh node") == "sshpass -p *** ssh node"
    assert mask_secrets("server -p 8080 --workers 4") == "server -p 8080 --workers 4"
    assert mask_secrets("nvidia-smi -i 0 -pl 700") == "nvidia-smi -i 0 -pl 700"


@pytest.mark.parametrize(
    ("text", "masked"),
    [
        ("PGPASSWORD=hunter2 psql -h db", "PGPASSWORD=*** psql -h db"),  # one word
        ("GITHUB_PAT=ghp_x SENTRY_DSN=https://k@s/1 job", "GITHUB_PAT=*** SENTRY_DSN=*** job"),
        ('curl -H "Authorization: Bearer abc.def" u', 'curl -H "Authorization: Bearer ***" u'),
        (
            "wget --header='Authorization: Basic dXNlcg==' u",
            "wget --header='Authorization: Basic ***' u",
        ),
        ("mysql -u root -phunter2 db", "mysql -u root -p*** db"),
        ("/usr/bin/mysqldump -h db -ps3cret x", "/usr/bin/mysqldump -h db -p*** x"),
        ("app --passwd=-hunter2", "app --passwd=***"),  # a value may start with a dash
        ('app --db-password="hunter 2" --x 1', "app --db-password=*** --x 1"),  # quoted
    ],
)
def test_credentials_in_their_other_common_forms_are_masked(text: str, masked: str) -> None:
    assert mask_secrets(text) == masked


@pytest.mark.parametrize(
    "text",
    ["tar -pxf data.tar", "ssh -p2222 node", "mysql -p 3306", "python x.py --sort_key=name"],
)
def test_flags_ports_and_keys_that_are_no_credentials_stay(text: str) -> None:
    assert mask_secrets(text) == text


_TEXTS = st.one_of(
    st.text(max_size=40),
    st.text(alphabet=st.characters(max_codepoint=0xA0), max_size=40),
    st.sampled_from(
        [
            "x" * MAX_TEXT,
            "x" * (MAX_TEXT + 1),
            "é" * (MAX_TEXT + 1),
            "\x7f",
            "a\x9fb",
            "",
            *CORPUS.values(),
        ]
    ),
)


@given(one=_TEXTS, other=_TEXTS, listed=st.lists(_TEXTS, max_size=3))
@settings(max_examples=300, deadline=None)
def test_a_model_objects_texts_come_out_as_clean_makes_them(
    one: str, other: str, listed: list[str]
) -> None:
    """The cheap check that most text needs no cleaning (printable ASCII) decides as
    ``clean`` does: every text field holds exactly ``clean`` of what it was given."""
    proc = ProcessSample(pid=1, gpu_index=0, name=one, command=other, user=one, env=tuple(listed))
    assert (proc.name, proc.command, proc.user) == (clean(one), clean(other), clean(one))
    assert proc.env == tuple(clean(t) for t in listed)
    assert HostSample(hostname=other).hostname == clean(other)
    finding = Finding(RuleId.GPU_ERRORS, Severity.INFO, 0, one, tuple(listed), (other,), 0, 0)
    assert (finding.title, finding.evidence) == (clean(one), tuple(clean(t) for t in listed))


def test_texts_seen_plain_before_do_not_let_other_texts_through() -> None:
    """Records built again and again with the same texts are told plain from the texts
    seen before; a record whose texts differ in any way (a control character, one more
    entry) is cleaned; a value that is not text where text belongs is left as it was."""
    command = "python train.py --lr 0.1"
    for _ in range(3):
        assert ProcessSample(pid=1, gpu_index=0, command=command, env=("A=1",)).command == command
    assert ProcessSample(pid=1, gpu_index=0, command=command + "\x1b[2J").command == (
        command + "␛[2J"
    )
    odd = ProcessSample(pid=1, gpu_index=0, command=command, env=("A=1", "B=\x07"))
    assert odd.env == ("A=1", "B=␇")
    listed = ProcessSample(pid=1, gpu_index=0, command=["not", "text"])  # type: ignore[arg-type]
    assert listed.command == ["not", "text"]  # type: ignore[comparison-overlap]


def test_the_texts_remembered_as_plain_stay_few_and_short() -> None:
    """A host whose processes come and go with long command lines does not grow the
    memory of plain texts: so many records, so many characters each, at most."""
    from gputui.core import model_checks

    for k in range(3 * model_checks._PLAIN_MOST):
        ProcessSample(pid=k, gpu_index=0, command=f"python run.py --seed {k}")
        ProcessSample(pid=k, gpu_index=0, command="x" * 5000 + str(k))
    assert len(model_checks._PLAIN) <= model_checks._PLAIN_MOST
    longest = max(
        sum(len(t) for v in texts for t in (v if isinstance(v, tuple) else (v,)) if t)
        for texts in model_checks._PLAIN
    )
    assert longest <= model_checks._PLAIN_CHARS


def test_an_argument_of_several_words_is_masked_whole_as_the_host_reads_it() -> None:
    """Issue 52: the host joined argv with spaces, so only the first word of
    ``--password "correct horse battery"`` was masked. It now shows such an argument
    quoted, and the mask takes the whole of it; each assignment of a connection string
    is masked to its ``;``, a space in it or not."""
    argv = ["-c", "import time; time.sleep(30)", "--password", "correct horse battery"]
    argv += ["--conn", "Server=db;Password=two words;Encrypt=yes", "--x", "it's"]
    child = subprocess.Popen([sys.executable, *argv])
    try:
        time.sleep(0.2)
        host = HostReader(device_check=lambda pid: True)
        (sample,), _notes = host.join_processes([GpuProcess(child.pid, 0, 1 << 30, "compute")])
        assert sample.command is not None
        assert shlex.split(sample.command)[1:] == argv  # each argument reads back whole
        masked = mask_secrets(sample.command)
        assert not any(word in masked for word in ("correct", "horse", "battery", "two words"))
        assert "--password *** --conn 'Server=db;Password=***;Encrypt=yes'" in masked
    finally:
        child.kill()
        child.wait()
