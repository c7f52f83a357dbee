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
        "signature",
    }
)
_SECRET_PAIRS: Final = frozenset(
    {("api", "key"), ("access", "key"), ("private", "key"), ("secret", "key"), ("session", "key")}
)
# A value: quoted (a shell line pasted into a launcher's argument keeps its quotes) or a word
_VALUE = r"""(?:"[^"]*"|'[^']*'|\S+)"""
# --password=x (whatever x starts with), --api-key x, -token x, and NAME=value assignments
_OPTION = re.compile(
    r"(?<!\S)(?P<name>--?[A-Za-z][\w.-]*)"
    rf"(?:(?P<eq>=)(?P<value>{_VALUE})|(?P<space>\s+)(?P<word>[^\s-]\S*))"
)
_ASSIGNMENT = re.compile(rf"(?<![\w-])(?P<name>[A-Za-z_][\w.]*)=(?P<value>{_VALUE})")
# -p VALUE: a password to mysql, sshpass, redis-cli and kin; a number there is a port
_SHORT_PASSWORD = re.compile(r"(?<!\S)(?P<name>-p)(?P<sep>\s+)(?P<value>(?!\d+(?:\s|$))[^\s-]\S*)")
# -pVALUE, attached, to the MySQL/MariaDB clients only (elsewhere -p starts flags: tar -pxf)
_MYSQL_PASSWORD = re.compile(
    r"(?P<head>(?:^|[\s/])(?:mysql\w*|mariadb\w*)\b(?:\s+\S+)*?\s-p)(?P<value>[^\s\d]\S*)"
)
# an HTTP credential in a header given on the command line (curl -H, wget --header)
_HTTP_CREDENTIAL = re.compile(
    r"(?i)(?P<head>\b(?:proxy-)?authorization\s*:\s*(?:(?:bearer|basic|token|digest)\s+)?"
    r"|\bbearer\s+)(?P<value>[^\s\"']+)"
)
# scheme://user:password@host
_URL_PASSWORD = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.-]*://[^\s/:@]*:)[^\s/@]+@")


# Words that end in these are credentials too, written as one word (PGPASSWORD, MYSQL_PWD's
# kin, CSRFTOKEN)
_SECRET_ENDINGS: Final = ("password", "passwd", "passphrase", "token", "secret", "apikey")


def is_secret_name(name: str) -> bool:
    """Whether an option or variable name says its value is a credential: one of its
    words (split at - _ .) is one (``HF_TOKEN``, ``--db-password``, ``WANDB_API_KEY``) or
    ends in one (``PGPASSWORD``), and not merely contains one (``max_tokens``,
    ``--tokenizer``)."""
    words = [w for w in re.split(r"[-_.]+", name.lower()) if w]
    if any(w in _SECRET_WORDS or w.endswith(_SECRET_ENDINGS) for w in words):
        return True
    return any(pair in _SECRET_PAIRS for pair in itertools.pairwise(words))


# An environment variable named for a key (OPENAI_KEY, SSH_KEY, WANDB_KEY) holds one; an
# option named --key often does not (a sort key, a dictionary key), so only here.
_VARIABLE_SECRET_ENDS: Final = frozenset({"key", "keys", "pat", "dsn"})


def _secret_variable(name: str) -> bool:
    """An environment variable's name that says credential: as ``is_secret_name``, or
    ending in KEY, PAT or DSN (OPENAI_KEY, GITHUB_PAT, SENTRY_DSN)."""
    words = [w for w in re.split(r"[-_.]+", name.lower()) if w]
    return is_secret_name(name) or bool(words and words[-1] in _VARIABLE_SECRET_ENDS)


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


def mask_secrets(text: str) -> str:
    """``text`` with credential-looking values replaced by ``***``: values of options and
    assignments whose names say password, token, secret, key or auth, passwords in URLs,
    HTTP credentials in headers, and the MySQL clients' -pPASSWORD. Names stay, so the
    reader still sees what was passed."""
    text = _URL_PASSWORD.sub(lambda m: f"{m['head']}{MASK}@", text)
    text = _HTTP_CREDENTIAL.sub(lambda m: f"{m['head']}{MASK}", text)
    text = _SHORT_PASSWORD.sub(lambda m: f"{m['name']}{m['sep']}{MASK}", text)
    text = _MYSQL_PASSWORD.sub(lambda m: f"{m['head']}{MASK}", text)
    text = _OPTION.sub(_masked_option, text)
    return _ASSIGNMENT.sub(_masked_assignment, text)


def mask_optional(text: str | None) -> str | None:
    return None if text is None else mask_secrets(text)
