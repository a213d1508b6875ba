"""A schema reference, as a schema's ``references`` list and the ``_schemas`` records name it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Reference:
    """A schema reference: ``name`` as the referring schema names it, and the subject/version."""

    name: str
    subject: str
    version: int

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "subject": self.subject, "version": self.version}
