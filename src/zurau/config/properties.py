"""Java ``.properties`` files (``server.properties``, Connect's and the registry's files).

:func:`parse_properties` follows ``java.util.Properties.load``: ``#``/``!`` comments,
``key=value``, ``key: value`` and ``key value``, continuation lines, and Java's escapes; later
duplicates win. :func:`load_properties` reads a file (UTF-8, else ISO-8859-1).
"""

from __future__ import annotations

import re
from pathlib import Path

from zurau.config.types import ConfigError

__all__ = ["load_properties", "parse_properties"]

_WS = " \t\f"
_NEWLINES = re.compile(r"\r\n|\r|\n")


def _odd_trailing_backslashes(s: str) -> bool:
    n = len(s) - len(s.rstrip("\\"))
    return n % 2 == 1


def _split_key_value(line: str) -> tuple[str, str]:
    """Split a logical line as ``java.util.Properties.load`` does (escapes still in place)."""
    n = len(line)
    key_end = value_start = n
    has_sep = False
    backslash = False
    i = 0
    while i < n:
        c = line[i]
        if c in "=:" and not backslash:
            key_end, value_start, has_sep = i, i + 1, True
            break
        if c in _WS and not backslash:
            key_end, value_start = i, i + 1
            break
        backslash = (not backslash) if c == "\\" else False
        i += 1
    while value_start < n:
        c = line[value_start]
        if c not in _WS:
            if not has_sep and c in "=:":
                has_sep = True
            else:
                break
        value_start += 1
    return line[:key_end], line[value_start:]


_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _unescape(s: str) -> str:
    if "\\" not in s:
        return s
    out: list[str] = []
    i, n = 0, len(s)
    while i < n:
        c = s[i]
        i += 1
        if c != "\\" or i >= n:
            if c != "\\":
                out.append(c)
            continue
        c = s[i]
        i += 1
        if c == "u":
            hexpart = s[i : i + 4]
            if len(hexpart) != 4 or any(h not in "0123456789abcdefABCDEF" for h in hexpart):
                raise ConfigError("Malformed \\uxxxx encoding.")
            out.append(chr(int(hexpart, 16)))
            i += 4
        else:
            out.append(_ESCAPES.get(c, c))
    return "".join(out)


def parse_properties(text: str) -> dict[str, str]:
    """Parse Java ``.properties`` text into a dict (later duplicates win).

    Supports ``#``/``!`` comment lines, ``key=value``, ``key: value`` and ``key value``, line
    continuation with an odd number of trailing backslashes (leading whitespace of the next line
    is dropped), and escapes ``\\t \\n \\r \\f \\uXXXX`` plus ``\\<any>`` -> ``<any>`` (so ``\\:``,
    ``\\=``, ``\\\\``, ``\\ ``). Trailing whitespace of values is kept, as Java does.
    """
    props: dict[str, str] = {}
    lines = _NEWLINES.split(text)
    i = 0
    while i < len(lines):
        line = lines[i].lstrip(_WS)
        i += 1
        if not line or line[0] in "#!":
            continue
        while _odd_trailing_backslashes(line):
            line = line[:-1]
            if i >= len(lines):
                break
            line += lines[i].lstrip(_WS)
            i += 1
        key, value = _split_key_value(line)
        props[_unescape(key)] = _unescape(value)
    return props


def load_properties(path: str | Path) -> dict[str, str]:
    """Read a ``server.properties`` style file. UTF-8 is tried first, then ISO-8859-1 (Java's
    ``Properties.load`` encoding); ``\\uXXXX`` escapes work either way."""
    data = Path(path).read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = data.decode("iso-8859-1")
    if text.startswith("\ufeff"):
        text = text[1:]
    return parse_properties(text)
