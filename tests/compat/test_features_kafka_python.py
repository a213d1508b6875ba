"""kafka-python's admin client reads and changes feature levels (KIP-584): ``describe_features``
(ApiVersions v3+ on any broker) sees Zurau's supported ranges and finalized levels with their
epoch, ``update_features`` (UpdateFeatures v2, sent to the controller Metadata names) downgrades
and upgrades a level, and a refused update raises Kafka's InvalidUpdateVersionError."""

from __future__ import annotations

import pytest
from kafka.admin import KafkaAdminClient
from kafka.errors import InvalidUpdateVersionError

from zurau.embedded import EmbeddedBroker


def test_describe_and_update_features() -> None:
    with EmbeddedBroker() as broker:
        admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers)
        try:
            before = admin.describe_features()
            assert before["metadata.version"]["supported"] == (7, 29)
            assert before["metadata.version"]["finalized"] == (29, 29)
            assert before["group.version"] == {
                "supported": (0, 1),
                "finalized": (1, 1),
                "finalized_epoch": before["group.version"]["finalized_epoch"],
            }
            epoch = before["group.version"]["finalized_epoch"]
            assert epoch is not None and epoch >= 0

            assert admin.update_features({"group.version": ("SAFE_DOWNGRADE", 0)}) == {"group.version": "OK"}
            after = admin.describe_features()
            assert (
                "finalized" not in after["group.version"]
                and after["metadata.version"]["finalized_epoch"] > epoch
            )

            assert admin.update_features({"group.version": 1}, validate_only=True) == {"group.version": "OK"}
            assert "finalized" not in admin.describe_features()["group.version"]
            assert admin.update_features({"group.version": 1}) == {"group.version": "OK"}
            assert admin.describe_features()["group.version"]["finalized"] == (1, 1)

            with pytest.raises(InvalidUpdateVersionError, match="only supports versions 0-1"):
                admin.update_features({"share.version": 2})
        finally:
            admin.close()
