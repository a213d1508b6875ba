"""JSON Schema compatibility, after Confluent's JSON Schema rules.

``check(reader, writer)`` answers "does every document valid under ``writer`` stay valid under
``reader``?" and returns the reasons it may not (empty: compatible). BACKWARD checks (new, old),
FORWARD (old, new). The rules follow Confluent's ``JsonSchemaCompatibility`` difference types:

* types: the reader must accept every writer type (``integer`` is within ``number``): a reader
  type set that lost a writer type is TYPE_NARROWED, a changed type TYPE_CHANGED;
* objects, with the *content model* ``additionalProperties`` (open unless it is ``false``):

  - a property only the reader has: fine for a closed writer (the writer never produced it)
    unless the reader requires it; for an open writer it is PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL
    (the writer may have produced anything under that name) unless its schema accepts anything;
  - a property only the writer has: fine if the reader is open and its additionalProperties
    schema accepts it; PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL otherwise;
  - a reader ``required`` name the writer did not require: REQUIRED_ATTRIBUTE_ADDED;
  - an open writer whose reader turned closed: ADDITIONAL_PROPERTIES_REMOVED;

* bounds: ``maximum``/``exclusiveMaximum``/``maxLength``/``maxItems``/``maxProperties`` added or
  decreased, ``minimum``/... added or increased, ``pattern`` added or changed, ``enum`` lost a
  value (or was added), ``const`` changed: each incompatible;
* arrays: ``items`` recursively (a schema or a tuple of schemas);
* ``oneOf``/``anyOf``: every writer branch must be read by some reader branch; a reader
  combination over a plain writer needs one branch that reads it;
* local ``$ref`` (``#/...``) are resolved inside each document; other refs compare by URI.
"""

from __future__ import annotations

from typing import Any

_MAX_KEYS = ("maximum", "exclusiveMaximum", "maxLength", "maxItems", "maxProperties")
_MIN_KEYS = ("minimum", "exclusiveMinimum", "minLength", "minItems", "minProperties")
_ALL_TYPES = {"null", "boolean", "object", "array", "number", "string", "integer"}


def check(reader: Any, writer: Any) -> list[str]:
    out: list[str] = []
    _Checker(reader, writer).check(reader, writer, "#", out, set())
    return out


def _types(schema: dict[str, Any]) -> set[str] | None:
    t = schema.get("type")
    if t is None:
        return None
    return {t} if isinstance(t, str) else set(t)


def _accepts_anything(schema: Any) -> bool:
    if schema is True:
        return True
    return isinstance(schema, dict) and not (set(schema) - {"description", "title", "$comment", "default", "examples"})


class _Checker:
    def __init__(self, reader_root: Any, writer_root: Any) -> None:
        self.reader_root = reader_root
        self.writer_root = writer_root

    @staticmethod
    def _resolve(schema: Any, root: Any) -> Any:
        hops = 0
        while isinstance(schema, dict) and isinstance(schema.get("$ref"), str) and schema["$ref"].startswith("#"):
            target: Any = root
            for part in schema["$ref"][1:].split("/"):
                if not part:
                    continue
                part = part.replace("~1", "/").replace("~0", "~")
                if isinstance(target, dict) and part in target:
                    target = target[part]
                elif isinstance(target, list) and part.isdigit() and int(part) < len(target):
                    target = target[int(part)]
                else:
                    return schema
            schema, hops = target, hops + 1
            if hops > 64:
                return schema
        return schema

    def check(self, reader: Any, writer: Any, path: str, out: list[str], seen: set[tuple[int, int]]) -> None:
        r = self._resolve(reader, self.reader_root)
        w = self._resolve(writer, self.writer_root)
        key = (id(r), id(w))
        if key in seen:
            return
        seen = seen | {key}
        if r is True or r == {} or w is False:
            return
        if r is False:
            out.append(f"SCHEMA_NARROWED at '{path}': the reader accepts nothing")
            return
        if w is True:
            w = {}
        if not isinstance(r, dict) or not isinstance(w, dict):
            out.append(f"TYPE_CHANGED at '{path}'")
            return
        if "$ref" in r or "$ref" in w:
            if r.get("$ref") != w.get("$ref"):
                out.append(f"REFERENCE_CHANGED at '{path}': {w.get('$ref')} -> {r.get('$ref')}")
            return
        for comb in ("oneOf", "anyOf"):
            if comb in w:
                for i, wb in enumerate(w[comb]):
                    self._one_of_reader(r, wb, f"{path}/{comb}/{i}", out, seen)
                return
        for comb in ("oneOf", "anyOf"):
            if comb in r:
                self._one_of_reader(r, w, path, out, seen)
                return
        if "allOf" in r:
            for i, rb in enumerate(r["allOf"]):
                self.check(rb, w, f"{path}/allOf/{i}", out, seen)
            return
        if "allOf" in w:
            merged: dict[str, Any] = {}
            for wb in w["allOf"]:
                wb = self._resolve(wb, self.writer_root)
                if isinstance(wb, dict):
                    merged.update(wb)
            w = {**{k: v for k, v in w.items() if k != "allOf"}, **merged}
        self._check_plain(r, w, path, out, seen)

    def _one_of_reader(self, r: Any, w: Any, path: str, out: list[str], seen: set[tuple[int, int]]) -> None:
        r = self._resolve(r, self.reader_root)
        branches = None
        if isinstance(r, dict):
            branches = r.get("oneOf") or r.get("anyOf")
        if branches is None:
            self.check(r, w, path, out, seen)
            return
        for rb in branches:
            trial: list[str] = []
            self.check(rb, w, path, trial, seen)
            if not trial:
                return
        out.append(f"COMBINED_TYPE_SUBSCHEMAS_CHANGED at '{path}': no reader branch accepts the writer's schema")

    def _check_plain(
        self, r: dict[str, Any], w: dict[str, Any], path: str, out: list[str], seen: set[tuple[int, int]]
    ) -> None:
        rt, wt = _types(r), _types(w)
        if rt is not None:
            wts = wt if wt is not None else _ALL_TYPES
            lost = {t for t in wts if t not in rt and not (t == "integer" and "number" in rt)}
            if lost:
                kind = "TYPE_NARROWED" if rt & wts else "TYPE_CHANGED"
                out.append(f"{kind} at '{path}/type': the reader no longer accepts {sorted(lost)}")
                return
        for k in _MAX_KEYS:
            if k in r and (k not in w or _num(r[k]) < _num(w[k])):
                out.append(f"{k.upper()}_ADDED_OR_DECREASED at '{path}/{k}'")
        for k in _MIN_KEYS:
            if k in r and (k not in w or _num(r[k]) > _num(w[k])):
                out.append(f"{k.upper()}_ADDED_OR_INCREASED at '{path}/{k}'")
        if "pattern" in r and r.get("pattern") != w.get("pattern"):
            out.append(f"PATTERN_ADDED_OR_CHANGED at '{path}/pattern'")
        if "const" in r and r.get("const") != w.get("const"):
            out.append(f"CONST_CHANGED at '{path}/const'")
        if "enum" in r:
            if "enum" not in w:
                out.append(f"ENUM_ADDED at '{path}/enum'")
            else:
                lost_values = [v for v in w["enum"] if v not in r["enum"]]
                if lost_values:
                    out.append(f"ENUM_ARRAY_NARROWED at '{path}/enum': lost {lost_values}")
        if "multipleOf" in r and r.get("multipleOf") != w.get("multipleOf"):
            wm, rm = w.get("multipleOf"), r["multipleOf"]
            if not (isinstance(wm, int | float) and isinstance(rm, int | float) and rm and wm % rm == 0):
                out.append(f"MULTIPLE_OF_ADDED_OR_CHANGED at '{path}/multipleOf'")
        if wt is None or "object" in (wt or set()) or "properties" in w or "properties" in r:
            self._check_object(r, w, path, out, seen)
        if "items" in r or "items" in w:
            self._check_items(r, w, path, out, seen)

    def _check_object(
        self, r: dict[str, Any], w: dict[str, Any], path: str, out: list[str], seen: set[tuple[int, int]]
    ) -> None:
        rprops: dict[str, Any] = r.get("properties") or {}
        wprops: dict[str, Any] = w.get("properties") or {}
        r_add = r.get("additionalProperties", True)
        w_add = w.get("additionalProperties", True)
        w_open = w_add is not False
        r_open = r_add is not False
        if w_open and not r_open:
            out.append(f"ADDITIONAL_PROPERTIES_REMOVED at '{path}/additionalProperties'")
        elif w_open and r_open and not _accepts_anything(r_add):
            if _accepts_anything(w_add):
                out.append(f"ADDITIONAL_PROPERTIES_NARROWED at '{path}/additionalProperties'")
            else:
                self.check(r_add, w_add, f"{path}/additionalProperties", out, seen)
        for name, rp in rprops.items():
            sub = f"{path}/properties/{name}"
            if name in wprops:
                self.check(rp, wprops[name], sub, out, seen)
            elif w_open:
                if _accepts_anything(w_add):
                    if not _accepts_anything(self._resolve(rp, self.reader_root)):
                        out.append(f"PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL at '{sub}'")
                else:
                    self.check(rp, w_add, sub, out, seen)
        for name, wp in wprops.items():
            if name in rprops:
                continue
            sub = f"{path}/properties/{name}"
            if not r_open:
                out.append(f"PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL at '{sub}'")
            elif not _accepts_anything(r_add):
                self.check(r_add, wp, sub, out, seen)
        w_required = set(w.get("required") or ())
        for name in r.get("required") or ():
            if name not in w_required:
                out.append(f"REQUIRED_ATTRIBUTE_ADDED at '{path}/required': '{name}'")

    def _check_items(
        self, r: dict[str, Any], w: dict[str, Any], path: str, out: list[str], seen: set[tuple[int, int]]
    ) -> None:
        ri, wi = r.get("items", True), w.get("items", True)
        if isinstance(ri, list) or isinstance(wi, list):
            rl = ri if isinstance(ri, list) else None
            wl = wi if isinstance(wi, list) else None
            if rl is None or wl is None:
                out.append(f"ITEMS_CHANGED at '{path}/items': a tuple and a list schema")
                return
            for i, (rb, wb) in enumerate(zip(rl, wl, strict=False)):
                self.check(rb, wb, f"{path}/items/{i}", out, seen)
            r_extra, w_extra = r.get("additionalItems", True), w.get("additionalItems", True)
            for i in range(len(rl), len(wl)):
                if r_extra is False:
                    out.append(f"ITEM_REMOVED_FROM_CLOSED_CONTENT_MODEL at '{path}/items/{i}'")
            if len(rl) > len(wl) and w_extra is not False:
                for i in range(len(wl), len(rl)):
                    if not _accepts_anything(rl[i]):
                        out.append(f"ITEM_ADDED_TO_OPEN_CONTENT_MODEL at '{path}/items/{i}'")
            if w_extra is not False and r_extra is False:
                out.append(f"ADDITIONAL_ITEMS_REMOVED at '{path}/additionalItems'")
            return
        self.check(ri, wi, f"{path}/items", out, seen)


def _num(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return float("nan")
    return float(value)
