"""A TLS client certificate's principal: its distinguished name mapped by ``ssl.principal.mapping.rules``.

The distinguished name is written as Java's ``X500Principal.getName()`` writes it (RFC 2253):
relative distinguished names from the last to the first in the certificate, ``+`` between the
attributes of a multi-valued one, the short keywords ``CN, L, ST, O, OU, C, STREET, DC, UID`` and
other attributes by OID with the hex of their DER string (``1.2.840.113549.1.9.1=#16...`` for an
e-mail address), and ``, + " \\ < > ;`` (and a leading ``#`` or space, a trailing space) escaped with
a backslash. E.g. ``CN=alice,OU=eng,O=Example,C=GB``.

Rules (Kafka's ``SslPrincipalMapper``), tried in order, separated by commas:

* ``DEFAULT`` - the distinguished name itself;
* ``RULE:<regex>/<replacement>/[L|U]`` - if the regex matches the whole name, the result is the name
  with every match replaced (``$1`` ... refer to groups), lower- (``L``) or upper-case (``U``).
  ``\\/`` in either part is a literal slash.

No rule matching is an error (:class:`NoMatchingRule`): the connection's authentication fails.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from zurau.config import ConfigError

_SHORT_NAMES = {
    "commonName": "CN",
    "localityName": "L",
    "stateOrProvinceName": "ST",
    "organizationName": "O",
    "organizationalUnitName": "OU",
    "countryName": "C",
    "streetAddress": "STREET",
    "domainComponent": "DC",
    "userId": "UID",
}
# Attributes Java writes by OID: (OID, DER string tag).
_BY_OID = {"emailAddress": ("1.2.840.113549.1.9.1", 0x16)}

_RULE = re.compile(
    r"\s*(?:(?P<default>DEFAULT)|RULE:(?P<pattern>(?:\\.|[^\\/])*)/(?P<replacement>(?:\\.|[^\\/])*)/(?P<case>[LU]?))\s*(?:,|$)"
)


class NoMatchingRule(Exception):
    """No ``ssl.principal.mapping.rules`` rule applies to a distinguished name."""


def _escape(value: str) -> str:
    out = re.sub(r'([,+"\\<>;])', r"\\\1", value)
    if out.startswith(("#", " ")):
        out = "\\" + out
    if out.endswith(" ") and not out.endswith("\\ "):
        out = out[:-1] + "\\ "
    return out


def _der_hex(tag: int, value: str) -> str:
    data = value.encode("utf-8")
    n = len(data)
    length = bytes([n]) if n < 0x80 else bytes([0x80 | ((n.bit_length() + 7) // 8)]) + n.to_bytes((n.bit_length() + 7) // 8, "big")
    return "#" + (bytes([tag]) + length + data).hex()


def distinguished_name(subject: Sequence[Sequence[tuple[str, str]]]) -> str:
    """RFC 2253 form of a subject as ``ssl.SSLSocket.getpeercert()`` gives it."""
    rdns = []
    for rdn in reversed(subject):
        parts = []
        for key, value in rdn:
            if key in _SHORT_NAMES:
                parts.append(f"{_SHORT_NAMES[key]}={_escape(value)}")
            elif key in _BY_OID:
                oid, tag = _BY_OID[key]
                parts.append(f"{oid}={_der_hex(tag, value)}")
            else:
                parts.append(f"{key}={_escape(value)}")
        rdns.append("+".join(parts))
    return ",".join(rdns)


@dataclass(frozen=True)
class _Rule:
    pattern: re.Pattern[str] | None  # None: DEFAULT
    replacement: str = ""
    case: str = ""

    def apply(self, name: str) -> str | None:
        if self.pattern is None:
            return name
        if self.pattern.fullmatch(name) is None:
            return None
        out = self.pattern.sub(self.replacement, name)
        return out.lower() if self.case == "L" else out.upper() if self.case == "U" else out


def _java_replacement(text: str) -> str:
    """Java's ``$n`` group references and ``\\x`` escapes in Python's ``re.sub`` template form."""
    out, i = [], 0
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            out.append("\\\\" if nxt == "\\" else nxt)
            i += 2
        elif c == "$" and i + 1 < len(text) and text[i + 1].isdigit():
            j = i + 1
            while j < len(text) and text[j].isdigit():
                j += 1
            out.append(f"\\g<{text[i + 1 : j]}>")
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


class PrincipalMapper:
    """Parsed ``ssl.principal.mapping.rules``; :meth:`name` maps a distinguished name."""

    def __init__(self, rules: str = "DEFAULT") -> None:
        self.rules_text = rules
        self._rules: list[_Rule] = []
        text = rules.strip()
        pos = 0
        while pos < len(text):
            m = _RULE.match(text, pos)
            if m is None or m.end() == pos:
                raise ConfigError.invalid(
                    "ssl.principal.mapping.rules", rules, f"cannot parse the rule at character {pos}"
                )
            pos = m.end()
            if m.group("default"):
                self._rules.append(_Rule(None))
                continue
            pattern_text = m.group("pattern").replace("\\/", "/")
            try:
                pattern = re.compile(pattern_text)
            except re.error as e:
                raise ConfigError.invalid("ssl.principal.mapping.rules", rules, f"invalid regex {pattern_text!r}: {e}") from None
            replacement = _java_replacement(m.group("replacement").replace("\\/", "/"))
            self._rules.append(_Rule(pattern, replacement, m.group("case")))
        if not self._rules:
            self._rules.append(_Rule(None))

    def name(self, distinguished: str) -> str:
        for rule in self._rules:
            out = rule.apply(distinguished)
            if out is not None:
                return out
        raise NoMatchingRule(f"No rules apply to {distinguished}, rules {self.rules_text}")
