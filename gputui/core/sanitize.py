"""The one sanitiser for text gputui did not write, and the secret mask for text that travels.

Outside text (command lines, user, GPU and host names, metric labels, replay files) can
hold anything a hostile or broken writer puts there: escape sequences that recolour,
clear or retitle the terminal or write its clipboard (OSC 52), BiDi overrides that
reorder what is shown, zero-width characters, lone surrogates that no file can hold.
``clean`` makes all of it visible and inert, so the same string is safe on the screen, in
a Markdown or JSON file, in an SVG and in a Prometheus label. The model applies it to
every string field it receives (``gputui.core.model``), so no surface sees raw outside text.
Markup is a separate matter: each surface that parses markup escapes at that point.

``mask_secrets`` hides what looks like a credential in a command line or URL; it is
applied where text leaves the live screen (snapshots, recordings, the SVG of the ``s``
key), unless the user asks to keep it.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from typing import Final

#: the longest outside string kept (a command line is cut earlier, by the host reader)
MAX_TEXT: Final = 16_384
ELLIPSIS: Final = "…"

# C0 controls (newline and tab included: every string here is one line) and DEL become
# their Unicode "control pictures" (ESC -> ␛), C1 controls a visible escape.
_C0 = {code: 0x2400 + code for code in range(0x20)}
_C0[0x7F] = 0x2421  # ␡
# BiDi embedding/override/isolate marks and zero-width characters: shown as <U+XXXX>.
_INVISIBLE = (
    "\u061c\u200b\u200c\u200d\u200e\u200f\u202a\u202b\u202c\u202d\u202e"
    "\u2060\u2061\u2062\u2063\u2064\u2066\u2067\u2068\u2069\ufeff"
)
_NEEDS_WORK = re.compile("[\x00-\x1f\x7f-\x9f" + _INVISIBLE + "\ud800-\udfff]")


def _visible(match: re.Match[str]) -> str:
    char = match.group()
    code = ord(char)
    if code in _C0:
        return chr(_C0[code])
    if 0x80 <= code <= 0x9F:
        return f"\\x{code:02x}"
    return f"<U+{code:04X}>"


def clean(text: str, limit: int = MAX_TEXT) -> str:
    """``text`` with every control, invisible and unencodable character made visible and
    inert, cut to ``limit`` characters (with an ellipsis). Idempotent."""
    if len(text) > limit:
        text = text[: limit - 1] + ELLIPSIS
    if _NEEDS_WORK.search(text) is None:
        return text  # the common case: nothing to do
    return _NEEDS_WORK.sub(_visible, text)


# -- secrets ------------------------------------------------------------------------
MASK: Final = "***"
_SECRET_WORDS: Final = frozenset(
    {
        "password",
        "passwd",
        "passphrase",
        "pass",
        "pwd",
        "pw",
        "sshpass",
        "token",
        "secret",
        "secrets",
        "credential",
        "credentials",
        "auth",
        "authorization",
        "bearer",
        "cookie",
        "apikey",
        "accesskey",
        "privatekey",
        "sessionkey",
        "accountkey",
        "signature",
    }
)
_SECRET_PAIRS: Final = frozenset(
    {
        ("api", "key"),
        ("access", "key"),
        ("private", "key"),
        ("secret", "key"),
        ("session", "key"),
        ("account", "key"),
    }
)
# Names that hold one of those words and no credential: the shell's working directories,
# the SSH agent's socket (a path), the askpass helpers (programs)
_NOT_SECRET: Final = frozenset({"pwd", "oldpwd", "ssh_auth_sock", "git_askpass", "ssh_askpass"})
_NOT_SECRET_ENDS: Final = frozenset({"sock", "socket", "askpass"})


class _Later:
    """A pattern compiled when first used: the masking below is for command lines and
    URLs, which the first screen does not show, and its patterns took a tenth of the
    command line's start to compile."""

    def __init__(self, pattern: str) -> None:
        self._pattern = pattern
        self._compiled: re.Pattern[str] | None = None

    def _get(self) -> re.Pattern[str]:
        if self._compiled is None:
            self._compiled = re.compile(self._pattern)
        return self._compiled

    def sub(self, repl: str | Callable[[re.Match[str]], str], text: str) -> str:
        return self._get().sub(repl, text)

    def search(self, text: str) -> re.Match[str] | None:
        return self._get().search(text)

    def match(self, text: str) -> re.Match[str] | None:
        return self._get().match(text)


# A shell word as a command line holds it: quoted parts (a value of several words, kept
# whole by the host reader, ``sources/proc_files.command_line``) and bare characters
_WORD = r"""(?:'[^']*'|"(?:[^"\\]|\\.)*"|\\.|[^\s'"\\])+"""
# --password=x (whatever x starts with), --api-key x, -token x, and NAME=value assignments
_OPTION = _Later(
    r"(?<!\S)(?P<name>--?[A-Za-z][\w.-]*)"
    rf"(?:(?P<eq>=)(?P<value>{_WORD})|(?P<space>\s+)(?P<word>(?!-){_WORD}))"
)
# an assignment's value ends where another assignment starts after ; or & (a connection
# string: "Server=db;User Id=sa;Password=x", a query: "a=1&token=x")
_ASSIGNED = r"""(?:'[^']*'|"[^"]*"|(?![;&]\s*[A-Za-z_][\w .-]*=)[^\s'"])+"""
_ASSIGNMENT = _Later(rf"(?<![\w-])(?P<name>[A-Za-z_][\w.]*)=(?P<value>{_ASSIGNED})")
# -p VALUE: a password to mysql, sshpass, redis-cli and kin; a number there is a port
_SHORT_PASSWORD = _Later(rf"(?<!\S)(?P<name>-p)(?P<sep>\s+)(?P<value>(?!\d+(?:\s|$))(?!-){_WORD})")
# -pVALUE, attached, to the MySQL/MariaDB clients only (elsewhere -p starts flags: tar -pxf)
_MYSQL_PASSWORD = _Later(
    r"(?P<head>(?:^|[\s/])(?:mysql\w*|mariadb\w*)\b(?:\s+\S+){0,32}?\s-p)(?P<value>[^\s\d]\S*)"
)
# a password flag of one tool: redis-cli -a, sqlcmd and bcp -P, the ldap tools' -w
_TOOL_FLAGS: Final = {"redis-cli": "a", "sqlcmd": "P", "bcp": "P", "ldap[a-z]*": "w"}
_TOOL_PASSWORD = _Later(
    "|".join(
        rf"(?P<head{k}>(?:^|[\s/]){tool}\b(?:\s+\S+){{0,32}}?\s-{flag}\s+){_WORD}"
        for k, (tool, flag) in enumerate(_TOOL_FLAGS.items())
    )
)
# user:password after curl's -u/--user/-U/--proxy-user (a uid:gid of numbers stays)
_USER_PASSWORD = _Later(
    r"(?<!\S)(?P<head>(?:-u|--user|-U|--proxy-user)(?:=|\s+|(?=[^\s-]))(?P<q>['\"]?)"
    r"(?P<user>[^\s:'\"]*):)(?P<value>[^\s'\"]+)"
)
# openssl's -passin/-passout pass:VALUE
_PASS_ARGUMENT = _Later(r"(?P<head>(?<!\S)-pass(?:in|out)?\s+pass:)(?P<value>\S+)")
# an HTTP credential in a header given on the command line (curl -H, wget --header)
_HTTP_CREDENTIAL = _Later(
    r"(?i)(?P<head>\b(?:proxy-)?authorization\s*:\s*(?:(?:bearer|basic|token|digest)\s+)?"
    r"|\bbearer\s+)(?P<value>[^\s\"']+)"
)
# any other header named for a credential (X-Api-Key, X-Auth-Token, Cookie, Private-Token):
# its whole value where the header is quoted, else its next word after -H/--header
_QUOTED_HEADER = _Later(
    r"""(?P<head>(?P<q>['"])(?P<name>[A-Za-z][\w-]*)\s*:\s*)(?P<value>[^'"]+)(?=(?P=q))"""
)
_HEADER = _Later(r"(?P<head>(?:-H|--header)(?:=|\s+)(?P<name>[A-Za-z][\w-]*)\s*:\s*)(?P<value>\S+)")
# a quoted list of assignments, ; between them (a connection string): each value runs to
# its ; whatever it holds, a space among it ("Server=db;Password=two words;Encrypt=yes")
_QUOTED_LIST = _Later(r"""(?P<q>['"])(?P<body>[^'"]*)(?P=q)""")
# "password": "x" in JSON (or a Python dict's 'password': 'x')
_JSON_FIELD = _Later(
    r"""(?P<head>(?P<q>["'])(?P<name>[A-Za-z_][\w.-]{0,63})(?P=q)\s*:\s*)"""
    r"""(?P<value>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|[^\s,}\]]+)"""
)
# scheme://user:password@host
_URL_PASSWORD = _Later(
    r"(?P<head>(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]*://[^\s/:@]*:)[^\s/@]+@"
)
# a URL: its host, and its path and query
_URL = _Later(
    r"""(?P<base>(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]*://(?P<host>[^\s/?#'"]+))(?P<rest>[/?][^\s'"]*)?"""
)
# a URL whose path is its credential (a webhook): Slack's hooks.slack.com/services/...,
# Discord's /api/webhooks/..., Teams' .webhook.office.com/webhookb2/..., Mattermost's /hooks/
_HOOK_HOST = _Later(r"(?i)(?:^|[.@])(?:hooks?\.|[\w-]*webhook)")
_HOOK_SEGMENT = _Later(r"(?i)^(?:web)?hooks?(?:b\d+)?$")
# a query parameter that carries the credential without saying so: Azure's SAS sig=, an
# API key=
_QUERY_SECRETS: Final = frozenset({"sig", "key", "code", "sv_sig"})


# Words that end in these are credentials too, written as one word (PGPASSWORD, MYSQL_PWD's
# kin, CSRFTOKEN)
_SECRET_ENDINGS: Final = ("password", "passwd", "passphrase", "token", "secret", "apikey")


def _words(name: str) -> list[str]:
    """A name's words: split at - _ . and where camelCase turns (awsSecretAccessKey)."""
    spaced = re.sub(r"([a-z0-9])([A-Z])|([A-Z]+)([A-Z][a-z])", r"\1\3_\2\4", name)
    return [w for w in re.split(r"[-_.\s]+", spaced.lower()) if w]


def is_secret_name(name: str) -> bool:
    """Whether an option or variable name says its value is a credential: one of its
    words (split at - _ . and camelCase) is one (``HF_TOKEN``, ``--db-password``,
    ``WANDB_API_KEY``, ``--awsSecretAccessKey``) or ends in one (``PGPASSWORD``), and not
    merely contains one (``max_tokens``, ``--tokenizer``); not the shell's ``PWD`` or the
    SSH agent's socket."""
    words = _words(name)
    if "_".join(words) in _NOT_SECRET or (words and words[-1] in _NOT_SECRET_ENDS):
        return False
    if any(w in _SECRET_WORDS or w.endswith(_SECRET_ENDINGS) for w in words):
        return True
    return any(pair in _SECRET_PAIRS for pair in itertools.pairwise(words))


# An environment variable named for a key (OPENAI_KEY, SSH_KEY, WANDB_KEY) holds one; an
# option named --key often does not (a sort key, a dictionary key), so only here. Nor does
# a word ending in "pass" say password but in a variable (SSHPASS, LDAPPASS; BYPASS not).
_VARIABLE_SECRET_ENDS: Final = frozenset({"key", "keys", "pat", "dsn"})
_NOT_PASS: Final = ("bypass", "compass", "surpass", "overpass", "underpass", "multipass")


def _secret_variable(name: str) -> bool:
    """An environment variable's name that says credential: as ``is_secret_name``, or
    ending in KEY, PAT or DSN (OPENAI_KEY, GITHUB_PAT, SENTRY_DSN) or in PASS
    (LDAPPASS)."""
    words = _words(name)
    if not words or is_secret_name(name):
        return bool(words)
    last = words[-1]
    if last in _VARIABLE_SECRET_ENDS:
        return True
    return last.endswith("pass") and not last.endswith(("askpass", *_NOT_PASS))


def mask_variable(entry: str) -> str:
    """One ``NAME=value`` of an environment: the value masked where the name says it is a
    credential (``_secret_variable``), URL passwords in it too."""
    name, sep, value = entry.partition("=")
    if not sep:
        return mask_secrets(entry)
    if _secret_variable(name):
        return f"{name}={MASK}"
    return f"{name}={mask_secrets(value)}"


def _masked_option(m: re.Match[str]) -> str:
    if not is_secret_name(m["name"]):
        return m[0]
    return f"{m['name']}={MASK}" if m["eq"] else f"{m['name']}{m['space']}{MASK}"


def _masked_assignment(m: re.Match[str]) -> str:
    name = m["name"]
    # a variable set on the command line (GITHUB_PAT=... cmd) reads as an environment's
    secret = _secret_variable(name) if name.isupper() else is_secret_name(name)
    return f"{name}={MASK}" if secret else m[0]


def _masked_user(m: re.Match[str]) -> str:
    if m["user"].isdigit() and m["value"].isdigit():
        return m[0]  # a uid:gid (docker -u 1000:1000)
    return f"{m['head']}{MASK}"


def _masked_named(m: re.Match[str]) -> str:
    """A header's or a JSON field's value, where its name says credential; a quoted
    value keeps its quotes."""
    if not is_secret_name(m["name"]) or m["name"].lower().endswith("authorization"):
        return m[0]
    value = m["value"]
    quoted = len(value) > 1 and value[0] in "'\"" and value[-1] == value[0]
    quote = value[0] if quoted else ""
    return f"{m['head']}{quote}{MASK}{quote}"


def _masked_list(m: re.Match[str]) -> str:
    if ";" not in m["body"] or "=" not in m["body"]:
        return m[0]
    parts = []
    for part in m["body"].split(";"):
        name, sep, value = part.partition("=")
        secret = sep and value and is_secret_name(name.strip())
        parts.append(f"{name}={MASK}" if secret else part)
    return f"{m['q']}{';'.join(parts)}{m['q']}"


def _masked_url(m: re.Match[str]) -> str:
    """A webhook's path masked; a query's credentials masked."""
    base, rest = m["base"], m["rest"] or ""
    path, mark, query = rest.partition("?")
    if _HOOK_HOST.search(m["host"]) and path.strip("/"):
        path = f"/{MASK}"
    else:
        segments = path.split("/")
        for k, segment in enumerate(segments):
            if _HOOK_SEGMENT.match(segment) and k + 1 < len(segments):
                path = "/".join([*segments[: k + 1], MASK])
                break
    if query:
        query = "&".join(_masked_parameter(p) for p in query.split("&"))
    return f"{base}{path}{mark}{query}"


def _masked_parameter(parameter: str) -> str:
    name, sep, value = parameter.partition("=")
    if sep and value and (is_secret_name(name) or name.lower() in _QUERY_SECRETS):
        return f"{name}={MASK}"
    return parameter


def mask_secrets(text: str) -> str:
    """``text`` with credential-looking values replaced by ``***`` (docs/security.md has
    the table of what is and is not): values of options and assignments whose names say
    password, token, secret, key or auth (the whole next argument where it is quoted, each
    assignment of a connection string), passwords in URLs and the paths of webhooks,
    credentials in query strings, headers and JSON fields, ``-u user:password``, the MySQL
    clients' -pPASSWORD. Names stay, so the reader still sees what was passed."""
    text = _URL_PASSWORD.sub(lambda m: f"{m['head']}{MASK}@", text)
    text = _URL.sub(_masked_url, text)
    text = _HTTP_CREDENTIAL.sub(lambda m: f"{m['head']}{MASK}", text)
    text = _QUOTED_HEADER.sub(_masked_named, text)
    text = _HEADER.sub(_masked_named, text)
    text = _JSON_FIELD.sub(_masked_named, text)
    text = _QUOTED_LIST.sub(_masked_list, text)
    text = _USER_PASSWORD.sub(_masked_user, text)
    text = _PASS_ARGUMENT.sub(lambda m: f"{m['head']}{MASK}", text)
    text = _SHORT_PASSWORD.sub(lambda m: f"{m['name']}{m['sep']}{MASK}", text)
    text = _MYSQL_PASSWORD.sub(lambda m: f"{m['head']}{MASK}", text)
    text = _TOOL_PASSWORD.sub(lambda m: f"{next(g for g in m.groups() if g)}{MASK}", text)
    text = _OPTION.sub(_masked_option, text)
    return _ASSIGNMENT.sub(_masked_assignment, text)


def mask_optional(text: str | None) -> str | None:
    return None if text is None else mask_secrets(text)
