"""Loading the storage plugin of ``remote.log.storage.manager.class.name`` and its settings."""

from __future__ import annotations

import sys
import types
from collections.abc import Iterator, Mapping
from importlib.metadata import EntryPoint
from pathlib import Path
from typing import Any

import pytest

from zurau.storage.remote import plugins
from zurau.storage.remote.file_remote_storage import FileRemoteStorageManager
from zurau.storage.remote.plugins import load_remote_storage_manager, plugin_configs
from zurau.storage.remote.s3_remote_storage import S3RemoteStorageManager


class RecordingStorage:
    """A minimal third-party plugin: remembers its settings."""

    def __init__(self) -> None:
        self.configs: dict[str, str] = {}

    def configure(self, configs: Mapping[str, str]) -> None:
        self.configs = dict(configs)

    def copy_log_segment_data(self, metadata: Any, data: Any) -> None:
        return None

    def fetch_log_segment(self, metadata: Any, start_position: int, end_position: int | None = None) -> Any:
        raise NotImplementedError

    def fetch_index(self, metadata: Any, index_type: Any) -> Any:
        raise NotImplementedError

    def delete_log_segment_data(self, metadata: Any) -> None:
        pass

    def close(self) -> None:
        pass


class NotAStorage:
    def configure(self, configs: Mapping[str, str]) -> None:
        pass


@pytest.fixture
def plugin_module() -> Iterator[str]:
    """A module ``zurau_test_rsm_plugins`` holding the classes above (as a third party's would)."""
    module = types.ModuleType("zurau_test_rsm_plugins")
    module.RecordingStorage = RecordingStorage  # type: ignore[attr-defined]
    module.NotAStorage = NotAStorage  # type: ignore[attr-defined]
    module.nested = types.SimpleNamespace(Storage=RecordingStorage)  # type: ignore[attr-defined]
    sys.modules[module.__name__] = module
    yield module.__name__
    del sys.modules[module.__name__]


def test_plugin_configs_strip_the_prefix() -> None:
    props = {
        "rsm.config.dir": "/mnt/remote",
        "rsm.config.s3.bucket": "b",
        "remote.log.storage.system.enable": "true",
        "rsm.configs.other": "x",
        "log.dirs": "/data",
    }
    assert plugin_configs(props) == {"dir": "/mnt/remote", "s3.bucket": "b"}
    assert plugin_configs({"my.dir": "/x", "rsm.config.dir": "/y", "n": 1}, prefix="my.") == {"dir": "/x"}
    assert plugin_configs({"rsm.config.s3.max.attempts": 2}) == {"s3.max.attempts": "2"}


def test_built_in_plugins_and_aliases(tmp_path: Path) -> None:
    for name in ("file", "FILE", " file ", "org.apache.kafka.server.log.remote.storage.LocalTieredStorage"):
        rsm = load_remote_storage_manager(name, {"dir": str(tmp_path)})
        assert isinstance(rsm, FileRemoteStorageManager)
        assert rsm.root == tmp_path
    rsm = load_remote_storage_manager(
        "zurau.storage.remote.file_remote_storage:FileRemoteStorageManager", {"dir": str(tmp_path)}
    )
    assert isinstance(rsm, FileRemoteStorageManager)
    s3 = load_remote_storage_manager(
        "s3", {"s3.bucket": "bkt", "s3.prefix": "kafka", "s3.region": "eu-west-1"}
    )
    assert isinstance(s3, S3RemoteStorageManager)
    assert (s3.bucket, s3.prefix) == ("bkt", "kafka/")
    s3.close()


def test_built_in_settings_are_checked(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="rsm.config.dir"):
        load_remote_storage_manager("file", {})
    with pytest.raises(ValueError, match="rsm.config.s3.bucket"):
        load_remote_storage_manager("s3", {})
    bad: list[dict[str, str]] = [
        {"s3.upload.part.size": "1048576"},  # below S3's 5 MiB smallest part
        {"s3.max.attempts": "many"},
        {"s3.max.attempts": "0"},
        {"s3.access.key.id": "only-the-id"},
        {"s3.path.style.access": "yes"},
    ]
    for extra in bad:
        with pytest.raises(ValueError, match="rsm.config.s3"):
            load_remote_storage_manager("s3", {"s3.bucket": "b", **extra})


def test_paths(plugin_module: str) -> None:
    for name in (
        f"{plugin_module}:RecordingStorage",
        f"{plugin_module}.RecordingStorage",
        f"{plugin_module}:nested.Storage",
    ):
        rsm = load_remote_storage_manager(name, {"k": "v"})
        assert isinstance(rsm, RecordingStorage)
        assert rsm.configs == {"k": "v"}


def test_entry_points(monkeypatch: pytest.MonkeyPatch, plugin_module: str) -> None:
    eps = [
        EntryPoint(
            name="recording", value=f"{plugin_module}:RecordingStorage", group=plugins.ENTRY_POINT_GROUP
        ),
        EntryPoint(name="broken", value="zurau_no_such_module_xyz:Thing", group=plugins.ENTRY_POINT_GROUP),
    ]

    def fake_entry_points(*, group: str, name: str) -> list[EntryPoint]:
        return [ep for ep in eps if ep.group == group and ep.name == name]

    monkeypatch.setattr(plugins, "entry_points", fake_entry_points)
    rsm = load_remote_storage_manager("recording", {"a": "1"})
    assert isinstance(rsm, RecordingStorage)
    assert rsm.configs == {"a": "1"}
    with pytest.raises(ValueError, match="entry point .*does not load"):
        load_remote_storage_manager("broken", {})


def test_unknown_names_say_what_was_tried(plugin_module: str) -> None:
    with pytest.raises(ValueError, match=r"not a built-in plugin \(file, s3\).*zurau.remote_storage"):
        load_remote_storage_manager("gcs", {})
    with pytest.raises(ValueError, match="is empty"):
        load_remote_storage_manager("  ", {})
    with pytest.raises(ValueError, match="cannot import the module 'no_such_pkg_zz'"):
        load_remote_storage_manager("no_such_pkg_zz.Storage", {})
    with pytest.raises(ValueError, match="has no attribute 'Missing'"):
        load_remote_storage_manager(f"{plugin_module}:Missing", {})
    with pytest.raises(ValueError, match=r"not a RemoteStorageManager \(missing copy_log_segment_data"):
        load_remote_storage_manager(f"{plugin_module}:NotAStorage", {})
