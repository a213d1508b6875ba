"""Feature levels (KIP-584 / KIP-1022): the supported table, defaults, bootstrap and upgrade
records, dependencies, and the image and snapshot round trip."""

from __future__ import annotations

import uuid

import pytest

from zurau.metadata.bootstrap_metadata import bootstrap_records, write_bootstrap_metadata
from zurau.metadata.features import (
    ELIGIBLE_LEADER_REPLICAS_VERSION,
    GROUP_VERSION,
    KRAFT_VERSION,
    METADATA_VERSION,
    METADATA_VERSION_LATEST,
    SHARE_VERSION,
    TRANSACTION_VERSION,
    bootstrap_feature_records,
    default_levels,
    dependency_error,
    finalized_level,
    metadata_changed_between,
    metadata_version_name,
    release_metadata_version,
    supported_ranges,
    upgrade_feature_records,
    validate_bootstrap_levels,
)
from zurau.metadata.image import MetadataImage
from zurau.metadata.records import (
    BrokerFeature,
    FeatureLevelRecord,
    RegisterBrokerRecord,
    TopicRecord,
    UserScramCredentialRecord,
)
from zurau.metadata.snapshot import decode_snapshot, encode_snapshot, image_from_snapshot

DEFAULTS = {
    METADATA_VERSION: 29,
    TRANSACTION_VERSION: 2,
    GROUP_VERSION: 1,
    ELIGIBLE_LEADER_REPLICAS_VERSION: 1,
    SHARE_VERSION: 1,
}


def test_defaults_are_kafka_42s() -> None:
    assert default_levels() == DEFAULTS
    assert metadata_version_name(METADATA_VERSION_LATEST) == "4.2-IV1"
    ranges = {f.name: (f.min_supported_version, f.max_supported_version) for f in supported_ranges()}
    assert ranges == {
        METADATA_VERSION: (7, 29),
        KRAFT_VERSION: (0, 1),
        TRANSACTION_VERSION: (0, 2),
        GROUP_VERSION: (0, 1),
        ELIGIBLE_LEADER_REPLICAS_VERSION: (0, 1),
        SHARE_VERSION: (0, 1),
    }


def test_bootstrap_records_put_metadata_version_first_and_take_overrides() -> None:
    records = bootstrap_feature_records([FeatureLevelRecord(GROUP_VERSION, 0)])
    assert records[0] == FeatureLevelRecord(METADATA_VERSION, 29)
    assert {r.name: r.feature_level for r in records} == {**DEFAULTS, GROUP_VERSION: 0}


def test_a_release_version_gives_that_releases_defaults() -> None:
    assert release_metadata_version("4.0") == 25
    assert release_metadata_version("3.7-IV2") == 17
    assert release_metadata_version("4.2") == 29
    with pytest.raises(ValueError):
        release_metadata_version("5.9")
    assert default_levels(metadata_version=25) == {
        METADATA_VERSION: 25,
        TRANSACTION_VERSION: 2,
        GROUP_VERSION: 1,
        ELIGIBLE_LEADER_REPLICAS_VERSION: 0,
        SHARE_VERSION: 0,
    }
    assert default_levels(metadata_version=21)[GROUP_VERSION] == 0


def test_dependencies_are_checked_both_ways() -> None:
    assert dependency_error(SHARE_VERSION, 1, {METADATA_VERSION: 26}) == (
        "share.version could not be set to 1 because it depends on metadata.version level 27"
    )
    assert dependency_error(SHARE_VERSION, 1, {METADATA_VERSION: 27}) is None
    # Taking metadata.version below what a finalized feature needs is refused too.
    why = dependency_error(METADATA_VERSION, 23, {METADATA_VERSION: 29, ELIGIBLE_LEADER_REPLICAS_VERSION: 1})
    assert why == "eligible.leader.replicas.version level 1 depends on metadata.version level 24"
    with pytest.raises(ValueError, match="Unsupported feature: nope"):
        validate_bootstrap_levels({**DEFAULTS, "nope": 1})
    with pytest.raises(ValueError, match="Unsupported value 2 for group.version"):
        validate_bootstrap_levels({**DEFAULTS, GROUP_VERSION: 2})
    with pytest.raises(ValueError, match="depends on metadata.version level 27"):
        validate_bootstrap_levels({**DEFAULTS, METADATA_VERSION: 25})


def test_metadata_changes_decide_safe_downgrades() -> None:
    assert not metadata_changed_between(25, 29)
    assert not metadata_changed_between(23, 29)
    assert metadata_changed_between(22, 29)  # 4.0-IV1 changed the metadata


def test_level_zero_is_not_finalized_and_survives_a_snapshot() -> None:
    image = MetadataImage("c").apply(bootstrap_feature_records(), 4)
    assert dict(image.features) == {k: v for k, v in DEFAULTS.items() if v}
    assert finalized_level(image, TRANSACTION_VERSION) == 2 and finalized_level(image, SHARE_VERSION) == 1
    image = image.apply([FeatureLevelRecord(SHARE_VERSION, 0)], 5)
    assert SHARE_VERSION not in image.features and finalized_level(image, SHARE_VERSION) == 0
    again = image_from_snapshot("c", encode_snapshot(image, 0), image.offset)
    assert again.features == image.features
    first = decode_snapshot(encode_snapshot(image, 0))[0]
    assert first == FeatureLevelRecord(METADATA_VERSION, 29)


def test_an_old_log_gets_levels_its_brokers_support() -> None:
    broker = RegisterBrokerRecord(1, uuid.uuid4(), 3, features=(BrokerFeature(METADATA_VERSION, 1, 25),))
    old = MetadataImage("c").apply([TopicRecord("t", uuid.uuid4()), broker], 3)
    records = upgrade_feature_records(old)
    assert records[0] == FeatureLevelRecord(METADATA_VERSION, 25)
    assert {r.name: r.feature_level for r in records}[SHARE_VERSION] == 0
    upgraded = old.apply(records, 3 + len(records))
    assert upgrade_feature_records(upgraded) == []  # once
    # No broker registered yet: this software's defaults.
    assert upgrade_feature_records(MetadataImage("c").apply([TopicRecord("t", uuid.uuid4())], 0))[0] == (
        FeatureLevelRecord(METADATA_VERSION, 29)
    )


def test_bootstrap_file_levels_win_over_defaults(tmp_path) -> None:  # type: ignore[no-untyped-def]
    scram = UserScramCredentialRecord("u", 2, b"s", b"k", b"sk", 4096)
    assert bootstrap_records(tmp_path) == bootstrap_feature_records()
    write_bootstrap_metadata(tmp_path, [FeatureLevelRecord(GROUP_VERSION, 0), scram], 0)
    records = bootstrap_records(tmp_path)
    assert records[-1] == scram and records[0] == FeatureLevelRecord(METADATA_VERSION, 29)
    assert (
        FeatureLevelRecord(GROUP_VERSION, 0) in records
        and FeatureLevelRecord(GROUP_VERSION, 1) not in records
    )
