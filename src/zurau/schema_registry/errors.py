"""Confluent Schema Registry's errors: an HTTP status plus ``{"error_code": N, "message": "..."}``.

Codes (Confluent's ``Errors`` class; Karapace returns the same):

* 404: 40401 subject not found, 40402 version not found, 40403 schema not found, 40404 subject
  soft-deleted, 40405 subject not soft-deleted (a permanent delete needs a soft delete first),
  40406 schema version soft-deleted, 40407 schema version not soft-deleted, 40408 subject-level
  compatibility not configured, 40409 subject-level mode not configured.
* 409: error code 409, an incompatible schema (Confluent up to 8.1 and Karapace).
* 422: 42201 invalid schema, 42202 invalid version, 42203 invalid compatibility level, 42204
  invalid mode, 42205 operation not permitted, 42206 a schema still referenced by another.
* 500: 50001 store error, 50002 store timeout, 50003 forwarding to the primary failed, 50004
  primary unknown (Confluent's ``UNKNOWN_LEADER_ERROR_CODE``).

:class:`RegistryError` and :func:`invalid_schema` (which the schema parsers raise) live in
:mod:`zurau.schema_formats.errors`; this module re-exports them.
"""

from __future__ import annotations

from zurau.schema_formats.errors import RegistryError as RegistryError
from zurau.schema_formats.errors import invalid_schema as invalid_schema


def subject_not_found(subject: str) -> RegistryError:
    return RegistryError(404, 40401, f"Subject '{subject}' not found.")


def version_not_found(version: object) -> RegistryError:
    return RegistryError(404, 40402, f"Version {version} not found.")


def schema_not_found(detail: str = "Schema not found") -> RegistryError:
    return RegistryError(404, 40403, detail)


def subject_soft_deleted(subject: str) -> RegistryError:
    return RegistryError(
        404, 40404, f"Subject '{subject}' was soft deleted.Set permanent=true to delete permanently"
    )


def subject_not_soft_deleted(subject: str) -> RegistryError:
    return RegistryError(
        404, 40405, f"Subject '{subject}' was not deleted first before being permanently deleted"
    )


def version_soft_deleted(subject: str, version: int) -> RegistryError:
    return RegistryError(
        404,
        40406,
        f"Subject '{subject}' Version {version} was soft deleted.Set permanent=true to delete permanently",
    )


def version_not_soft_deleted(subject: str, version: int) -> RegistryError:
    return RegistryError(
        404,
        40407,
        f"Subject '{subject}' Version {version} was not deleted first before being permanently deleted",
    )


def subject_compatibility_not_configured(subject: str) -> RegistryError:
    return RegistryError(404, 40408, f"Subject '{subject}' does not have subject-level compatibility configured")


def subject_mode_not_configured(subject: str) -> RegistryError:
    return RegistryError(404, 40409, f"Subject '{subject}' does not have subject-level mode configured")


def incompatible_schema(messages: list[str]) -> RegistryError:
    detail = "; ".join(messages) if messages else "the schema is incompatible"
    return RegistryError(
        409,
        409,
        f"Schema being registered is incompatible with an earlier schema for subject; details: {detail}",
    )


def invalid_version(version: object) -> RegistryError:
    return RegistryError(
        422,
        42202,
        f"The specified version '{version}' is not a valid version id. Allowed values are between "
        "[1, 2^31-1] and the string \"latest\"",
    )


def invalid_compatibility_level(level: object) -> RegistryError:
    return RegistryError(
        422,
        42203,
        f"Invalid compatibility level. Valid values are none, backward, forward, full, "
        f"backward_transitive, forward_transitive, and full_transitive (got {level!r})",
    )


def invalid_mode(mode: object) -> RegistryError:
    return RegistryError(
        422, 42204, f"Invalid mode. Valid values are READWRITE, READONLY and IMPORT (got {mode!r})"
    )


def operation_not_permitted(detail: str) -> RegistryError:
    return RegistryError(422, 42205, detail)


def reference_exists(detail: str) -> RegistryError:
    return RegistryError(422, 42206, detail)


def malformed_body(detail: str) -> RegistryError:
    """A request body that is not JSON (Confluent's Jackson provider answers 400)."""
    return RegistryError(400, 400, f"Unrecognized request body: {detail}")


def unprocessable(detail: str) -> RegistryError:
    """JSON of the wrong shape: a missing or mistyped field (Confluent: 422, error_code 422)."""
    return RegistryError(422, 422, detail)


def store_error(detail: str) -> RegistryError:
    return RegistryError(500, 50001, f"Error while storing the schema registry state: {detail}")


def store_timeout(detail: str) -> RegistryError:
    return RegistryError(500, 50002, f"Timed out while waiting for the schema registry store: {detail}")


def forwarding_failed(message: str) -> RegistryError:
    """50003: the primary could not be reached (Confluent words the message per resource)."""
    return RegistryError(500, 50003, message)


def unknown_leader(message: str) -> RegistryError:
    """50004: no primary is known (no eligible instance, or an election that does not settle)."""
    return RegistryError(500, 50004, message)
