"""The ``s3`` storage plugin against a real S3-compatible server process (moto's, see
:mod:`zurau.testing.s3_server`): the contract every plugin keeps, multipart uploads, byte-exact
ranged reads across part boundaries, missing objects, incomplete uploads, and a dead server."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest

from tests.support.remote_storage_contract import check_contract, fetch, index, make_segment
from zurau.storage.remote import IndexType, RemoteResourceNotFoundError, RemoteStorageError
from zurau.storage.remote.plugins import load_remote_storage_manager
from zurau.storage.remote.s3_remote_storage import MIN_PART_SIZE, S3RemoteStorageManager
from zurau.testing.s3_server import S3Server
from zurau.types import kafka_uuid

BUCKET = "zurau-tiered"


@pytest.fixture(scope="module")
def s3_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    """moto's S3 server as a process on a free port of 127.0.0.1, stopped by its pid at the end."""
    with S3Server(log_path=tmp_path_factory.mktemp("s3") / "moto.log") as server:
        server.create_bucket(BUCKET)
        yield server


@pytest.fixture
def rsm(s3_server: S3Server) -> Iterator[S3RemoteStorageManager]:
    prefix = f"run-{uuid.uuid4().hex[:8]}"
    plugin = load_remote_storage_manager(
        "s3",
        s3_server.plugin_configs(
            BUCKET, **{"s3.prefix": prefix, "s3.upload.part.size": str(MIN_PART_SIZE), "s3.max.attempts": "2"}
        ),
    )
    assert isinstance(plugin, S3RemoteStorageManager)
    yield plugin
    plugin.close()


def s3_client(server: S3Server) -> Any:
    configs = server.plugin_configs(BUCKET)
    return boto3.client(
        "s3",
        endpoint_url=server.endpoint_url,
        region_name=configs["s3.region"],
        aws_access_key_id=configs["s3.access.key.id"],
        aws_secret_access_key=configs["s3.secret.access.key"],
    )


def test_contract(rsm: S3RemoteStorageManager, s3_server: S3Server, tmp_path: Path) -> None:
    check_contract(rsm, tmp_path)
    # Every object of every deleted segment is gone.
    listed = s3_client(s3_server).list_objects_v2(Bucket=BUCKET, Prefix=rsm.prefix)
    assert listed.get("KeyCount", 0) == 0


def test_multipart_upload_ranged_reads_and_layout(
    rsm: S3RemoteStorageManager, s3_server: S3Server, tmp_path: Path
) -> None:
    seg = make_segment(tmp_path, start_offset=7, log_size=11 * (1 << 20) + 12_345)
    rsm.copy_log_segment_data(seg.metadata, seg.data)
    client = s3_client(s3_server)
    tip = seg.metadata.topic_id_partition
    stem = (
        f"{rsm.prefix}orders-{kafka_uuid(tip.topic_id)}/3/{7:020d}-{kafka_uuid(seg.metadata.segment_id.id)}"
    )
    keys = {o["Key"] for o in client.list_objects_v2(Bucket=BUCKET, Prefix=rsm.prefix)["Contents"]}
    assert keys == {
        f"{stem}.{s}"
        for s in ("log", "index", "timeindex", "txnindex", "snapshot", "leader-epoch-checkpoint")
    }
    # Three parts of 5 MiB, 5 MiB and the rest: a multipart object's ETag ends in "-<parts>".
    head = client.head_object(Bucket=BUCKET, Key=f"{stem}.log")
    assert head["ContentLength"] == len(seg.log)
    assert head["ETag"].strip('"').endswith("-3")

    log, part = seg.log, MIN_PART_SIZE
    assert fetch(rsm, seg, 0) == log
    for start, end in [
        (part - 10, part + 9),
        (2 * part - 1, 2 * part),
        (len(log) - 100, None),
        (12_345, 12_345),
    ]:
        assert fetch(rsm, seg, start, end) == log[start : None if end is None else end + 1]
    assert index(rsm, seg, IndexType.TIMESTAMP) == seg.files["timeindex"]


def test_missing_objects_and_incomplete_uploads(
    rsm: S3RemoteStorageManager, s3_server: S3Server, tmp_path: Path
) -> None:
    seg = make_segment(tmp_path)
    rsm.copy_log_segment_data(seg.metadata, seg.data)
    client = s3_client(s3_server)
    client.delete_object(Bucket=BUCKET, Key=rsm.key_of(seg.metadata, "index"))
    with pytest.raises(RemoteResourceNotFoundError):
        rsm.fetch_index(seg.metadata, IndexType.OFFSET)
    assert fetch(rsm, seg, 0, 9) == seg.log[:10]

    # A copy that crashed mid-multipart left an incomplete upload: deleting the segment aborts it.
    log_key = rsm.key_of(seg.metadata, "log")
    client.create_multipart_upload(Bucket=BUCKET, Key=log_key)
    rsm.delete_log_segment_data(seg.metadata)
    assert client.list_multipart_uploads(Bucket=BUCKET, Prefix=rsm.prefix).get("Uploads", []) == []
    with pytest.raises(RemoteResourceNotFoundError):
        rsm.fetch_log_segment(seg.metadata, 0)

    # A missing bucket is a storage error, not a missing segment.
    other = load_remote_storage_manager(
        "s3", s3_server.plugin_configs("no-such-bucket", **{"s3.max.attempts": "1"})
    )
    with pytest.raises(RemoteStorageError) as failure:
        other.copy_log_segment_data(seg.metadata, seg.data)
    assert not isinstance(failure.value, RemoteResourceNotFoundError)
    other.close()


def test_a_stopped_server_is_a_retriable_storage_error(tmp_path: Path) -> None:
    seg = make_segment(tmp_path / "local")
    server = S3Server(log_path=tmp_path / "moto.log").start()
    try:
        server.create_bucket(BUCKET)
        rsm = load_remote_storage_manager(
            "s3",
            server.plugin_configs(BUCKET, **{"s3.max.attempts": "2", "s3.connect.timeout.ms": "1000"}),
        )
        rsm.copy_log_segment_data(seg.metadata, seg.data)
        with rsm.fetch_log_segment(seg.metadata, 0) as stream:
            assert stream.read(10) == seg.log[:10]
    finally:
        server.stop()
    for call in (
        lambda: rsm.fetch_log_segment(seg.metadata, 0),
        lambda: rsm.fetch_index(seg.metadata, IndexType.OFFSET),
        lambda: rsm.copy_log_segment_data(seg.metadata, seg.data),
        lambda: rsm.delete_log_segment_data(seg.metadata),
    ):
        with pytest.raises(RemoteStorageError) as failure:
            call()
        assert not isinstance(failure.value, RemoteResourceNotFoundError)
    rsm.close()
