"""The Avro specification's rules that fastavro's parser does not enforce, checked on the schema
document before the registry gives it an id (Avro's own parsers, Java's as Confluent runs it and
the Apache Python library, reject each of these):

* a union may not directly contain another union (``[["int"]]``);
* a union may not contain two schemas of the same type, except named types (record, enum,
  fixed) with different full names: ``["int", "int"]``, two arrays, two maps, or a named type
  twice are refused; a primitive with a logical type counts as its primitive
  (``["long", {"type": "long", "logicalType": "timestamp-millis"}]`` is a duplicate);
* a record's field names are unique;
* an enum's symbols are unique;
* a fixed's ``size`` is an integer from 0 to 2^31-1 (Java reads it as an ``int``).

:func:`check` raises :class:`~zurau.schema_formats.errors.RegistryError` 42201 for the first
violation. The document has passed the registry's nesting limit, so the walk's recursion is
bounded. Names follow the specification's namespace rules: a dotted name is a full name, else
the enclosing namespace (or the type's own ``namespace``) qualifies it.
"""

from __future__ import annotations

from typing import Any

from zurau.schema_formats.errors import invalid_schema

PRIMITIVES = frozenset({"null", "boolean", "int", "long", "float", "double", "bytes", "string"})
NAMED = frozenset({"record", "error", "enum", "fixed"})


def _full_name(name: str, namespace: str) -> str:
    return name if "." in name or not namespace else f"{namespace}.{name}"


def _namespace(named: dict[str, Any], enclosing: str) -> str:
    ns = named.get("namespace")
    return ns if isinstance(ns, str) else enclosing


def _space_of(full_name: str) -> str:
    return full_name.rpartition(".")[0]


class _Walk:
    def __init__(self, known: set[str]) -> None:
        self.known = known  # full names defined so far (references included)

    def resolve(self, name: str, namespace: str) -> str:
        qualified = _full_name(name, namespace)
        return qualified if qualified in self.known or name not in self.known else name

    def branch_key(self, branch: Any, namespace: str) -> str:
        """What makes two union branches "the same type" (see the module docstring)."""
        if isinstance(branch, str):
            return branch if branch in PRIMITIVES else "named:" + self.resolve(branch, namespace)
        if isinstance(branch, dict):
            t = branch.get("type")
            if isinstance(t, str) and t in NAMED and isinstance(branch.get("name"), str):
                return "named:" + _full_name(branch["name"], _namespace(branch, namespace))
            if isinstance(t, str) and t in PRIMITIVES | {"array", "map"}:
                return t
            if isinstance(t, str | dict | list):
                return self.branch_key(t, namespace)
        return repr(branch)

    def schema(self, s: Any, namespace: str) -> None:
        if isinstance(s, list):
            self.union(s, namespace)
        elif isinstance(s, dict):
            t = s.get("type")
            if isinstance(t, list | dict):
                self.schema(t, namespace)
            elif t in NAMED:
                self.named(s, t, namespace)
            elif t == "array":
                self.schema(s.get("items"), namespace)
            elif t == "map":
                self.schema(s.get("values"), namespace)

    def union(self, branches: list[Any], namespace: str) -> None:
        seen: set[str] = set()
        for branch in branches:
            if isinstance(branch, list) or (isinstance(branch, dict) and isinstance(branch.get("type"), list)):
                raise invalid_schema(f"Nested union: {_short(branches)}")
            self.schema(branch, namespace)  # defines named branches before a later reference
            key = self.branch_key(branch, namespace)
            if key in seen:
                raise invalid_schema(f"Duplicate in union: {key.removeprefix('named:')}")
            seen.add(key)

    def named(self, s: dict[str, Any], t: str, namespace: str) -> None:
        name = s.get("name")
        if not isinstance(name, str):
            return  # fastavro refuses a named type without a name
        full = _full_name(name, _namespace(s, namespace))
        self.known.add(full)
        inner_ns = _space_of(full)
        if t in ("record", "error"):
            fields = s.get("fields")
            names: set[str] = set()
            for f in fields if isinstance(fields, list) else ():
                fname = f.get("name") if isinstance(f, dict) else None
                if isinstance(fname, str):
                    if fname in names:
                        raise invalid_schema(f"Duplicate field {fname} in record {full}")
                    names.add(fname)
                if isinstance(f, dict):
                    self.schema(f.get("type"), inner_ns)
        elif t == "enum":
            symbols = s.get("symbols")
            if isinstance(symbols, list) and len(set(map(repr, symbols))) != len(symbols):
                raise invalid_schema(f"Duplicate enum symbol in enum {full}")
        elif t == "fixed":
            size = s.get("size")
            if isinstance(size, bool) or not isinstance(size, int) or not 0 <= size < 2**31:
                raise invalid_schema(f"Invalid fixed size {_short(size)} in fixed {full}: must be an integer "
                                     "from 0 to 2^31-1")


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def check(document: Any, referenced_names: set[str]) -> None:
    """Refuse (42201) a schema document that breaks a rule in the module docstring;
    ``referenced_names``: full names the schema's references define."""
    _Walk(set(referenced_names)).schema(document, "")
