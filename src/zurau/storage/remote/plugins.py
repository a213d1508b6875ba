"""Loading the storage plugin named by ``remote.log.storage.manager.class.name``.

:func:`load_remote_storage_manager` resolves the name, in this order:

1. a built-in plugin: ``file`` (:mod:`~zurau.storage.remote.file_remote_storage`) or ``s3``
   (:mod:`~zurau.storage.remote.s3_remote_storage`, needs boto3: ``zurau[tiered]``), case
   ignored; Kafka's ``org.apache.kafka.server.log.remote.storage.LocalTieredStorage`` (its test
   plugin, which also takes its directory as ``dir``) means ``file``;
2. an entry point of that name in the group ``zurau.remote_storage`` (how other packages offer
   plugins: ``[project.entry-points."zurau.remote_storage"] gcs = "mypkg.gcs:GcsStorage"``);
3. a ``module:attribute`` or dotted ``module.attribute`` path.

What it finds is called with no arguments (a class, or any factory), must give an object with the
methods of :class:`~zurau.storage.remote.remote_storage_manager.RemoteStorageManager`, and is then
configured with the plugin's settings. Every failure is a ValueError that names the setting, the
value and what was tried.

:func:`plugin_configs` picks the plugin's settings out of the broker properties: those under the
prefix ``remote.log.storage.manager.impl.prefix`` (default ``rsm.config.``), prefix removed.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from importlib.metadata import entry_points
from typing import Any

from zurau.storage.remote.remote_storage_manager import RemoteStorageManager

CLASS_NAME_CONFIG = "remote.log.storage.manager.class.name"
PREFIX_CONFIG = "remote.log.storage.manager.impl.prefix"
DEFAULT_PREFIX = "rsm.config."
ENTRY_POINT_GROUP = "zurau.remote_storage"


def _file() -> RemoteStorageManager:
    from zurau.storage.remote.file_remote_storage import FileRemoteStorageManager

    return FileRemoteStorageManager()


def _s3() -> RemoteStorageManager:
    try:
        from zurau.storage.remote.s3_remote_storage import S3RemoteStorageManager
    except ImportError as e:
        raise ValueError(
            f"{CLASS_NAME_CONFIG}=s3 needs boto3, which is not installed: pip install 'zurau[tiered]' ({e})"
        ) from e
    return S3RemoteStorageManager()


BUILT_IN: dict[str, Callable[[], RemoteStorageManager]] = {
    "file": _file,
    "s3": _s3,
}
ALIASES: dict[str, str] = {
    "org.apache.kafka.server.log.remote.storage.localtieredstorage": "file",
    "localtieredstorage": "file",
    "zurau.storage.remote.file_remote_storage.fileremotestoragemanager": "file",
    "zurau.storage.remote.file_remote_storage:fileremotestoragemanager": "file",
    "zurau.storage.remote.s3_remote_storage.s3remotestoragemanager": "s3",
    "zurau.storage.remote.s3_remote_storage:s3remotestoragemanager": "s3",
}


def plugin_configs(broker_props: Mapping[str, Any], prefix: str = DEFAULT_PREFIX) -> dict[str, str]:
    """The broker properties under ``prefix``, prefix removed (values as text)."""
    return {
        key[len(prefix) :]: str(value)
        for key, value in broker_props.items()
        if key.startswith(prefix) and value is not None
    }


def _from_entry_point(name: str) -> Callable[[], Any] | None:
    found = list(entry_points(group=ENTRY_POINT_GROUP, name=name))
    if not found:
        return None
    try:
        loaded = found[0].load()
    except Exception as e:
        raise ValueError(
            f"{CLASS_NAME_CONFIG}={name}: the entry point {found[0].value!r} of {ENTRY_POINT_GROUP} "
            f"does not load: {type(e).__name__}: {e}"
        ) from e
    return loaded


def _from_path(name: str) -> Callable[[], Any]:
    if ":" in name:
        module_name, _, attr_path = name.partition(":")
    elif "." in name:
        module_name, _, attr_path = name.rpartition(".")
    else:
        raise ValueError(
            f"{CLASS_NAME_CONFIG}={name!r}: not a built-in plugin ({', '.join(sorted(BUILT_IN))}), "
            f"no entry point of that name in the group {ENTRY_POINT_GROUP}, and not a "
            f"'module:attribute' or 'module.attribute' path"
        )
    if not module_name or not attr_path:
        raise ValueError(f"{CLASS_NAME_CONFIG}={name!r}: not a 'module:attribute' path")
    try:
        obj: Any = importlib.import_module(module_name)
    except ImportError as e:
        raise ValueError(
            f"{CLASS_NAME_CONFIG}={name!r}: cannot import the module {module_name!r}: {e}"
        ) from e
    for part in attr_path.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise ValueError(
                f"{CLASS_NAME_CONFIG}={name!r}: {module_name!r} has no attribute {attr_path!r}"
            ) from None
    return obj


def resolve(class_name: str) -> Callable[[], Any]:
    """The factory ``class_name`` names (see the module docstring); ValueError if none."""
    name = class_name.strip()
    if not name:
        raise ValueError(f"{CLASS_NAME_CONFIG} is empty: name a plugin ({', '.join(sorted(BUILT_IN))}, ...)")
    key = ALIASES.get(name.lower(), name.lower())
    if key in BUILT_IN:
        return BUILT_IN[key]
    return _from_entry_point(name) or _from_path(name)


def load_remote_storage_manager(class_name: str, configs: Mapping[str, str]) -> RemoteStorageManager:
    """Create the plugin ``class_name`` names and configure it with ``configs`` (prefix removed)."""
    factory = resolve(class_name)
    if not callable(factory):
        raise ValueError(f"{CLASS_NAME_CONFIG}={class_name!r} names {factory!r}, which cannot be called")
    try:
        plugin = factory()
    except ValueError:
        raise
    except Exception as e:
        raise ValueError(f"{CLASS_NAME_CONFIG}={class_name!r}: creating the plugin failed: {e}") from e
    if not isinstance(plugin, RemoteStorageManager):
        missing = [
            m
            for m in (
                "configure",
                "copy_log_segment_data",
                "fetch_log_segment",
                "fetch_index",
                "delete_log_segment_data",
                "close",
            )
            if not callable(getattr(plugin, m, None))
        ]
        raise ValueError(
            f"{CLASS_NAME_CONFIG}={class_name!r} gave a {type(plugin).__name__}, which is not a "
            f"RemoteStorageManager (missing {', '.join(missing)})"
        )
    plugin.configure(dict(configs))
    return plugin


__all__ = [
    "CLASS_NAME_CONFIG",
    "DEFAULT_PREFIX",
    "ENTRY_POINT_GROUP",
    "PREFIX_CONFIG",
    "load_remote_storage_manager",
    "plugin_configs",
    "resolve",
]
