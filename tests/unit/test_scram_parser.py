"""``zurau storage format --add-scram`` arguments (KIP-900; Kafka's ScramParser syntax and checks)
and the bootstrap metadata file they are written to."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from zurau.metadata.bootstrap_metadata import (
    BOOTSTRAP_FILE,
    read_bootstrap_metadata,
    write_bootstrap_metadata,
)
from zurau.metadata.records import UserScramCredentialRecord
from zurau.metadata.scram_parser import (
    ScramArgument,
    ScramArgumentError,
    parse_argument,
    parse_arguments,
    scram_records,
    split_component,
    split_mechanism,
)
from zurau.protocol.errors import KafkaStorageError
from zurau.protocol.sasl.scram import ScramMechanism, credential_from_salted, scram_credential

SHA256, SHA512 = ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512
# Kafka's test vectors (ScramParserTest / the KIP-900 examples).
SALT_B64 = "MWx2NHBkbnc0ZndxN25vdGN4bTB5eTFrN3E="
SALTED_B64 = "mT0yyUUxnlJaC99HXgRTSYlbuqa4FSGtJCJfTMvjYCE="
SALT, SALTED = base64.b64decode(SALT_B64), base64.b64decode(SALTED_B64)


# ---------------------------------------------------------------------- good arguments


def test_kafka_examples_parse() -> None:
    assert parse_argument("SCRAM-SHA-256=[name=alice,password=alice-secret]") == ScramArgument(
        SHA256, "alice", 4096, password="alice-secret"
    )
    assert parse_argument(
        f'SCRAM-SHA-512=[name=alice,iterations=8192,salt="{SALT_B64}",saltedpassword="{SALTED_B64}"]'
    ) == ScramArgument(SHA512, "alice", 8192, salt=SALT, salted_password=SALTED)
    assert parse_argument("  SCRAM-SHA-512=[name=scram-admin,password=scram-user-secret]\n") == ScramArgument(
        SHA512, "scram-admin", 4096, password="scram-user-secret"
    )


def test_components_quotes_spaces_and_equals_signs() -> None:
    assert split_component("name=foo") == ("name", "foo")
    assert split_component('name="foo"') == ("name", "foo")
    assert split_component("name=") == ("name", "")
    assert split_component('name=""') == ("name", "")
    assert split_component("password=a=b") == ("password", "a=b")  # only the first = splits
    assert split_mechanism("SCRAM-SHA-512=[name=a,password=b]") == (SHA512, "name=a,password=b")
    # A password may hold spaces (Kafka's "my pass"); a salt with or without base64 padding.
    assert parse_argument("SCRAM-SHA-256=[name=bob,password=my pass,iterations=8192]").password == "my pass"
    unpadded = parse_argument(f"SCRAM-SHA-256=[name=bob,password=p,salt={SALT_B64.rstrip('=')}]")
    assert unpadded.salt == SALT


def test_password_records_authenticate_with_that_password() -> None:
    (given_salt,) = scram_records([f"SCRAM-SHA-256=[name=bob,password=my pass,iterations=8192,salt={SALT_B64}]"])
    expected = scram_credential(SHA256, "my pass", iterations=8192, salt=SALT)
    assert given_salt == UserScramCredentialRecord(
        "bob", 1, SALT, expected.stored_key, expected.server_key, 8192
    )
    a, b = scram_records(["SCRAM-SHA-512=[name=bob,password=pw]", "SCRAM-SHA-256=[name=bob,password=pw]"])
    assert (a.mechanism, a.iterations, b.mechanism) == (2, 4096, 1)
    assert len(a.salt) == 32 and a.salt != b.salt  # a random salt each
    assert a.stored_key == scram_credential(SHA512, "pw", salt=a.salt).stored_key


def test_salted_password_record_is_kafkas() -> None:
    (record,) = scram_records([f'SCRAM-SHA-512=[name=alice,salt="{SALT_B64}",saltedpassword="{SALTED_B64}"]'])
    c = credential_from_salted(SHA512, SALTED, SALT, 4096)
    assert record == UserScramCredentialRecord("alice", 2, SALT, c.stored_key, c.server_key, 4096)


def test_iterations_bounds_are_inclusive() -> None:
    assert parse_argument("SCRAM-SHA-256=[name=a,password=p,iterations=4096]").iterations == 4096
    assert parse_argument("SCRAM-SHA-256=[name=a,password=p,iterations=16384]").iterations == 16384


# ---------------------------------------------------------------------- bad arguments


@pytest.mark.parametrize(
    ("argument", "message"),
    [
        ("SCRAM-SHA-512", "Failed to find equals sign in SCRAM argument 'SCRAM-SHA-512'"),
        ("SCRAM-SHA-UNSUPPORTED=[name=a,password=b]", "The add-scram mechanism SCRAM-SHA-UNSUPPORTED is not supported"),
        ("scram-sha-256=[name=a,password=b]", "mechanism scram-sha-256 is not supported"),
        ("PLAIN=[name=a,password=b]", "mechanism PLAIN is not supported"),
        ("SCRAM-SHA-256=name=a,password=b", "Expected configuration string to start with ["),
        ("SCRAM-SHA-256=[name=a,password=b", "Expected configuration string to end with ]"),
        ("SCRAM-SHA-256=[name]", "No equals sign found in SCRAM component: name"),
        ("SCRAM-SHA-256=[]", "No equals sign found in SCRAM component: "),
        ("SCRAM-SHA-256=[password=mypass]", "You must supply 'name' to add-scram"),
        ("SCRAM-SHA-256=[name=,password=mypass]", "'name' given to add-scram must not be empty"),
        ("SCRAM-SHA-256=[name=bar]", "You must supply one of 'password' or 'saltedpassword' to add-scram"),
        (f"SCRAM-SHA-256=[name=a,saltedpassword={SALTED_B64}]", "You must supply 'salt' with 'saltedpassword'"),
        (
            f"SCRAM-SHA-256=[name=a,password=p,salt={SALT_B64},saltedpassword={SALTED_B64}]",
            "only one of 'password' or 'saltedpassword'",
        ),
        (
            "SCRAM-SHA-256=[name=bob,password=mypass,unknown=something,unknown2=somethingelse]",
            "Unknown SCRAM configurations: unknown, unknown2",
        ),
        ("SCRAM-SHA-256=[name=a,name=b,password=p]", "'name' is given twice"),
        ("SCRAM-SHA-256=[name=a,password=p,iterations=4095]", "'iterations' value must be >= 4096 for add-scram using SCRAM-SHA-256"),
        ("SCRAM-SHA-512=[name=a,password=p,iterations=16385]", "'iterations' value must be <= 16384 for add-scram using SCRAM-SHA-512"),
        ("SCRAM-SHA-256=[name=a,password=p,iterations=many]", "Failed to parse iterations count: many"),
        ("SCRAM-SHA-256=[name=a,password=p,iterations=8_192]", "Failed to parse iterations count: 8_192"),
        ("SCRAM-SHA-256=[name=a,password=p,salt=not base64!]", "Failed to decode given salt: not base64!"),
        ("SCRAM-SHA-256=[name=a,password=p,salt=]", "'salt' must not be empty"),
        (f"SCRAM-SHA-256=[name=a,salt={SALT_B64},saltedpassword=%%%]", "Failed to decode given saltedpassword: %%%"),
    ],
)
def test_bad_arguments_are_refused_with_a_clear_message(argument: str, message: str) -> None:
    with pytest.raises(ScramArgumentError) as e:
        scram_records([argument])
    assert message in str(e.value)


def test_the_same_user_and_mechanism_twice_is_refused() -> None:
    ok = parse_arguments(["SCRAM-SHA-256=[name=a,password=p]", "SCRAM-SHA-512=[name=a,password=p]"])
    assert [x.mechanism for x in ok] == [SHA256, SHA512]
    with pytest.raises(ScramArgumentError, match="SCRAM-SHA-256 credential for user a twice"):
        parse_arguments(["SCRAM-SHA-256=[name=a,password=p]", "SCRAM-SHA-256=[name=a,password=q]"])


# ---------------------------------------------------------------------- the bootstrap file


def test_bootstrap_file_round_trip_and_corruption(tmp_path: Path) -> None:
    assert read_bootstrap_metadata(tmp_path) == []  # no file: nothing to bootstrap
    records = scram_records(["SCRAM-SHA-256=[name=a,password=p]", "SCRAM-SHA-512=[name=b,password=q]"])
    path = write_bootstrap_metadata(tmp_path, records, 1_700_000_000_000)
    assert path == tmp_path / BOOTSTRAP_FILE
    assert read_bootstrap_metadata(tmp_path) == records
    path.write_bytes(path.read_bytes()[:-5])  # torn: the footer is incomplete
    with pytest.raises(KafkaStorageError, match="bootstrap metadata .* is corrupt"):
        read_bootstrap_metadata(tmp_path)
