"""The error the schema parsers raise: Confluent Schema Registry's error, an HTTP status plus
``{"error_code": N, "message": "..."}``.

The registry's other errors (and their codes) are in :mod:`zurau.schema_registry.errors`, which
re-exports these.
"""

from __future__ import annotations


class RegistryError(Exception):
    """An error the REST layer turns into Confluent's error body."""

    def __init__(self, http_status: int, error_code: int, message: str) -> None:
        super().__init__(message)
        self.http_status = http_status
        self.error_code = error_code
        self.message = message

    def body(self) -> dict[str, object]:
        return {"error_code": self.error_code, "message": self.message}


def invalid_schema(detail: str) -> RegistryError:
    return RegistryError(422, 42201, f"Invalid schema: {detail}")
