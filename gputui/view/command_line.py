"""Command lines as a table shows them: what was run, not where the interpreter lives.

``/usr/local/lib/python3.11/venv/bin/python3 train.py --model llama`` reads as
``python3 train.py --model llama``; ``/opt/conda/bin/torchrun --nproc-per-node 8
/home/ana/llm/train.py`` as ``torchrun --nproc-per-node 8 …/train.py``. Only a known
interpreter or launcher loses its directory (an unknown program's path may be the point),
and the script an interpreter runs keeps its name. The full line stays in the selected
row's detail and on the process page.
"""

from __future__ import annotations

import re
from typing import Final

# Programs that run a script or another program: their own path says nothing about the job.
_INTERPRETERS: Final = frozenset(
    {
        "python",
        "pythonw",
        "pypy",
        "pypy3",
        "ipython",
        "ipython3",
        "jupyter",
        "torchrun",
        "accelerate",
        "deepspeed",
        "horovodrun",
        "colossalai",
        "lightning",
        "composer",
        "mpirun",
        "mpiexec",
        "srun",
        "numactl",
        "taskset",
        "nohup",
        "env",
        "bash",
        "sh",
        "dash",
        "zsh",
        "node",
        "java",
        "julia",
        "ruby",
        "perl",
        "Rscript",
        "R",
        "uv",
        "conda",
        "mamba",
        "micromamba",
        "nsys",
        "ncu",
        "vllm",
    }
)
# python3, python3.11, python3.11d, pypy3.10: a version after a known name
_VERSIONED: Final = re.compile(r"^(python|pypy|ipython)[0-9.]*[dmu]?$")


def is_interpreter(program: str) -> bool:
    name = program.rsplit("/", 1)[-1]
    return name in _INTERPRETERS or bool(_VERSIONED.match(name))


def compact(command: str) -> str:
    """The command with the directories of known interpreters and launchers dropped (a
    chain of them too: ``mpirun -np 8 /opt/venv/bin/python3 …``), and the directory of the
    script they run shortened to ``…/``; the script's arguments, and any other program's
    path, as they were."""
    words = command.split(" ")
    if not words or not is_interpreter(words[0]):
        return command
    out: list[str] = []
    for i, word in enumerate(words):
        if word.startswith("/") and is_interpreter(word):
            if i == 1 and _VERSIONED.match(out[0]):
                out.pop()  # "python3 /venv/bin/torchrun ...": the launcher is what was run
            out.append(word.rsplit("/", 1)[-1])
        elif word.endswith(".py") and not word.startswith("-"):
            return " ".join([*out, _script(word), *words[i + 1 :]])  # its arguments as given
        else:
            out.append(word)
            if word in ("-m", "-c"):  # a module or a program text follows: as it is
                return " ".join(out + words[i + 1 :])
    return " ".join(out)


def _script(word: str) -> str:
    """'/home/ana/llm/train.py' -> '…/train.py'; 'train.py' and 'llm/train.py' as they are
    (a relative path is short and says where it was run from)."""
    if word.startswith("/") and word.count("/") > 1:
        return "…/" + word.rsplit("/", 1)[-1]
    return word
