"""The ``file`` storage plugin: the RemoteStorageManager contract, its layout and crash safety."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.support.remote_storage_contract import check_contract, fetch, make_segment
from zurau.storage.remote import IndexType, RemoteResourceNotFoundError, RemoteStorageError
from zurau.storage.remote.file_remote_storage import FileRemoteStorageManager
from zurau.types import kafka_uuid


@pytest.fixture
def rsm(tmp_path: Path) -> FileRemoteStorageManager:
    plugin = FileRemoteStorageManager()
    plugin.configure({"dir": str(tmp_path / "remote")})
    return plugin


def test_contract(rsm: FileRemoteStorageManager, tmp_path: Path) -> None:
    check_contract(rsm, tmp_path / "local")
    # Deleting a partition's last segment removes its (then empty) directories.
    assert list((tmp_path / "remote").iterdir()) == []


def test_layout_is_the_documented_one(rsm: FileRemoteStorageManager, tmp_path: Path) -> None:
    seg = make_segment(tmp_path / "local", start_offset=42)
    rsm.copy_log_segment_data(seg.metadata, seg.data)
    tip = seg.metadata.topic_id_partition
    folder = tmp_path / "remote" / f"orders-{kafka_uuid(tip.topic_id)}" / "3"
    stem = f"{42:020d}-{kafka_uuid(seg.metadata.segment_id.id)}"
    names = sorted(os.listdir(folder))
    assert names == sorted(
        f"{stem}.{s}"
        for s in ("log", "index", "timeindex", "txnindex", "snapshot", "leader-epoch-checkpoint")
    )
    for suffix, content in seg.files.items():
        assert (folder / f"{stem}.{suffix}").read_bytes() == content


def test_configure(tmp_path: Path) -> None:
    plugin = FileRemoteStorageManager()
    with pytest.raises(ValueError, match="rsm.config.dir"):
        plugin.configure({})
    (tmp_path / "a-file").write_text("x")
    with pytest.raises(ValueError, match="rsm.config.dir"):
        plugin.configure({"dir": str(tmp_path / "a-file")})
    with pytest.raises(RemoteStorageError, match="not configured"):
        plugin.fetch_log_segment(make_segment(tmp_path / "l").metadata, 0)
    plugin.configure({"dir": str(tmp_path / "new" / "nested")})  # created when missing
    assert (tmp_path / "new" / "nested").is_dir()


def test_a_crash_mid_copy_leaves_no_file_that_looks_complete(
    rsm: FileRemoteStorageManager, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seg = make_segment(tmp_path / "local", log_size=10_000)
    log_path = rsm.path_of(seg.metadata, "log")

    # A failure while the .log is written (after the indexes): the error is a storage error and
    # neither a final .log nor a temporary file is left.
    real_replace = os.replace

    def failing_replace(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
        if str(dst).endswith(".log"):
            raise OSError(5, "Input/output error")
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", failing_replace)
    with pytest.raises(RemoteStorageError) as failure:
        rsm.copy_log_segment_data(seg.metadata, seg.data)
    assert not isinstance(failure.value, RemoteResourceNotFoundError)
    monkeypatch.setattr(os, "replace", real_replace)
    assert not log_path.exists()
    assert not [n for n in os.listdir(log_path.parent) if n.endswith(".tmp")]
    with pytest.raises(RemoteResourceNotFoundError):
        rsm.fetch_log_segment(seg.metadata, 0)

    # A process killed mid-write leaves a partial temporary file: never read, deleted with the segment.
    partial = log_path.with_name(log_path.name + ".0badc0ffee00.tmp")
    partial.write_bytes(seg.log[:100])
    with pytest.raises(RemoteResourceNotFoundError):
        rsm.fetch_log_segment(seg.metadata, 0)
    rsm.delete_log_segment_data(seg.metadata)
    assert not partial.exists()
    assert list((tmp_path / "remote").iterdir()) == []


def test_errors(rsm: FileRemoteStorageManager, tmp_path: Path) -> None:
    seg = make_segment(tmp_path / "local")
    # A local file that retention removed during the copy: a storage error, not "remote not found".
    gone = make_segment(tmp_path / "gone", start_offset=500)
    gone.data.log_segment.unlink()
    with pytest.raises(RemoteStorageError) as failure:
        rsm.copy_log_segment_data(gone.metadata, gone.data)
    assert not isinstance(failure.value, RemoteResourceNotFoundError)

    # Any other OSError is a RemoteStorageError.
    rsm.copy_log_segment_data(seg.metadata, seg.data)
    index_path = rsm.path_of(seg.metadata, "index")
    index_path.unlink()
    index_path.mkdir()
    with pytest.raises(RemoteStorageError) as failure:
        rsm.fetch_index(seg.metadata, IndexType.OFFSET)
    assert not isinstance(failure.value, RemoteResourceNotFoundError)
    assert fetch(rsm, seg, 7, 8) == seg.log[7:9]
