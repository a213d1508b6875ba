"""The controller's part of SCRAM credentials: AlterUserScramCredentials as metadata records.

Kafka's ``ScramControlManager`` rules, checked per user (a user's operations all apply or none):

* an empty user name: UNACCEPTABLE_CREDENTIAL "Username must not be empty";
* a mechanism other than SCRAM-SHA-256 (1) / SCRAM-SHA-512 (2): UNSUPPORTED_SASL_MECHANISM;
* the same (user, mechanism) twice in one request (deletion or upsertion): DUPLICATE_RESOURCE;
* iterations below 4096 or above 16384, an empty salt or salted password: UNACCEPTABLE_CREDENTIAL;
* deleting a credential the user does not have: RESOURCE_NOT_FOUND.

An upsertion becomes a ``UserScramCredentialRecord`` whose stored and server keys are derived
from the salted password; a deletion a ``RemoveUserScramCredentialRecord``. Results come one per
user, in the order users first appear in the request.
"""

from __future__ import annotations

from zurau.metadata.controller.result import ControllerResult
from zurau.metadata.image import MetadataImage
from zurau.metadata.records import MetadataRecord, RemoveUserScramCredentialRecord, UserScramCredentialRecord
from zurau.protocol.errors import (
    DuplicateResourceError,
    KafkaError,
    ResourceNotFoundError,
    UnacceptableCredentialError,
    UnsupportedSaslMechanismError,
)
from zurau.protocol.messages import (
    AlterUserScramCredentialsRequestDeletions,
    AlterUserScramCredentialsRequestUpsertions,
    AlterUserScramCredentialsResponseResults,
    DescribeUserScramCredentialsRequestUsers,
    DescribeUserScramCredentialsResponse,
    DescribeUserScramCredentialsResponseResults,
    DescribeUserScramCredentialsResponseResultsCredentialInfos,
)
from zurau.protocol.sasl import ScramMechanism
from zurau.protocol.sasl.scram import MAX_ITERATIONS, MIN_ITERATIONS, credential_from_salted


def _mechanism(value: int) -> ScramMechanism:
    try:
        mech = ScramMechanism(value)
    except ValueError:
        mech = ScramMechanism.UNKNOWN
    if mech is ScramMechanism.UNKNOWN:
        raise UnsupportedSaslMechanismError(f"Unknown SCRAM mechanism {value}")
    return mech


def alter_user_scram_credentials(
    image: MetadataImage,
    deletions: list[AlterUserScramCredentialsRequestDeletions],
    upsertions: list[AlterUserScramCredentialsRequestUpsertions],
) -> ControllerResult[list[AlterUserScramCredentialsResponseResults]]:
    """The records and per-user results of one AlterUserScramCredentials request."""
    users: list[str] = []
    errors: dict[str, KafkaError] = {}
    records: dict[str, list[MetadataRecord]] = {}
    seen: set[tuple[str, int]] = set()
    # (the operation, and the same operation again when it is an upsertion)
    ops: list[tuple[AlterUserScramCredentialsRequestDeletions, AlterUserScramCredentialsRequestUpsertions | None]]
    ops = [(d, None) for d in deletions] + [(u, u) for u in upsertions]
    for op, upsert in ops:
        name = op["name"]
        if name not in records:
            users.append(name)
            records[name] = []
        if name in errors:
            continue
        try:
            if not name:
                raise UnacceptableCredentialError("Username must not be empty")
            mech = _mechanism(op["mechanism"])
            if (name, mech) in seen:
                raise DuplicateResourceError("A user credential cannot be altered twice in the same request")
            seen.add((name, mech))
            if upsert is None:
                if (name, mech) not in image.scram_credentials:
                    raise ResourceNotFoundError("Attempt to delete a user credential that does not exist")
                records[name].append(RemoveUserScramCredentialRecord(name, int(mech)))
                continue
            iterations = upsert["iterations"]
            if iterations < MIN_ITERATIONS:
                raise UnacceptableCredentialError("Too few iterations")
            if iterations > MAX_ITERATIONS:
                raise UnacceptableCredentialError("Too many iterations")
            salt, salted = bytes(upsert["salt"]), bytes(upsert["salted_password"])
            if not salt:
                raise UnacceptableCredentialError("Salt must not be empty")
            if not salted:
                raise UnacceptableCredentialError("Salted password must not be empty")
            c = credential_from_salted(mech, salted, salt, iterations)
            records[name].append(UserScramCredentialRecord(name, int(mech), c.salt, c.stored_key, c.server_key, iterations))
        except KafkaError as failure:
            errors[name] = failure
    out: list[MetadataRecord] = []
    results: list[AlterUserScramCredentialsResponseResults] = []
    for name in users:
        error = errors.get(name)
        if error is None:
            out += records[name]
        results.append(
            {"user": name, "error_code": error.code if error else 0, "error_message": str(error) if error else None}
        )
    return ControllerResult(out, results)


def describe_user_scram_credentials(
    image: MetadataImage, users: list[DescribeUserScramCredentialsRequestUsers] | None
) -> DescribeUserScramCredentialsResponse:
    """DescribeUserScramCredentials from an image: mechanisms and iterations, never keys."""
    by_user: dict[str, list[DescribeUserScramCredentialsResponseResultsCredentialInfos]] = {}
    for (user, mech), cred in sorted(image.scram_credentials.items()):
        by_user.setdefault(user, []).append({"mechanism": int(mech), "iterations": cred.iterations})
    results: list[DescribeUserScramCredentialsResponseResults] = []
    if users is None:
        names = sorted(by_user)
        duplicates: set[str] = set()
    else:
        names = [u["name"] for u in users]
        duplicates = {n for n in names if names.count(n) > 1}
    done: set[str] = set()
    for name in names:
        if name in done:
            continue
        done.add(name)
        if name in duplicates:
            code, message = DuplicateResourceError.code, "Cannot describe SCRAM credentials for the same user twice in a single request"
        elif name not in by_user:
            code, message = ResourceNotFoundError.code, "Attempt to describe a user credential that does not exist"
        else:
            code, message = 0, None
        results.append({"user": name, "error_code": code, "error_message": message,
                        "credential_infos": by_user.get(name, []) if code == 0 else []})
    return {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "results": results}
