"""A small, safe filter language over records, for the console's message browser.

An expression is Python syntax parsed with :mod:`ast` and compiled into closures; it is never
passed to ``eval``. What is allowed:

* names: ``key``, ``value`` (decoded: a JSON object/list/number, a string, or for undecodable
  bytes their hex), ``headers`` (a dict name -> decoded string, the last value of a repeated
  name), ``timestamp`` (ms since the epoch), ``partition``, ``offset``, ``topic``, and the
  constants ``True``, ``False``, ``None``;
* literals: strings, numbers, and lists/tuples of them (for ``in``);
* ``and``, ``or``, ``not``; comparisons ``== != < <= > >= in not in is is not``; ``+ - * / %``
  on numbers (and ``+`` on strings) and unary ``-``;
* ``x.name`` and ``x["name"]`` / ``x[0]`` on the decoded JSON (a missing field gives
  :data:`MISSING`, which compares unequal to everything and is falsy, so
  ``value.op == "c"`` is simply false for a record without ``op``);
* the functions in :data:`FUNCTIONS` (``len``, ``lower``, ``upper``, ``str``, ``int``, ``float``,
  ``contains``, ``startswith``, ``endswith``, ``matches`` (a regular expression search),
  ``exists``, ``now`` (ms since the epoch)).

Anything else (calls of other names, attribute access on non-JSON values such as
``key.__class__``, comprehensions, lambdas, assignments) is refused at compile time with a
:class:`FilterError` naming the construct and its column. An expression is at most
:data:`MAX_LENGTH` characters and :data:`MAX_NODES` syntax nodes; regular expressions at most
:data:`MAX_PATTERN` characters. Evaluation errors (comparing a string with a number ...) make that
record not match; :class:`CompiledFilter` counts them and keeps the first message.
"""

from __future__ import annotations

import ast
import operator
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

MAX_LENGTH = 2000
MAX_NODES = 300
MAX_PATTERN = 500
MAX_STRING = 1_000_000  # a + on strings may not build anything longer

FIELDS = ("key", "value", "headers", "timestamp", "partition", "offset", "topic")


class FilterError(ValueError):
    """The expression is malformed or uses something the filter language does not allow."""


class _Missing:
    """A field that is not there: falsy, equal only to itself, never ordered."""

    __slots__ = ()

    def __bool__(self) -> bool:
        return False

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()

Env = Mapping[str, Any]
Node = Callable[[Env], Any]


def _get(container: Any, key: Any) -> Any:
    """``container[key]`` on decoded JSON (dicts, lists, strings), MISSING when absent."""
    if isinstance(container, dict):
        return container.get(key, MISSING)
    if isinstance(container, (list, str)) and isinstance(key, int) and not isinstance(key, bool):
        try:
            return container[key]
        except IndexError:
            return MISSING
    return MISSING


def _text(x: Any) -> str:
    if x is MISSING or x is None:
        return ""
    return x if isinstance(x, str) else str(x)


_PATTERNS: dict[str, re.Pattern[str]] = {}


def _matches(text: Any, pattern: Any) -> bool:
    if not isinstance(pattern, str):
        raise TypeError("matches(text, pattern) needs a string pattern")
    rx = _PATTERNS.get(pattern)
    if rx is None:
        if len(pattern) > MAX_PATTERN:
            raise TypeError(f"a pattern is at most {MAX_PATTERN} characters")
        rx = re.compile(pattern)
        if len(_PATTERNS) < 256:
            _PATTERNS[pattern] = rx
    return rx.search(_text(text)) is not None


def _contains(haystack: Any, needle: Any) -> bool:
    if haystack is MISSING or haystack is None:
        return False
    if isinstance(haystack, (dict, list)):
        return needle in haystack
    return _text(needle) in _text(haystack)


def _len(x: Any) -> int:
    if x is MISSING or x is None:
        return 0
    if isinstance(x, (str, list, dict)):
        return len(x)
    raise TypeError(f"len() of a {type(x).__name__}")


FUNCTIONS: dict[str, tuple[Callable[..., Any], int, int]] = {
    # name: (function, min args, max args)
    "len": (_len, 1, 1),
    "lower": (lambda x: _text(x).lower(), 1, 1),
    "upper": (lambda x: _text(x).upper(), 1, 1),
    "str": (_text, 1, 1),
    "int": (lambda x: int(x), 1, 1),
    "float": (lambda x: float(x), 1, 1),
    "contains": (_contains, 2, 2),
    "startswith": (lambda x, p: _text(x).startswith(_text(p)), 2, 2),
    "endswith": (lambda x, p: _text(x).endswith(_text(p)), 2, 2),
    "matches": (_matches, 2, 2),
    "exists": (lambda x: x is not MISSING, 1, 1),
    "now": (lambda: int(time.time() * 1000), 0, 0),
}


def _eq(a: Any, b: Any) -> bool:
    if a is MISSING or b is MISSING:
        return a is b
    return bool(a == b)


def _ordered(op: Callable[[Any, Any], Any]) -> Callable[[Any, Any], bool]:
    def compare(a: Any, b: Any) -> bool:
        if a is MISSING or b is MISSING or a is None or b is None:
            return False
        return bool(op(a, b))

    return compare


def _in(a: Any, b: Any) -> bool:
    if b is MISSING or b is None:
        return False
    if isinstance(b, str):
        return _text(a) in b
    return a in b


_COMPARE: dict[type[ast.cmpop], Callable[[Any, Any], bool]] = {
    ast.Eq: _eq,
    ast.NotEq: lambda a, b: not _eq(a, b),
    ast.Lt: _ordered(operator.lt),
    ast.LtE: _ordered(operator.le),
    ast.Gt: _ordered(operator.gt),
    ast.GtE: _ordered(operator.ge),
    ast.In: _in,
    ast.NotIn: lambda a, b: not _in(a, b),
    ast.Is: lambda a, b: a is b,
    ast.IsNot: lambda a, b: a is not b,
}


def _number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _arith(name: str, op: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    def apply(a: Any, b: Any) -> Any:
        if _number(a) and _number(b):
            return op(a, b)
        if name == "+" and isinstance(a, str) and isinstance(b, str):
            if len(a) + len(b) > MAX_STRING:
                raise TypeError("string too long")
            return a + b
        raise TypeError(f"{name} needs two numbers, got {type(a).__name__} and {type(b).__name__}")

    return apply


_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: _arith("+", operator.add),
    ast.Sub: _arith("-", operator.sub),
    ast.Mult: _arith("*", operator.mul),
    ast.Div: _arith("/", operator.truediv),
    ast.Mod: _arith("%", operator.mod),
}


def _where(node: ast.AST) -> str:
    col = getattr(node, "col_offset", None)
    return f" at column {col + 1}" if col is not None else ""


class _Compiler:
    def __init__(self) -> None:
        self.names: set[str] = set()

    def compile(self, node: ast.AST) -> Node:
        method = getattr(self, f"_{type(node).__name__}", None)
        if method is None:
            raise FilterError(f"{type(node).__name__} is not allowed in a filter{_where(node)}")
        result: Node = method(node)
        return result

    def _Constant(self, node: ast.Constant) -> Node:
        v = node.value
        if not (v is None or isinstance(v, (str, int, float, bool))):
            raise FilterError(f"the constant {v!r} is not allowed{_where(node)}")
        return lambda env: v

    def _Name(self, node: ast.Name) -> Node:
        name = node.id
        if name not in FIELDS:
            known = ", ".join(FIELDS)
            raise FilterError(f"unknown name {name!r}{_where(node)}: use one of {known}")
        self.names.add(name)
        return lambda env: env[name]

    def _List(self, node: ast.List | ast.Tuple) -> Node:
        items = [self.compile(e) for e in node.elts]
        return lambda env: [i(env) for i in items]

    _Tuple = _List

    def _BoolOp(self, node: ast.BoolOp) -> Node:
        parts = [self.compile(v) for v in node.values]
        if isinstance(node.op, ast.And):
            return lambda env: all(p(env) for p in parts)
        return lambda env: any(p(env) for p in parts)

    def _UnaryOp(self, node: ast.UnaryOp) -> Node:
        inner = self.compile(node.operand)
        if isinstance(node.op, ast.Not):
            return lambda env: not inner(env)
        if isinstance(node.op, ast.USub):

            def negate(env: Env) -> Any:
                v = inner(env)
                if not _number(v):
                    raise TypeError(f"unary - needs a number, got {type(v).__name__}")
                return -v

            return negate
        raise FilterError(f"the operator {type(node.op).__name__} is not allowed{_where(node)}")

    def _BinOp(self, node: ast.BinOp) -> Node:
        op = _BINARY.get(type(node.op))
        if op is None:
            raise FilterError(f"the operator {type(node.op).__name__} is not allowed{_where(node)}")
        left, right = self.compile(node.left), self.compile(node.right)
        return lambda env: op(left(env), right(env))

    def _Compare(self, node: ast.Compare) -> Node:
        first = self.compile(node.left)
        rest = []
        for op, comparator in zip(node.ops, node.comparators, strict=True):
            fn = _COMPARE.get(type(op))
            if fn is None:
                raise FilterError(f"the comparison {type(op).__name__} is not allowed{_where(node)}")
            rest.append((fn, self.compile(comparator)))

        if len(rest) == 1:
            fn, second = rest[0]
            return lambda env: fn(first(env), second(env))

        def compare(env: Env) -> bool:
            a = first(env)
            for fn, get in rest:
                b = get(env)
                if not fn(a, b):
                    return False
                a = b
            return True

        return compare

    def _Attribute(self, node: ast.Attribute) -> Node:
        if node.attr.startswith("_"):
            raise FilterError(f"the attribute {node.attr!r} is not allowed{_where(node)}")
        inner, attr = self.compile(node.value), node.attr
        return lambda env: _get(inner(env), attr)

    def _Subscript(self, node: ast.Subscript) -> Node:
        if isinstance(node.slice, ast.Slice):
            raise FilterError(f"slices are not allowed{_where(node)}")
        inner, index = self.compile(node.value), self.compile(node.slice)
        return lambda env: _get(inner(env), index(env))

    def _Call(self, node: ast.Call) -> Node:
        if not isinstance(node.func, ast.Name) or node.func.id not in FUNCTIONS:
            shown = ast.unparse(node.func)
            raise FilterError(
                f"unknown function {shown!r}{_where(node)}: use one of {', '.join(sorted(FUNCTIONS))}"
            )
        if node.keywords:
            raise FilterError(f"keyword arguments are not allowed{_where(node)}")
        name = node.func.id
        fn, lo, hi = FUNCTIONS[name]
        if not lo <= len(node.args) <= hi:
            want = str(lo) if lo == hi else f"{lo} to {hi}"
            raise FilterError(f"{name}() takes {want} argument(s), got {len(node.args)}{_where(node)}")
        args = [self.compile(a) for a in node.args]
        if name == "matches" and isinstance(node.args[1], ast.Constant):
            pattern = node.args[1].value
            if not isinstance(pattern, str):
                raise FilterError(f"matches() needs a string pattern{_where(node)}")
            if len(pattern) > MAX_PATTERN:
                raise FilterError(f"a pattern is at most {MAX_PATTERN} characters")
            try:
                re.compile(pattern)
            except re.error as e:
                raise FilterError(f"bad regular expression {pattern!r}: {e}") from None
        return lambda env: fn(*(a(env) for a in args))


@dataclass
class CompiledFilter:
    """A compiled expression: ``matches(env)`` is True when the record passes.

    ``names`` are the record fields the expression reads (the browser decodes only those);
    ``errors`` counts records whose evaluation failed, ``first_error`` describes the first.
    """

    source: str
    names: frozenset[str]
    _node: Node = field(repr=False)
    errors: int = 0
    first_error: str | None = None

    def matches(self, env: Env) -> bool:
        try:
            return bool(self._node(env))
        except (TypeError, ValueError, OverflowError, ZeroDivisionError, re.error, RecursionError) as e:
            self.errors += 1
            if self.first_error is None:
                self.first_error = f"{type(e).__name__}: {e}"
            return False


def compile_filter(source: str) -> CompiledFilter:
    """Parse and check ``source``; raises :class:`FilterError` with a readable message."""
    text = source.strip()
    if not text:
        raise FilterError("the filter is empty")
    if len(text) > MAX_LENGTH:
        raise FilterError(f"a filter is at most {MAX_LENGTH} characters (got {len(text)})")
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as e:
        col = f" at column {e.offset}" if e.offset else ""
        raise FilterError(f"syntax error{col}: {e.msg}") from None
    count = sum(1 for _ in ast.walk(tree))
    if count > MAX_NODES:
        raise FilterError(f"a filter has at most {MAX_NODES} parts (got {count})")
    compiler = _Compiler()
    node = compiler.compile(tree.body)
    return CompiledFilter(text, frozenset(compiler.names), node)


__all__ = ["FIELDS", "FUNCTIONS", "MISSING", "CompiledFilter", "FilterError", "compile_filter"]
