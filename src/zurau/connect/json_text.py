"""Compact JSON text written the way Kafka Connect's Jackson-based JsonConverter writes it.

Byte compatibility matters: downstream tools compare and compact on these bytes. Differences from
Python's ``json.dumps`` that this module takes care of:

* no spaces after ``,`` and ``:``; non-ASCII characters written as UTF-8, not escaped;
* control characters escaped as ``\\b \\t \\n \\f \\r`` or ``\\u00XX`` with upper-case hex;
* doubles as Java's ``Double.toString`` writes them: shortest round-trip digits, plain notation for
  magnitudes in [1e-3, 1e7) (``1.0``, ``0.001``) and ``1.0E7`` / ``1.0E-4`` style otherwise;
  floats (Connect ``float32``) as ``Float.toString``: the shortest digits that round-trip through
  32 bits, same layout;
* exact decimals (:class:`Numeric`) written as plain numbers.
"""

from __future__ import annotations

import decimal
import json
import math
import re
import struct
from typing import Any


class Float32(float):
    """A float to be written with single-precision shortest digits (Connect ``float32``)."""


class Numeric:
    """An exact decimal written as a JSON number (``decimal.format=NUMERIC``)."""

    __slots__ = ("value",)

    def __init__(self, value: decimal.Decimal) -> None:
        self.value = value


_ESCAPE_RE = re.compile(r"\\u00([0-9a-f]{2})")


def _string(s: str) -> str:
    text = json.dumps(s, ensure_ascii=False)
    return _ESCAPE_RE.sub(lambda m: "\\u00" + m.group(1).upper(), text)


def _shortest_digits(x: float, single: bool) -> tuple[str, int]:
    """Decimal digits and exponent (value = 0.d1d2... * 10**exp) of the shortest representation."""
    if single:
        try:
            target = struct.pack(">f", x)
        except OverflowError:
            raise ValueError(f"{x} is out of range for float32") from None
        for precision in range(1, 10):
            candidate = f"{x:.{precision}e}" if precision > 1 else f"{x:.0e}"
            try:
                if struct.pack(">f", float(candidate)) == target:
                    break
            except OverflowError:  # rounded past float32's largest value
                continue
        text = candidate
    else:
        text = repr(x)  # Python's repr is the shortest round-trip form, as Java's since JDK 19
    _, digits, exp = decimal.Decimal(text).normalize().as_tuple()
    assert isinstance(exp, int)
    digit_str = "".join(map(str, digits))
    return digit_str, exp + len(digit_str)


def java_double(x: float, single: bool = False) -> str:
    """``x`` as Java's Double.toString (or Float.toString when ``single``) writes it."""
    if math.isnan(x) or math.isinf(x):
        raise ValueError(f"{x} cannot be written as JSON")
    if x == 0:
        return "-0.0" if math.copysign(1.0, x) < 0 else "0.0"
    sign = "-" if x < 0 else ""
    digits, point = _shortest_digits(abs(x), single)  # value = 0.digits * 10**point
    magnitude = abs(x)
    if 1e-3 <= magnitude < 1e7:
        if point <= 0:
            return f"{sign}0.{'0' * -point}{digits}"
        if point >= len(digits):
            return f"{sign}{digits}{'0' * (point - len(digits))}.0"
        return f"{sign}{digits[:point]}.{digits[point:]}"
    mantissa = digits[0] + "." + (digits[1:] or "0")
    return f"{sign}{mantissa}E{point - 1}"


def dumps(node: Any) -> str:
    """Compact JSON text of ``node`` (dict, list, str, int, float, :class:`Float32`, bool, None,
    :class:`Numeric`), keys in insertion order."""
    out: list[str] = []
    _write(node, out)
    return "".join(out)


def _write(node: Any, out: list[str]) -> None:
    if node is None:
        out.append("null")
    elif node is True:
        out.append("true")
    elif node is False:
        out.append("false")
    elif isinstance(node, str):
        out.append(_string(node))
    elif isinstance(node, Float32):
        out.append(java_double(float(node), single=True))
    elif isinstance(node, float):
        out.append(java_double(node))
    elif isinstance(node, int):
        out.append(str(node))
    elif isinstance(node, Numeric):
        out.append(format(node.value, "f"))
    elif isinstance(node, dict):
        out.append("{")
        for i, (k, v) in enumerate(node.items()):
            if i:
                out.append(",")
            out.append(_string(str(k)))
            out.append(":")
            _write(v, out)
        out.append("}")
    elif isinstance(node, (list, tuple)):
        out.append("[")
        for i, v in enumerate(node):
            if i:
                out.append(",")
            _write(v, out)
        out.append("]")
    else:
        raise TypeError(f"cannot write {type(node).__name__} as JSON")
