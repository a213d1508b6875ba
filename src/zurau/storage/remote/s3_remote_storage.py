"""The ``s3`` storage plugin: the remote tier in an S3 bucket or any S3-compatible store (boto3).

Settings (broker properties ``rsm.config.<name>``; needs ``pip install 'zurau[tiered]'``):

==============================  ==============================================================
``s3.bucket``                   the bucket (required; it must exist)
``s3.prefix``                   a key prefix for every object, a folder: ``/`` is appended
                                when missing (default: none)
``s3.region``                   the region (default: the AWS sources', else ``us-east-1``)
``s3.endpoint.url``             another S3-compatible endpoint (MinIO, Ceph, ...), e.g.
                                ``http://minio:9000``
``s3.path.style.access``        ``true``: ``<endpoint>/<bucket>/<key>`` URLs (default: true with
                                ``s3.endpoint.url``, else the SDK's choice)
``s3.access.key.id``,           static credentials (both or neither; ``s3.session.token``
``s3.secret.access.key``        optional); without them the usual AWS sources are used
                                (``AWS_*`` environment, ``~/.aws`` files, instance roles)
``s3.profile``                  a named profile of the ``~/.aws`` files
``s3.upload.part.size``         bytes per part of a multipart upload (default 16 MiB, at least
                                5 MiB: S3's smallest part)
``s3.upload.threshold``         files at least this big go up in parts (default: the part size)
``s3.upload.concurrency``       parts of one file uploaded at once (default 4)
``s3.max.attempts``             attempts per request, the first included, with the SDK's
                                ``standard`` retry mode (exponential backoff; default 3)
``s3.connect.timeout.ms``       (default 10000)
``s3.read.timeout.ms``          socket read timeout (default 30000)
``s3.max.connections``          connection pool size (default 20: reader threads share it)
==============================  ==============================================================

Object keys: ``<s3.prefix><topic>-<topic id>/<partition>/<start offset, 20 digits>-<segment id>.<suffix>``
(the layout of :mod:`zurau.storage.remote.remote_segment_layout`). Every PUT and every completed
multipart upload is atomic in S3, so an object is either whole or absent; a crash in the middle of
a multipart upload leaves an *incomplete upload* (invisible, but billed), which
:meth:`delete_log_segment_data` aborts (a bucket lifecycle rule ``AbortIncompleteMultipartUpload``
is a good second line).

Errors: ``NoSuchKey`` / HTTP 404 is :class:`RemoteResourceNotFoundError`; any other client,
connection or timeout error (after the SDK's retries) is :class:`RemoteStorageError`, also when it
happens while the caller reads a fetched stream. A ranged read that starts at or past the end of
the object gives an empty stream (as the ``file`` plugin does).

Thread safety: one boto3 client, which is thread-safe, serves all calls; the plugin is called from
worker threads (the SDK is synchronous).
"""

from __future__ import annotations

import io
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any, BinaryIO

try:
    import boto3
    import boto3.exceptions
    import botocore.config
    import botocore.exceptions
    from boto3.s3.transfer import TransferConfig
except ImportError as _e:  # pragma: no cover - the plugin loader turns this into a clear message
    raise ImportError("the s3 remote storage plugin needs boto3: pip install 'zurau[tiered]'") from _e

from zurau.storage.remote.file_remote_storage import check_range
from zurau.storage.remote.remote_log_segment import IndexType, LogSegmentData, RemoteLogSegmentMetadata
from zurau.storage.remote.remote_segment_layout import ALL_SUFFIXES, LOG_SUFFIX, segment_prefix, suffix_of
from zurau.storage.remote.remote_storage_manager import RemoteResourceNotFoundError, RemoteStorageError

MIB = 1 << 20
MIN_PART_SIZE = 5 * MIB
MAX_PART_SIZE = 5 * 1024 * MIB
DEFAULTS: dict[str, int] = {
    "s3.upload.part.size": 16 * MIB,
    "s3.upload.concurrency": 4,
    "s3.max.attempts": 3,
    "s3.connect.timeout.ms": 10_000,
    "s3.read.timeout.ms": 30_000,
    "s3.max.connections": 20,
}
_NOT_FOUND_CODES = frozenset({"NoSuchKey", "404", "NotFound"})
_TRANSIENT = (
    botocore.exceptions.BotoCoreError,
    botocore.exceptions.ClientError,
    boto3.exceptions.Boto3Error,
    OSError,
)


def _error_code(e: BaseException) -> str:
    if isinstance(e, botocore.exceptions.ClientError):
        return str(e.response.get("Error", {}).get("Code", ""))
    return ""


@contextmanager
def _s3_errors(what: str) -> Iterator[None]:
    try:
        yield
    except botocore.exceptions.ClientError as e:
        if _error_code(e) in _NOT_FOUND_CODES:
            raise RemoteResourceNotFoundError(f"{what}: not found ({e})") from e
        raise RemoteStorageError(f"{what}: {e}") from e
    except _TRANSIENT as e:
        raise RemoteStorageError(f"{what}: {type(e).__name__}: {e}") from e


class _BodyReader(io.RawIOBase):
    """A botocore ``StreamingBody`` as a raw stream whose read errors are RemoteStorageError."""

    def __init__(self, body: Any, what: str) -> None:
        super().__init__()
        self._body = body
        self._what = what

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        view = memoryview(buffer).cast("B")
        with _s3_errors(self._what):
            data = self._body.read(len(view))
        n = len(data)
        view[:n] = data
        return n

    def close(self) -> None:
        if not self.closed:
            self._body.close()
        super().close()


def _int_setting(configs: Mapping[str, str], name: str, default: int, minimum: int = 1) -> int:
    raw = configs.get(name)
    if raw is None or not str(raw).strip():
        return default
    try:
        value = int(str(raw).strip())
    except ValueError:
        raise ValueError(f"rsm.config.{name}={raw!r} is not an integer") from None
    if value < minimum:
        raise ValueError(f"rsm.config.{name}={value} is below its minimum {minimum}")
    return value


def _bool_setting(configs: Mapping[str, str], name: str) -> bool | None:
    raw = configs.get(name)
    if raw is None or not str(raw).strip():
        return None
    text = str(raw).strip().lower()
    if text not in ("true", "false"):
        raise ValueError(f"rsm.config.{name}={raw!r} is not true or false")
    return text == "true"


class S3RemoteStorageManager:
    """The ``s3`` plugin (see the module docstring)."""

    def __init__(self) -> None:
        self._client: Any = None
        self.bucket = ""
        self.prefix = ""
        self._transfer: TransferConfig | None = None

    def configure(self, configs: Mapping[str, str]) -> None:
        bucket = configs.get("s3.bucket", "").strip()
        if not bucket:
            raise ValueError("the s3 remote storage needs the setting rsm.config.s3.bucket")
        prefix = configs.get("s3.prefix", "").strip().lstrip("/")
        if prefix and not prefix.endswith("/"):
            prefix += "/"
        part_size = _int_setting(
            configs, "s3.upload.part.size", DEFAULTS["s3.upload.part.size"], MIN_PART_SIZE
        )
        if part_size > MAX_PART_SIZE:
            raise ValueError(f"rsm.config.s3.upload.part.size={part_size} is above S3's largest part (5 GiB)")
        threshold = _int_setting(configs, "s3.upload.threshold", part_size, MIN_PART_SIZE)
        concurrency = _int_setting(configs, "s3.upload.concurrency", DEFAULTS["s3.upload.concurrency"])
        attempts = _int_setting(configs, "s3.max.attempts", DEFAULTS["s3.max.attempts"])
        connect_ms = _int_setting(configs, "s3.connect.timeout.ms", DEFAULTS["s3.connect.timeout.ms"])
        read_ms = _int_setting(configs, "s3.read.timeout.ms", DEFAULTS["s3.read.timeout.ms"])
        connections = _int_setting(configs, "s3.max.connections", DEFAULTS["s3.max.connections"])
        endpoint = configs.get("s3.endpoint.url", "").strip() or None
        path_style = _bool_setting(configs, "s3.path.style.access")
        if path_style is None:
            path_style = endpoint is not None
        key_id = configs.get("s3.access.key.id", "").strip() or None
        secret = configs.get("s3.secret.access.key", "").strip() or None
        if (key_id is None) != (secret is None):
            raise ValueError("rsm.config.s3.access.key.id and rsm.config.s3.secret.access.key go together")
        region = configs.get("s3.region", "").strip() or None
        profile = configs.get("s3.profile", "").strip() or None

        try:
            session = boto3.session.Session(
                aws_access_key_id=key_id,
                aws_secret_access_key=secret,
                aws_session_token=configs.get("s3.session.token", "").strip() or None,
                region_name=region,
                profile_name=profile,
            )
            client_config = botocore.config.Config(
                retries={"total_max_attempts": attempts, "mode": "standard"},
                connect_timeout=connect_ms / 1000,
                read_timeout=read_ms / 1000,
                max_pool_connections=connections,
                s3={"addressing_style": "path"} if path_style else None,
            )
            client = session.client(
                "s3",
                region_name=region or session.region_name or "us-east-1",
                endpoint_url=endpoint,
                config=client_config,
            )
        except (botocore.exceptions.BotoCoreError, ValueError) as e:
            raise ValueError(f"the s3 remote storage settings are not usable: {e}") from e
        if self._client is not None:
            self._client.close()
        self._client = client
        self.bucket = bucket
        self.prefix = prefix
        self._transfer = TransferConfig(
            multipart_threshold=threshold,
            multipart_chunksize=part_size,
            max_concurrency=concurrency,
            use_threads=concurrency > 1,
        )

    @property
    def client(self) -> Any:
        if self._client is None:
            raise RemoteStorageError("the s3 remote storage is not configured")
        return self._client

    def key_of(self, metadata: RemoteLogSegmentMetadata, suffix: str) -> str:
        return f"{self.prefix}{segment_prefix(metadata)}.{suffix}"

    # -- copy ------------------------------------------------------------------------------------
    def copy_log_segment_data(self, metadata: RemoteLogSegmentMetadata, data: LogSegmentData) -> bytes | None:
        client = self.client
        uploads: list[tuple[str, Any]] = [
            (suffix_of(IndexType.OFFSET), data.offset_index),
            (suffix_of(IndexType.TIMESTAMP), data.time_index),
        ]
        if data.transaction_index is not None:
            uploads.append((suffix_of(IndexType.TRANSACTION), data.transaction_index))
        uploads += [
            (suffix_of(IndexType.PRODUCER_SNAPSHOT), data.producer_snapshot),
            (suffix_of(IndexType.LEADER_EPOCH), data.leader_epoch_index),
            (LOG_SUFFIX, data.log_segment),
        ]
        for suffix, source in uploads:
            key = self.key_of(metadata, suffix)
            what = f"copying {metadata.segment_id} to s3://{self.bucket}/{key}"
            try:
                with _s3_errors(what):
                    if isinstance(source, bytes):
                        client.put_object(Bucket=self.bucket, Key=key, Body=source)
                    else:
                        client.upload_file(str(source), self.bucket, key, Config=self._transfer)
            except RemoteResourceNotFoundError as e:
                # e.g. a missing bucket: not a missing object of the segment.
                raise RemoteStorageError(str(e)) from e
        return None

    # -- fetch -----------------------------------------------------------------------------------
    def fetch_log_segment(
        self, metadata: RemoteLogSegmentMetadata, start_position: int, end_position: int | None = None
    ) -> BinaryIO:
        check_range(start_position, end_position)
        key = self.key_of(metadata, LOG_SUFFIX)
        what = f"fetching s3://{self.bucket}/{key} from {start_position}"
        byte_range = f"bytes={start_position}-{'' if end_position is None else end_position}"
        try:
            with _s3_errors(what):
                response = self.client.get_object(Bucket=self.bucket, Key=key, Range=byte_range)
        except RemoteStorageError as e:
            if _error_code(e.__cause__ or e) == "InvalidRange":  # past the end of the object
                return io.BytesIO(b"")
            raise
        return io.BufferedReader(_BodyReader(response["Body"], what))

    def fetch_index(self, metadata: RemoteLogSegmentMetadata, index_type: IndexType) -> BinaryIO:
        key = self.key_of(metadata, suffix_of(index_type))
        with _s3_errors(f"fetching s3://{self.bucket}/{key}"):
            response = self.client.get_object(Bucket=self.bucket, Key=key)
            with response["Body"] as body:
                return io.BytesIO(body.read())  # small: read now, so errors surface here

    # -- delete ----------------------------------------------------------------------------------
    def delete_log_segment_data(self, metadata: RemoteLogSegmentMetadata) -> None:
        client = self.client
        keys = [self.key_of(metadata, suffix) for suffix in ALL_SUFFIXES]
        what = (
            f"deleting {metadata.segment_id} from s3://{self.bucket}/{self.prefix}{segment_prefix(metadata)}"
        )
        with _s3_errors(what):
            response = client.delete_objects(
                Bucket=self.bucket, Delete={"Objects": [{"Key": k} for k in keys], "Quiet": True}
            )
            errors = [e for e in response.get("Errors", []) if e.get("Code") != "NoSuchKey"]
            if errors:
                raise RemoteStorageError(f"{what}: {errors}")
            self._abort_incomplete_uploads(f"{self.prefix}{segment_prefix(metadata)}.")

    def _abort_incomplete_uploads(self, key_prefix: str) -> None:
        """Abort the multipart uploads a crashed copy left (one page: a segment has few files)."""
        try:
            response = self.client.list_multipart_uploads(Bucket=self.bucket, Prefix=key_prefix)
        except botocore.exceptions.ClientError as e:
            if _error_code(e) in ("NotImplemented", "AccessDenied"):
                return  # a store without the call, or no permission: the lifecycle rule's job
            raise
        for upload in response.get("Uploads", []):
            try:
                self.client.abort_multipart_upload(
                    Bucket=self.bucket, Key=upload["Key"], UploadId=upload["UploadId"]
                )
            except botocore.exceptions.ClientError as e:
                if _error_code(e) != "NoSuchUpload":
                    raise

    def close(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            client.close()


__all__ = ["DEFAULTS", "MIN_PART_SIZE", "S3RemoteStorageManager"]
