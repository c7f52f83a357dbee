"""Every key of the main screen, in one place: the main screen binds them (the app the few
that work over every page too), and the footer, the help screen, the command palette and
the README's key table are generated from them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, NamedTuple

from textual.binding import Binding, BindingType
from textual.keys import key_to_character

from gputui.core.config import PROCESS_UTIL_PERIOD_S
from gputui.view.process_table import SORTS

#: actions that exist only while a recording plays (the main screen hides them otherwise)
REPLAY_ACTIONS: Final = ("step", "seek", "speed")
#: actions that exist only live (a recording keeps its own interval)
LIVE_ACTIONS: Final = ("interval",)

#: the actions the footer shows whatever its width (the keys before them give way)
FOOTER_KEEPS: Final = ("snapshot",)

#: the process table's keys: the main screen's and the every-process page's alike
PROCESS_BINDINGS: Final[list[Binding]] = [
    Binding("down,j", "process(1)", "next process", key_display="↓", show=False),
    Binding("up,k", "process(-1)", "previous process", key_display="↑", show=False),
    Binding("pagedown", "skip(10)", "10 processes down", show=False),
    Binding("pageup", "skip(-10)", "10 processes up", show=False),
    Binding("i,e", "inspect", "inspect the process", show=False),
    Binding("space", "tag", "tag the process", key_display="Space", show=False),
    Binding("T", "signal(15)", "SIGTERM", show=False),
    Binding("I", "signal(2)", "SIGINT", show=False),
    Binding("K", "signal(9)", "SIGKILL", show=False),
    Binding("t", "sort", "sort processes", show=False),
    *(
        Binding(column.key, f"sort_by('{name}')", f"sort by {column.header}", show=False)
        for name, column in SORTS.items()
    ),
    Binding("u", "user", "one user's processes", show=False),
    Binding("slash", "filter", "filter processes", key_display="/", show=False),
]

BINDINGS: Final[list[Binding]] = [
    # First in the footer, so a narrow terminal never pushes them out of it.
    Binding("question_mark", "help", "help", key_display="?"),
    Binding("q,ctrl+c", "quit", "quit"),
    # priority: nothing here takes focus, so Tab moves between GPUs, not widgets
    # Tab and Shift+Tab also reach these through the main screen's own bindings (it has
    # nothing to focus); over a page, ← → belong to the page.
    Binding("left,h,shift+tab", "gpu(-1)", "prev GPU", key_display="←"),
    Binding("right,l,tab", "gpu(1)", "next GPU", key_display="→"),
    # Offered (and in the footer) while the GPU list hides GPUs and the last move was not
    # in the process table; else PgUp PgDn page the processes (the screen's check_action).
    Binding("pagedown", "gpu_page(1)", "more GPUs", key_display="PgDn"),
    Binding("pageup", "gpu_page(-1)", "GPUs up", key_display="PgUp", show=False),
    Binding("home", "gpu_edge(-1)", "first GPU", show=False),
    Binding("end", "gpu_edge(1)", "last GPU", show=False),
    Binding("o", "overview", "overview"),
    Binding("n", "finding(1)", "next finding"),
    Binding("N", "finding(-1)", "prev finding", show=False),
    Binding("g", "goto_finding", "go to its GPU"),
    Binding("enter", "open_finding", "finding details", show=False),
    Binding("a", "all_processes", "all processes", show=False),
    Binding("p", "pause", "pause"),
    Binding("plus,equals_sign", "interval(1)", "refresh slower", key_display="+"),
    Binding("minus", "interval(-1)", "refresh faster", key_display="-"),
    Binding("w", "window", "history window"),
    *PROCESS_BINDINGS,
    Binding("v", "all_gpus", "processes: this GPU / all", show=False),
    Binding("escape", "clear", "clear selection", key_display="Esc", show=False),
    Binding("s", "snapshot", "snapshot"),
    Binding("b", "theme", "light / dark theme", show=False),
    Binding("r", "rules", "advisor rules", show=False),
    Binding("y", "topology", "topology: NUMA, PCIe, NVLink", show=False),
    Binding("c", "cluster", "cluster: every node", show=False),
    Binding("ctrl+p", "command_palette", "palette", show=False),
    # In raw mode Ctrl+Z is a key, not SIGTSTP: the app suspends itself (the shell's fg
    # resumes). priority: over every page too (a page is modal: the app's keys stop there)
    Binding("ctrl+z", "suspend_process", "suspend (fg resumes)", show=False, priority=True),
    # replay only
    Binding("full_stop", "step", "replay: step", key_display="."),
    Binding("left_square_bracket", "seek(-60)", "replay: -1 min", key_display="["),
    Binding("right_square_bracket", "seek(60)", "replay: +1 min", key_display="]"),
    Binding("left_curly_bracket", "seek(-600)", "replay: -10 min", key_display="{", show=False),
    Binding("right_curly_bracket", "seek(600)", "replay: +10 min", key_display="}", show=False),
    Binding("less_than_sign", "speed(0.5)", "replay: slower", key_display="<"),
    Binding("greater_than_sign", "speed(2)", "replay: faster", key_display=">"),
    # GPUs are numbered from 0, as NVML and nvidia-smi number them: key 3 is GPU 3
    *(Binding(str(d), f"jump({d})", show=False) for d in range(10)),
]


#: the keys that work over every page too (priority bindings): the app's
APP_BINDINGS: Final[list[Binding]] = [b for b in BINDINGS if b.priority]
#: every other key: the main screen's
SCREEN_BINDINGS: Final[list[Binding]] = [b for b in BINDINGS if not b.priority]


def action_name(binding: Binding) -> str:
    """'seek(-60)' -> 'seek'."""
    return _name(binding.action)


def _name(action: str) -> str:
    return action.split("(", 1)[0]


# -- the key table: help screen, README ------------------------------------------------

#: how the help screen and the README describe an action: by its name (one row for all its
#: bindings: 'gpu' is both ← and →) or by the whole action string (a row of its own).
#: Backticks mark code for the README; the help screen drops them. An action not named
#: here is described by its bindings' own descriptions.
DESCRIPTIONS: Final[dict[str, str]] = {
    "help": "this help: every key, and what the screen's symbols and columns mean",
    "quit": "quit",
    "gpu": "previous / next GPU",
    "jump": "jump to GPU 0 … 9; two digits typed quickly reach GPU 10 and up (1 2: GPU 12)",
    "gpu_page": "a page of GPUs down / up, while the GPU list hides some; right after ↓ ↑ in"
    " the process table, ten processes (as below)",
    "gpu_edge": "first / last GPU",
    "overview": "overview: every GPU as a card (8-GPU nodes) / back to detail",
    "finding": "next / previous finding; its evidence and remedies show below the list",
    "goto_finding": "go to the GPU of the selected finding",
    "open_finding": "the selected finding in full; right after ↓ ↑ in the process table,"
    " the selected process looked into (as i)",
    "all_processes": (
        "every GPU process on the machine, full screen: the same keys as the table, ← → "
        "scroll the command sideways, Enter looks into the selected process, workers folded "
        "under their process"
    ),
    "pause": "pause / resume",
    "interval(1)": "refresh less often (live only)",
    "interval(-1)": "refresh more often (live only)",
    "window": "history window: 1, 5, 15, 60 min",
    "sort": "sort processes by the next column",
    "process": "select a process in the table; its command line shows under it, as much as"
    " the width holds (i: all of it)",
    "skip": "ten processes down / up (while the GPU list hides GPUs: right after ↓ ↑)",
    "sort_by": "sort processes by a column: "
    + ", ".join(f"{c.key} {c.header}" for c in SORTS.values())
    + "; the same key again turns the order round",
    "inspect": "the selected process looked into: its GPUs, tree, devices, placement,"
    " history and environment (secrets masked)",
    "tag": "tag the selected process (again: untag it); T I K then signal every tagged one,"
    " after one confirmation that names each; Esc untags all",
    "signal": "send the selected process (or every tagged one) SIGTERM (T), SIGINT (I) or"
    " SIGKILL (K), after a confirmation that names each; only your own processes (root:"
    " any); none with `--readonly`",
    "user": "show one user's processes, then the next user's, then every user's",
    "filter": "filter processes by part of a command, user or PID (Enter keeps, Esc undoes)",
    "all_gpus": "the process table: the selected GPU's processes / every GPU's, a job's"
    " ranks under their launcher",
    "clear": "clear the process selection, filters and tags",
    "snapshot": "snapshot: JSON + Markdown + SVG of the screen, and the HTML report of the"
    " history held, in the current directory or `--snapshot-dir`",
    "theme": "the light theme, or back to the dark one (`--theme light` starts in it); every"
    " panel's colours follow",
    "rules": "the advisor's rules",
    "topology": "topology: the `nvidia-smi topo -m` matrix with its abbreviations explained,"
    " the PCIe path between GPUs, every NVLink (up/down, traffic, errors, fabric state),"
    " the NUMA node of each GPU and where each GPU process and its loader workers may run"
    " and keep their memory (`--demo numa`, `--demo nvlink-down`)",
    "cluster": "cluster: every node as a row, worst first; Enter opens its GPUs (several"
    " nodes: `--source`, `--prometheus`; on one node it says so)",
    "command_palette": "the command palette: every action by name, searched as you type",
    "suspend_process": "suspend gputui to the shell; fg brings it back",
    "step": "replay: one frame forward (pauses first)",
    "seek": "replay: back / forward 1 min ([ ]) or 10 min ({ })",
    "speed": "replay: half / double speed",
}

_KEY_NAMES: Final[dict[str, str]] = {
    "left": "←",
    "right": "→",
    "up": "↑",
    "down": "↓",
    "plus": "+",
    "minus": "-",
    "escape": "Esc",
    "pageup": "PgUp",
    "pagedown": "PgDn",
    "slash": "/",
}


class HelpRow(NamedTuple):
    """One row of the key table: its keys as read, what they do, the actions behind them."""

    keys: str
    description: str
    actions: tuple[str, ...]


def key_label(key: str) -> str:
    """A key as a person reads it: 'question_mark' -> '?', 'shift+tab' -> 'Shift+Tab',
    'ctrl+c' -> 'Ctrl+C', 'left' -> '←', 'N' -> 'N'."""
    *modifiers, name = key.split("+")
    if name in _KEY_NAMES:
        label = _KEY_NAMES[name]
    else:
        # Textual names symbols as Unicode does: 'full_stop', 'less_than_sign'
        label = key_to_character(name) or ""
        if len(label) != 1 or not label.isprintable() or label.isspace():
            label = name.replace("_", " ").title()  # 'enter' -> 'Enter', 'space' -> 'Space'
        elif modifiers:
            label = label.upper()  # 'Ctrl+C', as keyboards print it
    return "+".join([*(m.title() for m in modifiers), label])


def binding_keys(binding: Binding) -> list[str]:
    """Every key of a binding, readable: 'q,ctrl+c' -> ['q', 'Ctrl+C']."""
    return [key_label(k.strip()) for k in binding.key.split(",") if k.strip()]


def in_mode(action: str, replay: bool) -> bool:
    """Whether an action ('seek' or 'seek(-60)') works in this mode (live, or a recording
    playing): the main screen offers its keys by this, and help lists them by it."""
    return _name(action) not in (LIVE_ACTIONS if replay else REPLAY_ACTIONS)


def _grouped_keys(group: list[Binding]) -> str | None:
    """The keys of one action's bindings in one cell, or None when they do not pair up.

    Bindings with the same number of keys pair up by position: '← → / h l / Shift+Tab Tab';
    single keys go in pairs ('[ ] / { }'), a run of digits folds into '0 … 9'."""
    keys = [binding_keys(b) for b in group]
    if len(group) == 1:
        return " / ".join(keys[0])
    if _name(group[0].action) in _SIDE_BY_SIDE:
        return " ".join(k for ks in keys for k in ks)
    if any(len(k) != len(keys[0]) for k in keys):
        return None
    if len(keys[0]) == 1:
        single = [k[0] for k in keys]
        if len(single) > 2 and all(k.isdigit() for k in single):
            first = int(single[0])
            if [int(k) for k in single] == list(range(first, first + len(single))):
                return f"{single[0]} … {single[-1]}"
        return " / ".join(" ".join(single[i : i + 2]) for i in range(0, len(single), 2))
    return " / ".join(" ".join(column) for column in zip(*keys, strict=True))


#: actions whose keys are listed side by side in one cell ('P G U M …', 'T I K')
_SIDE_BY_SIDE: Final = ("sort_by", "signal")


def _description(key: str, group: list[Binding]) -> str:
    if key in DESCRIPTIONS:
        return DESCRIPTIONS[key]
    described = [b.description for b in group if b.description]
    return " / ".join(dict.fromkeys(described)) or key


def help_rows(bindings: Sequence[BindingType], replay: bool) -> list[HelpRow]:
    """Every action that works in this mode, once, with all its keys, in binding order.

    The bindings of one action name share a row ('gpu(-1)' and 'gpu(1)'); where their keys
    do not pair up ('+ / =' against '-'), each binding keeps a row of its own."""
    groups: dict[str, list[Binding]] = {}
    for binding in bindings:
        if isinstance(binding, Binding) and in_mode(binding.action, replay):
            groups.setdefault(action_name(binding), []).append(binding)
    rows: list[HelpRow] = []
    for name, group in groups.items():
        keys = _grouped_keys(group)
        if keys is not None:
            actions = tuple(dict.fromkeys(b.action for b in group))
            key = name if len(actions) > 1 or name in DESCRIPTIONS else actions[0]
            rows.append(HelpRow(keys, _description(key, group), actions))
            continue
        for binding in group:
            description = _description(binding.action, [binding])
            if binding.action not in DESCRIPTIONS and name in DESCRIPTIONS:
                description = DESCRIPTIONS[name]
            rows.append(HelpRow(" / ".join(binding_keys(binding)), description, (binding.action,)))
    return rows


def key_rows(bindings: Sequence[BindingType], replay: bool) -> list[tuple[str, str]]:
    """(keys, description) for the help screen: plain text, no markup of any kind."""
    return [(r.keys, r.description.replace("`", "")) for r in help_rows(bindings, replay)]


#: what the screen's symbols and column names mean, section by section: (term, meaning)
LEGEND: Final[tuple[tuple[str, tuple[tuple[str, str], ...]], ...]] = (
    (
        "Symbols",
        (
            ("✖ ▲ ●", "a critical, warning, info finding of the advisor (also on its GPU's row)"),
            ("▶", "the selected GPU, finding or node"),
            ("+N GPUs ↓", "rows hidden for lack of room: a taller terminal shows them"),
            ("+N findings, 1 critical", "hidden rows, and how many of them are critical"),
            ("<1 min, 12 min", "ages: how long a finding has held (coarse, once a minute)"),
            (
                "sparklines",
                "history on a fixed time scale: one column = one time bucket (w: the window)",
            ),
        ),
    ),
    (
        "GPU list",
        (
            ("#", "the GPU's index, as NVML and nvidia-smi number it (keys 0 … 9, 1 2: GPU 12)"),
            ("NAME", "the GPU's model"),
            ("UTIL", "GPU utilisation: the share of time a kernel ran"),
            ("VRAM", "GPU memory in use"),
            ("TEMP", "GPU temperature"),
            ("POWER", "power draw"),
        ),
    ),
    (
        "GPU detail",
        (
            ("Util", "GPU utilisation: the share of time a kernel ran (not how much of the GPU)"),
            ("SM act", "the share of SMs busy (Hopper and newer); tensor: tensor cores busy"),
            ("mem ctrl", "the memory controller busy (where SM activity is not read)"),
            ("SM clk", "the SM clock against the board's maximum; mem: the memory clock"),
            ("Temp", "GPU temperature against the board's slowdown and shutdown limits"),
            ("mem °C", "the memory's (HBM) temperature against its own maximum"),
            ("margin", "degrees left before the GPU slows itself down (drivers R570+)"),
            ("fan", "fan speed, where the board has one"),
            ("Power", "draw against the enforced limit; default: the board's own limit"),
            ("P0 … P15", "the performance state: P0 is full speed"),
            ("VRAM", "GPU memory in use against the total"),
            (
                "PCIe",
                "the link now (generation, lanes) of the most it can run, its bandwidth, RX/TX"
                " against it; idle downshift: a link that slows when idle, as it should;"
                " card GenN: host-limited: the card could run faster than the slot allows",
            ),
            ("counted, sampled", "PCIe traffic from the driver's byte counters, or a 20 ms window"),
            ("replays", "PCIe replays: link errors corrected by resending (should stay 0)"),
            ("Events", "the clock-event (throttle) reasons active now, in plain words"),
            ("Xid", "a driver error of the last hour: its code, what it means, how long ago"),
            (
                "Held",
                "seconds the driver held clocks down for power, heat, board or reliability"
                " (its violation counters) in the last minutes",
            ),
            ("MIG", "a MIG instance: its profile, memory and SM activity"),
            ("ID", "the GPU's UUID, its PCI bus id, and its node"),
            (
                "util, temp, power, PCIe RX, PCIe TX",
                "the history: each reading as a sparkline on the window's time scale (w),"
                " newest at the right, ending in its value now; SM clk and VRAM likewise",
            ),
        ),
    ),
    (
        "Host line",
        (
            ("CPU", "host CPU busy, of all its cores; the data loaders run here"),
            ("MEM, SWAP", "host memory and swap in use"),
            ("load", "load average over 1, 5 and 15 min"),
            ("up", "time since the host booted; then the host's clock"),
        ),
    ),
    (
        "Processes",
        (
            (
                "▶",
                "the selected process (↑ ↓); its command line shows under the table, as much"
                " as the width holds (i: all of it)",
            ),
            ("•", "a tagged process (space): T I K signal every tagged one, after one question"),
            ("↓ ↑", "the column the table is sorted by, and which way (↓: largest first)"),
            ("▾ torchrun …", "a job: the processes one launcher started, its ranks under it"),
            ("PID", "process id"),
            ("GPU", "the GPUs it holds (every GPU's processes: v)"),
            ("USER", "its owner"),
            ("GPU MEM", "GPU memory it holds"),
            (
                "SM%",
                "its share of the GPU's SMs, where the driver reports it"
                f" (read every {PROCESS_UTIL_PERIOD_S:g} s)",
            ),
            (
                "CPU%",
                "host CPU, 100 = one core; highlighted when near one full core:"
                " a GIL-bound data loader",
            ),
            ("RSS", "host memory it holds (resident set)"),
            ("TIME", "since the process started, as ps prints it ([days-]h:mm:ss)"),
            (
                "WORKERS",
                "its child processes (data-loader workers) and their CPU together: 8 340%",
            ),
            ("THR", "its threads"),
            (
                "COMMAND",
                "its command line, the interpreter's directory left out (python3 train.py);"
                " credentials masked unless --keep-secrets",
            ),
        ),
    ),
    (
        "Started with",
        (
            ("--only 0,2-3", "only these GPUs: the others are not shown, judged or written"),
            ("--readonly", "no signal is ever sent from this screen (T I K refused, tags too)"),
            ("--theme light", "the light theme from the start (b switches while it runs)"),
            ("--snapshot-dir DIR", "where s writes its files"),
        ),
    ),
)


def legend_lines() -> list[str]:
    """The legend as plain lines: a section's title, then 'term  meaning' rows."""
    lines: list[str] = []
    for title, entries in LEGEND:
        lines.append(title)
        width = max(len(term) for term, _ in entries)
        lines += [f"  {term:<{width}}  {meaning}" for term, meaning in entries]
    return lines


def _markdown_cell(text: str) -> str:
    return text.replace("|", "\\|")


def _markdown_table(rows: Sequence[HelpRow]) -> list[str]:
    return [
        "| key | action |",
        "|---|---|",
        *(f"| {_markdown_cell(r.keys)} | {_markdown_cell(r.description)} |" for r in rows),
    ]


def markdown_key_table(bindings: Sequence[BindingType] = BINDINGS) -> str:
    """The README's key table: the live keys, then those a recording adds."""
    live = help_rows(bindings, replay=False)
    replay_only = [r for r in help_rows(bindings, replay=True) if r not in live]
    live_only = [r.keys for r in live if r not in help_rows(bindings, replay=True)]
    lines = _markdown_table(live)
    if replay_only:
        lines += [
            "",
            "While a recording plays (`gputui replay`) these work too"
            + (f" ({' and '.join(f'`{k}`' for k in live_only)} do not:" if live_only else "")
            + (" a recording keeps its own pace):" if live_only else ":"),
            "",
            *_markdown_table(replay_only),
        ]
    return "\n".join(lines) + "\n"
