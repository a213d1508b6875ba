"""``--add-scram`` arguments of ``zurau storage format`` (KIP-900) as SCRAM credential records.

Kafka's ``kafka-storage.sh format --add-scram`` syntax, one credential per argument::

    SCRAM-SHA-256=[name=alice,password=alice-secret]
    SCRAM-SHA-512=[name=alice,iterations=8192,password=alice-secret]
    SCRAM-SHA-256=[name=alice,iterations=8192,salt="MWx2NHBkbnc0ZndxN25vdGN4bTB5eTFrN3E=",
                   saltedpassword="mT0yyUUxnlJaC99HXgRTSYlbuqa4FSGtJCJfTMvjYCE="]

* the argument is trimmed; the mechanism is what precedes the first ``=`` and must be exactly
  ``SCRAM-SHA-256`` or ``SCRAM-SHA-512``; the rest must be ``[...]``;
* inside the brackets, ``key=value`` components separated by commas (so a value cannot hold a
  comma); a value wrapped in double quotes loses them; keys are ``name`` (required, not empty),
  ``password``, ``salt`` and ``saltedpassword`` (base64; padding optional, as Java's decoder),
  ``iterations`` (4096..16384, default 4096);
* either ``password`` (salted here with ``salt``, or a random 32-byte salt) or ``saltedpassword``
  with ``salt`` (the PBKDF2 output Kafka's tools print; nothing is salted here).

Kafka's messages are kept where Kafka has one. Zurau is stricter where Kafka silently keeps the
last of two values or ignores one: an unknown or repeated key, ``password`` together with
``saltedpassword``, an empty name, salt or salted password (the controller would refuse such a
credential later), and the same (user, mechanism) in two arguments are refused too. Every error is a
:class:`ScramArgumentError` naming the argument.

Each credential becomes a ``UserScramCredentialRecord`` (salt, stored key, server key,
iterations; never the password), in argument order. Pure apart from the random salt.
"""

from __future__ import annotations

import base64
import binascii
import re
import secrets
from collections.abc import Iterable
from dataclasses import dataclass

from zurau.metadata.records import UserScramCredentialRecord
from zurau.protocol.sasl.scram import (
    MAX_ITERATIONS,
    MIN_ITERATIONS,
    SCRAM_MECHANISMS,
    ScramMechanism,
    credential_from_salted,
    salted_password,
)

DEFAULT_ITERATIONS = MIN_ITERATIONS
SALT_BYTES = 32
_KEYS = ("name", "password", "salt", "saltedpassword", "iterations")


class ScramArgumentError(ValueError):
    """A malformed ``--add-scram`` argument (the message says what is wrong)."""


@dataclass(frozen=True, slots=True)
class ScramArgument:
    """One parsed ``--add-scram`` argument, before salting."""

    mechanism: ScramMechanism
    name: str
    iterations: int = DEFAULT_ITERATIONS
    password: str | None = None
    salt: bytes | None = None
    salted_password: bytes | None = None

    def to_record(self) -> UserScramCredentialRecord:
        """The credential record (a random salt when none was given)."""
        salt = self.salt if self.salt is not None else secrets.token_bytes(SALT_BYTES)
        if self.salted_password is not None:
            salted = self.salted_password
        else:
            assert self.password is not None
            salted = salted_password(self.mechanism, self.password, salt, self.iterations)
        c = credential_from_salted(self.mechanism, salted, salt, self.iterations)
        return UserScramCredentialRecord(self.name, int(self.mechanism), c.salt, c.stored_key, c.server_key, self.iterations)


def split_mechanism(argument: str) -> tuple[ScramMechanism, str]:
    """``SCRAM-SHA-256=[...]`` -> (mechanism, what is inside the brackets)."""
    text = argument.strip()
    mechanism_name, sep, config = text.partition("=")
    if not sep:
        raise ScramArgumentError(f"Failed to find equals sign in SCRAM argument '{text}'")
    mechanism = SCRAM_MECHANISMS.get(mechanism_name)
    if mechanism is None:
        raise ScramArgumentError(
            f"The add-scram mechanism {mechanism_name} is not supported (use SCRAM-SHA-256 or SCRAM-SHA-512)."
        )
    if not config.startswith("["):
        raise ScramArgumentError(f"Expected configuration string to start with [ in '{text}'")
    if not config.endswith("]"):
        raise ScramArgumentError(f"Expected configuration string to end with ] in '{text}'")
    return mechanism, config[1:-1]


def split_component(component: str) -> tuple[str, str]:
    """``key=value`` (``key="value"``) -> (key, value without the quotes)."""
    key, sep, value = component.partition("=")
    if not sep:
        raise ScramArgumentError(f"No equals sign found in SCRAM component: {component}")
    if len(value) >= 2 and value.startswith('"') and value.endswith('"'):
        value = value[1:-1]
    return key.strip(), value


def _base64(value: str, what: str) -> bytes:
    try:
        data = base64.b64decode(value + "=" * (-len(value) % 4), validate=True)
    except (binascii.Error, ValueError):
        raise ScramArgumentError(f"Failed to decode given {what}: {value}") from None
    if not data:
        raise ScramArgumentError(f"The '{what}' must not be empty")
    return data


def parse_argument(argument: str) -> ScramArgument:
    """One ``--add-scram`` argument (see the module docstring)."""
    mechanism, config = split_mechanism(argument)
    components: dict[str, str] = {}
    for part in config.split(","):
        key, value = split_component(part)
        if key in components:
            raise ScramArgumentError(f"'{key}' is given twice in SCRAM argument '{argument.strip()}'")
        components[key] = value
    unknown = sorted(k for k in components if k not in _KEYS)
    if unknown:
        raise ScramArgumentError(f"Unknown SCRAM configurations: {', '.join(unknown)}")
    name = components.get("name")
    if name is None:
        raise ScramArgumentError("You must supply 'name' to add-scram")
    if not name:
        raise ScramArgumentError("The 'name' given to add-scram must not be empty")
    iterations = DEFAULT_ITERATIONS
    if "iterations" in components:
        text = components["iterations"]
        if not re.fullmatch(r"[+-]?[0-9]{1,9}", text):
            raise ScramArgumentError(f"Failed to parse iterations count: {text}")
        iterations = int(text)
    if iterations < MIN_ITERATIONS:
        raise ScramArgumentError(
            f"The 'iterations' value must be >= {MIN_ITERATIONS} for add-scram using {mechanism.mechanism_name}"
        )
    if iterations > MAX_ITERATIONS:
        raise ScramArgumentError(
            f"The 'iterations' value must be <= {MAX_ITERATIONS} for add-scram using {mechanism.mechanism_name}"
        )
    salt = _base64(components["salt"], "salt") if "salt" in components else None
    password = components.get("password")
    salted_text = components.get("saltedpassword")
    if password is None and salted_text is None:
        raise ScramArgumentError("You must supply one of 'password' or 'saltedpassword' to add-scram")
    if password is not None and salted_text is not None:
        raise ScramArgumentError("Supply only one of 'password' or 'saltedpassword' to add-scram")
    salted = None
    if salted_text is not None:
        if salt is None:
            raise ScramArgumentError("You must supply 'salt' with 'saltedpassword' to add-scram")
        salted = _base64(salted_text, "saltedpassword")
    return ScramArgument(mechanism, name, iterations, password, salt, salted)


def parse_arguments(arguments: Iterable[str]) -> list[ScramArgument]:
    """Every ``--add-scram`` argument, in order; one (user, mechanism) at most once."""
    out: list[ScramArgument] = []
    seen: set[tuple[str, ScramMechanism]] = set()
    for argument in arguments:
        parsed = parse_argument(argument)
        if (parsed.name, parsed.mechanism) in seen:
            raise ScramArgumentError(
                f"--add-scram gives a {parsed.mechanism.mechanism_name} credential for user {parsed.name} twice"
            )
        seen.add((parsed.name, parsed.mechanism))
        out.append(parsed)
    return out


def scram_records(arguments: Iterable[str]) -> list[UserScramCredentialRecord]:
    """The credential records of ``--add-scram`` arguments (Kafka's ``ScramParser.parse``)."""
    return [a.to_record() for a in parse_arguments(arguments)]
