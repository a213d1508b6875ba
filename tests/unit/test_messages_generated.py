"""``zurau.protocol.messages`` is generated from the schemas and must not go stale.

If this fails after a schema change, run ``python -m zurau.protocol.gen_types``.
"""

from __future__ import annotations

import typing
from pathlib import Path

import pytest

from zurau.protocol import gen_types, messages
from zurau.protocol.schema import Array, Field, Struct
from zurau.protocol.schemas import ALL, DATA


def test_checked_in_messages_module_is_what_the_generator_writes() -> None:
    current = Path(messages.__file__).read_text(encoding="utf-8")
    assert current == gen_types.render(), "messages.py is stale: run python -m zurau.protocol.gen_types"


def test_check_mode_reports_a_stale_file(tmp_path: Path) -> None:
    target = tmp_path / "messages.py"
    assert gen_types.main(["--output", str(target)]) == 0
    assert gen_types.main(["--check", "--output", str(target)]) == 0
    target.write_text(target.read_text() + "# edited\n")
    assert gen_types.main(["--check", "--output", str(target)]) == 1


def _check_class(cls: type, fields: tuple[Field, ...], path: str) -> None:
    hints = typing.get_type_hints(cls)
    assert list(hints) == [f.name for f in fields], f"{path}: keys differ from the schema's fields"
    assert cls.__total__ is False, f"{path}: every key must be optional (the encoder fills defaults)"
    for f in fields:
        t = f.type
        if isinstance(t, Array):
            t = t.of
        if isinstance(t, Struct):
            nested = _typeddict_in(hints[f.name])
            assert nested is not None, f"{path}.{f.name}: no TypedDict for the struct"
            _check_class(nested, t.fields, f"{path}.{f.name}")


def _typeddict_in(hint: object) -> type | None:
    """The TypedDict in X, list[X], X | None or list[X] | None."""
    if typing.is_typeddict(hint):
        return hint  # type: ignore[return-value]
    for arg in typing.get_args(hint):
        found = _typeddict_in(arg)
        if found is not None:
            return found
    return None


@pytest.mark.parametrize("key", sorted(ALL), ids=lambda k: ALL[k].name)
def test_every_api_has_a_request_and_a_response_class_with_the_schemas_fields(key: int) -> None:
    schema = ALL[key]
    _check_class(getattr(messages, f"{schema.name}Request"), schema.request, f"{schema.name}Request")
    _check_class(getattr(messages, f"{schema.name}Response"), schema.response, f"{schema.name}Response")


@pytest.mark.parametrize("name", sorted(DATA))
def test_every_data_struct_has_a_class(name: str) -> None:
    _check_class(getattr(messages, name), DATA[name].fields, name)


def test_nullable_and_versioned_fields_are_typed_and_documented() -> None:
    hints = typing.get_type_hints(messages.FetchRequest)
    assert hints["cluster_id"] == str | None
    text = Path(messages.__file__).read_text(encoding="utf-8")
    assert "    cluster_id: str | None  # v12+, nullable v12+, tagged v12+ (tag 0)\n" in text
    assert "    topic_id: uuid.UUID  # v13+\n" in text
