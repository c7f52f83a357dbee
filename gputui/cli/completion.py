"""Shell completion for bash, zsh and fish, written from the parser itself: every command,
every option, the scenarios of ``--demo`` and the choices of the options that have them,
file names where a file is asked for. ``gputui completion bash`` prints the script; no
extra package and nothing run at each start."""

from __future__ import annotations

import argparse
import shlex

from gputui.core.records import frozen

# options whose value is a path: the shells complete file names there
_PATH_METAVARS = {"FILE", "DIR", "PATH"}


@frozen
class Option:
    flags: tuple[str, ...]
    takes_value: bool
    choices: tuple[str, ...]
    path: bool
    help: str


@frozen
class Command:
    name: str
    help: str
    options: tuple[Option, ...]
    files: bool  # it takes a file name as an argument (replay)
    choices: tuple[str, ...]  # or one of these words (completion's shell)


def _options(parser: argparse.ArgumentParser) -> tuple[Option, ...]:
    out = []
    for action in parser._actions:
        if not action.option_strings or action.help == argparse.SUPPRESS:
            continue
        metavar = action.metavar if isinstance(action.metavar, str) else ""
        out.append(
            Option(
                tuple(action.option_strings),
                action.nargs != 0,
                tuple(str(c) for c in action.choices or ()),
                metavar in _PATH_METAVARS
                or (action.type is not None and "Path" in str(action.type)),
                (action.help or "").split(";")[0].split(". ")[0][:80],
            )
        )
    return tuple(out)


def _commands(parser: argparse.ArgumentParser) -> tuple[Command, ...]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help or "" for a in action._choices_actions}
            return tuple(
                _command(name, helps.get(name, ""), sub) for name, sub in action.choices.items()
            )
    return ()


def _command(name: str, help: str, parser: argparse.ArgumentParser) -> Command:
    positional = [a for a in parser._actions if not a.option_strings]
    choices = tuple(str(c) for a in positional for c in (a.choices or ()))
    return Command(name, help, _options(parser), bool(positional) and not choices, choices)


def script(shell: str, parser: argparse.ArgumentParser) -> str:
    """The completion script for ``shell``."""
    top = _options(parser)
    commands = _commands(parser)
    if shell == "fish":
        return _fish(top, commands)
    body = _bash(top, commands)
    if shell == "zsh":
        # bashcompinit's `complete` needs compdef, which only compinit defines: a shell
        # started without it (zsh -f, a bare ~/.zshrc) loads it here, once
        # bashcompinit has no compopt: -o filenames for every completion, or its wrapper
        # unquotes each name before it quotes it again (a\b.jsonl offered as ab.jsonl)
        body = body.replace(_COMPLETE, _COMPLETE.replace("-o default", "-o default -o filenames"))
        return (
            "(( $+functions[compdef] )) || { autoload -Uz compinit && compinit -i; }\n"
            "autoload -U +X bashcompinit && bashcompinit\n" + body
        )
    return body


def _words(values: tuple[str, ...] | list[str]) -> str:
    return shlex.quote(" ".join(values))


def _value_cases(options: tuple[Option, ...], command: str = "*") -> list[str]:
    """bash `case "$cmd:$prev"` arms: an option's choices, or file names, or nothing to
    offer; by command, since two commands may give one flag different choices."""
    arms = []
    for o in options:
        if not o.takes_value:
            continue
        pattern = "|".join(f"{command}:{flag}" for flag in o.flags)
        if o.choices:
            words = _words(o.choices)
            arms.append(f'        {pattern}) COMPREPLY=($(compgen -W {words} -- "$cur")); return;;')
        elif o.path:
            arms.append(f"        {pattern}) _gputui_files; return;;")
        else:
            arms.append(f"        {pattern}) return;;")
    return arms


#: file names offered whole, one a line (a space in a name makes no second one, a * in
#: one no glob), and bash told they are file names, so that readline quotes what it
#: inserts: a name such as ``$(touch x).jsonl`` in a shared folder is text on the line,
#: never a command run when the line is entered. zsh's bashcompinit has no compopt and
#: quotes by itself.
_COMPLETE = "complete -o default -F _gputui gputui"
_FILES = (
    "_gputui_files() {",
    "    local name",
    "    COMPREPLY=()",
    "    type compopt >/dev/null 2>&1 && compopt -o filenames",
    '    while IFS= read -r name; do COMPREPLY+=("$name"); done < <(compgen -f -- "$cur")',
    "}",
)


def _bash(top: tuple[Option, ...], commands: tuple[Command, ...]) -> str:
    names = [c.name for c in commands]
    top_flags = [f for o in top for f in o.flags]
    lines = [
        "# gputui completion for bash (and zsh through bashcompinit)",
        *_FILES,
        "_gputui() {",
        '    local cur="${COMP_WORDS[COMP_CWORD]}" prev="${COMP_WORDS[COMP_CWORD-1]}"',
        '    local cmd="" i',
        "    for ((i = 1; i < COMP_CWORD; i++)); do",
        '        case "${COMP_WORDS[i]}" in',
        f'            {"|".join(names)}) cmd="${{COMP_WORDS[i]}}";;',
        "        esac",
        "    done",
        '    case "$cmd:$prev" in',
        *(arm for c in commands for arm in _value_cases(c.options, c.name)),
        *_value_cases(top),
        "    esac",
        '    case "$cmd" in',
    ]
    for c in commands:
        flags = [f for o in c.options for f in o.flags]
        lines.append(f"        {c.name}) opts={_words(flags)};;")
    lines += [
        f"        *) opts={_words(top_flags)};;",
        "    esac",
        '    if [[ "$cur" == -* ]]; then',
        '        COMPREPLY=($(compgen -W "$opts" -- "$cur"))',
        '    elif [[ -z "$cmd" ]]; then',
        f'        COMPREPLY=($(compgen -W {_words(names)} -- "$cur"))',
        *(
            f'    elif [[ "$cmd" == {c.name} ]]; then\n'
            f'        COMPREPLY=($(compgen -W {_words(c.choices)} -- "$cur"))'
            for c in commands
            if c.choices
        ),
        "    else",
        "        _gputui_files",
        "    fi",
        "}",
        _COMPLETE,
        "",
    ]
    return "\n".join(lines)


def _fish_option(o: Option, condition: str) -> str:
    parts = [f"complete -c gputui -n {shlex.quote(condition)}"]
    for flag in o.flags:
        parts.append(f"-l {flag[2:]}" if flag.startswith("--") else f"-s {flag[1:]}")
    if o.choices:
        parts.append(f"-x -a {_words(o.choices)}")
    elif o.takes_value:
        parts.append("-r -F" if o.path else "-x")
    if o.help:
        parts.append(f"-d {shlex.quote(o.help)}")
    return " ".join(parts)


def _fish(top: tuple[Option, ...], commands: tuple[Command, ...]) -> str:
    names = " ".join(c.name for c in commands)
    lines = ["# gputui completion for fish", "complete -c gputui -f"]
    lines += [_fish_option(o, "__fish_use_subcommand") for o in top]
    for c in commands:
        lines.append(
            f"complete -c gputui -n __fish_use_subcommand -a {c.name} -d {shlex.quote(c.help)}"
        )
        seen = f"__fish_seen_subcommand_from {c.name}"
        lines += [_fish_option(o, seen) for o in c.options]
        if c.files:
            lines.append(f"complete -c gputui -n {shlex.quote(seen)} -F")
        if c.choices:
            lines.append(f"complete -c gputui -n {shlex.quote(seen)} -x -a {_words(c.choices)}")
    lines.append(f"# commands: {names}")
    return "\n".join(lines) + "\n"
