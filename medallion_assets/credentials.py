"""Passwords never leave the process: one masking function for URLs, DSNs and free text.

``mask_credentials`` is the one place text is cleaned before it is printed, logged, stored in
the audit log or put in an exception. It works two ways, because neither is enough alone:

- **Known secrets.** The secrets of the settings in force (``MedallionSettings.secrets``: the
  passwords of the warehouse, control store and lake catalog URLs, ``$PGPASSWORD``, a Spark
  Connect token) are replaced wherever they appear, in any form they may be printed in (as
  written, decoded, percent-encoded). This is the reliable way for free text: a driver's error
  may quote a password, or a fragment of a URL, with no structure left to parse.
- **Structure.** ``scheme://user:PASSWORD@host`` and ``password=VALUE`` are found by parsing,
  so a URL that is not a setting (one typed on a command line, one in a SQL error) is masked
  too. A raw password may hold any character, ``@`` included: it ends at the last ``@`` on its
  line that is followed by a host (and port) and the end of the authority.

Where in doubt it hides too much, never too little: a later ``user@host`` on the same line as a
URL with a password is masked with it. Known secrets shorter than ``MIN_KNOWN_SECRET`` are
masked only where structure shows them, and a raw password holding a line break only as a
known secret (encode it in the URL). Text leaves through ``ControlStore`` (audit entries,
errors), the warehouses' errors and reprs, ``adapters.masking.masked_step`` (each step's logs
and exception) and ``cli.common.mask_output`` (the CLI's stdout and stderr).

>>> mask_credentials("postgresql://loader:p/w#1 ?@db:5432/analytics")
'postgresql://loader:***@db:5432/analytics'
>>> mask_credentials("host=db password='two words' dbname=analytics")
'host=db password=*** dbname=analytics'
>>> mask_credentials("login failed for p@ss", secrets={"p@ss"})
'login failed for ***'
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any
from urllib.parse import quote, quote_plus, unquote, urlsplit

MASK = "***"
# Known secrets shorter than this are masked only where structure shows them: replacing every
# "ab" in every message would garble the output and hide nothing a guess would not find.
MIN_KNOWN_SECRET = 4
# A Spark Connect URL carries its bearer token as a parameter: sc://host:15002/;token=SECRET
_SPARK_CONNECT_TOKEN = re.compile(r";\s*token=([^;]+)", re.IGNORECASE)

_SCHEME = re.compile(r"[A-Za-z][\w+.-]*://")
# The user may hold a raw '@' (Azure's user@server): the password is what follows its ':'.
_SCHEME_USER = re.compile(r"(?<![\w+.-])[A-Za-z][\w+.-]*://([^:/?#\s]*):")
# What may follow the '@' that ends a password: a host (a name, an address, [IPv6], or nothing
# before a path), an optional port, then the end of the authority.
_HOST = re.compile(
    r"""(?:\[[^\]\s/@]*\]|[^\s/?#@:\[\]'"<>(),;]*)(?::\d*)?(?=$|[\s/?#'"<>(),;\]])"""
)
_KEY_VALUE = re.compile(
    r"""(?P<key>(?<![\w-])(?P<q>["']?)(?:password|passwd)(?P=q)\s*[=:]\s*)"""
    r"""(?P<value>'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"|[^\s&#'"]+)""",
    re.IGNORECASE,
)


class MaskedFileHandler(logging.FileHandler):
    """A log file whose every formatted record (message, traceback, a JSON record's fields)
    has its passwords hidden, as ``mask_credentials`` hides them."""

    def __init__(self, path: Path, secrets: Iterable[str] = ()):
        path.parent.mkdir(parents=True, exist_ok=True)
        super().__init__(path, delay=True)
        self.secrets = frozenset(secrets)

    def format(self, record: logging.LogRecord) -> str:
        return mask_credentials(super().format(record), self.secrets)


def mask_credentials(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` with every password hidden: the known ``secrets`` wherever they appear, then
    each password that URL or key=value structure shows."""
    for secret in sorted(set(secrets), key=len, reverse=True):
        # Until none is left: a secret holding '*' may re-form around a mask. Each pass
        # shortens the text (a secret is longer than the mask), so this ends.
        while len(secret) >= MIN_KNOWN_SECRET and secret in text:
            text = text.replace(secret, MASK)
    return _KEY_VALUE.sub(lambda m: m["key"] + MASK, _mask_url_passwords(text))


def _mask_url_passwords(text: str) -> str:
    out, position = [], 0
    while (match := _SCHEME_USER.search(text, position)) is not None:
        start = match.end()
        end = _password_end(text, start)
        if end is None:
            out.append(text[position:start])
        else:
            out.append(text[position:start] + MASK)
        position = start if end is None else end
    return "".join(out) + text[position:]


def _password_end(text: str, start: int) -> int | None:
    """Where the password starting at ``start`` ends (the index of its closing ``@``), or None
    when no ``@`` followed by a host closes it on this line (``sc://host:15002`` has none)."""
    line_end = text.find("\n", start)
    line_end = len(text) if line_end < 0 else line_end
    at = text.rfind("@", start, line_end)
    while at >= 0:
        if _HOST.match(text, at + 1):
            return at
        at = text.rfind("@", start, at)
    return None


def split_credentials(url: str) -> tuple[str, str, str, str] | None:
    """``(scheme://, user, password, @rest)`` of a URL with a password, as written (not
    decoded), or None. A raw password may hold ``/ # ? @ :`` and spaces.

    >>> split_credentials("postgresql://u:a/b@c@db/x")
    ('postgresql://', 'u', 'a/b@c', '@db/x')
    """
    match = _SCHEME_USER.match(url)
    if match is None or (end := _password_end(url, match.end())) is None:
        return None
    return url[: match.start(1)], match[1], url[match.end() : end], url[end:]


def encoded_url(url: str) -> str:
    """``url`` with its user and password percent-encoded, so libpq and ``urlsplit`` read a
    raw password with ``/``, ``#``, ``?`` or ``@`` as the user meant. Encoded ones are kept.

    >>> encoded_url("postgresql://u:a/b#c@db:5432/x")
    'postgresql://u:a%2Fb%23c@db:5432/x'
    """
    parts = split_credentials(url)
    if parts is None or _reads_as_standard(url, parts):
        return url
    scheme, user, password, rest = parts
    return f"{scheme}{quote(unquote(user), safe='')}:{quote(unquote(password), safe='')}{rest}"


def _reads_as_standard(url: str, parts: tuple[str, str, str, str]) -> bool:
    """The URL's standard reading is valid and ends its authority before the password this
    module found: ``postgresql://db:5432/x?application_name=me@corp`` has no password. (So a
    raw password such as ``1234/abc`` reads as a port: encode that one in the URL.)"""
    try:
        netloc = urlsplit(url).netloc
    except ValueError:  # a bracket the password holds reads as a broken IPv6 address
        return False
    if not (re.fullmatch(r"[0-9]+", netloc.rpartition(":")[2]) or netloc.endswith("]")):
        return False
    return len(url) - len(parts[3]) > len(parts[0]) + len(netloc)


def url_password(url: str) -> str | None:
    """The password of a URL (decoded) or a key=value DSN (unquoted), or None."""
    if _SCHEME.match(url):
        parts = split_credentials(url)
        return None if parts is None else unquote(parts[2])
    match = _KEY_VALUE.search(url)
    if match is None:
        return None
    value = match["value"]
    if value[:1] in "'\"" and len(value) >= 2:
        value = re.sub(r"\\(.)", r"\1", value[1:-1])
    return value


def secret_forms(secret: str) -> frozenset[str]:
    """The ways ``secret`` may be printed: as is and percent-encoded (upper and lower hex)."""
    if not secret:
        return frozenset()
    encoded = {quote(secret, safe=""), quote(secret), quote_plus(secret)}
    lower = {re.sub(r"%[0-9A-F]{2}", lambda m: m[0].lower(), e) for e in encoded}
    return frozenset({secret, *encoded, *lower})


def url_secrets(url: str) -> frozenset[str]:
    """Every form of the password ``url`` holds, including the one written in it."""
    password = url_password(url)
    if password is None:
        return frozenset()
    parts = split_credentials(url)
    written = {parts[2]} if parts is not None else set()
    return secret_forms(password) | written


def spark_connect_tokens(url: str) -> frozenset[str]:
    """Every form of the bearer token(s) a Spark Connect URL carries (``;token=SECRET``)."""
    found: set[str] = set()
    for token in _SPARK_CONNECT_TOKEN.findall(url):
        found |= secret_forms(token)
    return frozenset(found)


class MaskedError(RuntimeError):
    """Stands in for an exception whose message could not be masked in place (its text is not
    built from its ``args``); the message keeps the original type's name."""


def masked_exception(error: BaseException, secrets: Iterable[str]) -> BaseException:
    """``error`` with ``secrets`` (and any URL password) masked in its message, its notes and
    every exception it was raised from, so a traceback or Dagster's serialized error shows
    none. Masked in place where the message comes from ``args`` and string attributes (as
    with ``dagster.Failure``'s description); otherwise a ``MaskedError`` takes its place."""
    secrets = frozenset(secrets)
    return _masked(error, secrets, set())


def _masked(error: BaseException, secrets: frozenset[str], seen: set[int]) -> BaseException:
    seen.add(id(error))
    for link in ("__cause__", "__context__"):
        linked = getattr(error, link)
        if linked is not None and id(linked) not in seen:
            setattr(error, link, _masked(linked, secrets, seen))
    notes = getattr(error, "__notes__", None)
    if isinstance(notes, list):
        notes[:] = [_masked_text(note, secrets) for note in notes]
    if _text(error) == mask_credentials(_text(error), secrets):
        return error
    error.args = tuple(_masked_text(a, secrets) for a in error.args)
    for name, value in list(getattr(error, "__dict__", {}).items()):
        setattr(error, name, _masked_text(value, secrets))
    text = _text(error)
    if text == mask_credentials(text, secrets):
        return error
    stand_in = MaskedError(f"{type(error).__name__}: {mask_credentials(text, secrets)}")
    stand_in.__cause__, stand_in.__context__ = error.__cause__, error.__context__
    stand_in.__suppress_context__ = error.__suppress_context__
    return stand_in.with_traceback(error.__traceback__)


def _masked_text(value: Any, secrets: frozenset[str]) -> Any:
    return mask_credentials(value, secrets) if isinstance(value, str) else value


def _text(error: BaseException) -> str:
    try:
        return str(error)
    except Exception:  # a broken __str__ shows nothing, so it leaks nothing
        return ""
