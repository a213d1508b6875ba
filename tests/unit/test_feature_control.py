"""UpdateFeatures at the controller: Kafka's validation rules, error codes and messages, and the
atomic all-or-nothing result."""

from __future__ import annotations

import uuid

from zurau.metadata.controller.feature_control import (
    SAFE_DOWNGRADE,
    UNSAFE_DOWNGRADE,
    UPGRADE,
    FeatureControlManager,
    FeatureUpdate,
)
from zurau.metadata.features import bootstrap_feature_records, supported_ranges
from zurau.metadata.image import MetadataImage
from zurau.metadata.records import BrokerFeature, FeatureLevelRecord, RegisterBrokerRecord

INVALID_UPDATE_VERSION, INVALID_REQUEST = 95, 42


def _image(*brokers: tuple[BrokerFeature, ...]) -> MetadataImage:
    records: list = list(bootstrap_feature_records())
    for i, features in enumerate(brokers, start=1):
        records.append(RegisterBrokerRecord(i, uuid.uuid4(), 10 + i, features=features))
    return MetadataImage("c").apply(records, len(records) - 1)


def _update(image: MetadataImage, *updates: FeatureUpdate, validate_only: bool = False, kraft: int = 0):  # type: ignore[no-untyped-def]
    return FeatureControlManager(1, kraft).update_features(image, list(updates), validate_only)


ALL = tuple(supported_ranges())


def test_a_downgrade_and_an_upgrade_become_records() -> None:
    image = _image(ALL, ALL)
    down = _update(image, FeatureUpdate("group.version", 0, SAFE_DOWNGRADE))
    assert down.response.error_code == 0 and down.records == [FeatureLevelRecord("group.version", 0)]
    image = image.apply(down.records, image.offset + 1)
    assert "group.version" not in image.features
    up = _update(image, FeatureUpdate("group.version", 1))
    assert up.response.error_code == 0 and up.records == [FeatureLevelRecord("group.version", 1)]
    # validate_only and a level already finalized write nothing.
    assert _update(image, FeatureUpdate("group.version", 1), validate_only=True).records == []
    assert _update(image, FeatureUpdate("metadata.version", 29)).records == []


def test_kafkas_error_messages() -> None:
    image = _image(ALL)

    def err(*updates: FeatureUpdate) -> tuple[int, str | None]:
        r = _update(image, *updates)
        assert r.records == []
        return r.response.error_code, r.response.error_message

    assert err(FeatureUpdate("nope.version", 1)) == (
        INVALID_UPDATE_VERSION,
        "Invalid update version 1 for feature nope.version. Local controller 1 does not support this feature.",
    )
    assert err(FeatureUpdate("share.version", 2)) == (
        INVALID_UPDATE_VERSION,
        "Invalid update version 2 for feature share.version. Local controller 1 only supports versions 0-1",
    )
    assert err(FeatureUpdate("group.version", 0)) == (
        INVALID_UPDATE_VERSION,
        "Invalid update version 0 for feature group.version. Can't downgrade the version of this feature without "
        "setting the upgrade type to either safe or unsafe downgrade.",
    )
    assert err(FeatureUpdate("group.version", -1, SAFE_DOWNGRADE))[1] == (
        "Invalid update version -1 for feature group.version. A feature version cannot be less than 0."
    )
    assert err(FeatureUpdate("group.version", 1, 7))[1] == (
        "Invalid update version 1 for feature group.version. The controller does not support the given upgrade type."
    )
    assert err(FeatureUpdate("metadata.version", 22, SAFE_DOWNGRADE)) == (
        INVALID_UPDATE_VERSION,
        "Invalid metadata.version 22. Refusing to perform the requested downgrade because it might delete "
        "metadata information.",
    )
    assert err(FeatureUpdate("metadata.version", 22, UNSAFE_DOWNGRADE))[1] == (
        "Invalid metadata.version 22. Unsafe metadata downgrade is not supported in this version."
    )
    assert err(FeatureUpdate("metadata.version", 6, SAFE_DOWNGRADE))[1] == (
        "Invalid update version 6 for feature metadata.version. Local controller 1 only supports versions 7-29"
    )
    # metadata.version 26 is a safe downgrade, but share.version 1 needs 27.
    assert err(FeatureUpdate("metadata.version", 26, SAFE_DOWNGRADE))[1] == (
        "Invalid update version 26 for feature metadata.version. share.version level 1 depends on "
        "metadata.version level 27"
    )
    assert err(FeatureUpdate("group.version", 1), FeatureUpdate("group.version", 1))[0] == INVALID_REQUEST


def test_the_whole_request_is_checked_against_the_levels_it_leads_to() -> None:
    image = _image(ALL)
    # Together with share.version 0, metadata.version 26 is fine: both records, one batch.
    both = _update(
        image,
        FeatureUpdate("share.version", 0, SAFE_DOWNGRADE),
        FeatureUpdate("metadata.version", 26, SAFE_DOWNGRADE),
    )
    assert both.response.error_code == 0
    assert both.records == [
        FeatureLevelRecord("share.version", 0),
        FeatureLevelRecord("metadata.version", 26),
    ]
    # One bad update and nothing is written.
    mixed = _update(
        image, FeatureUpdate("group.version", 0, SAFE_DOWNGRADE), FeatureUpdate("share.version", 5)
    )
    assert mixed.response.error_code == INVALID_UPDATE_VERSION and mixed.records == []


def test_every_registered_brokers_range_counts() -> None:
    old = (BrokerFeature("metadata.version", 1, 25),)  # a broker of an earlier Zurau
    image = _image(ALL, old)
    r = _update(image, FeatureUpdate("group.version", 0, SAFE_DOWNGRADE))
    assert r.response.error_code == 0  # level 0 is within every range
    image = image.apply(r.records, image.offset + 1)
    r = _update(image, FeatureUpdate("group.version", 1))
    assert r.response.error_message == (
        "Invalid update version 1 for feature group.version. broker 2 does not support this feature."
    )


def test_kraft_version_is_the_quorums() -> None:
    image = _image(ALL)
    assert _update(image, FeatureUpdate("kraft.version", 0)).response.error_code == 0
    static = _update(image, FeatureUpdate("kraft.version", 1))
    assert static.response.error_code == INVALID_UPDATE_VERSION and static.records == []
    dynamic = _update(image, FeatureUpdate("kraft.version", 0, SAFE_DOWNGRADE), kraft=1)
    assert dynamic.response.error_code == INVALID_UPDATE_VERSION
    assert _update(image, FeatureUpdate("kraft.version", 1), kraft=1).response.error_code == 0
    assert UPGRADE == 1
