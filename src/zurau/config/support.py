"""What Zurau does with each config: every definition is honoured unless it is listed here.

``INERT`` configs are accepted so that a Kafka ``server.properties`` starts, but have no effect
(the broker warns when one is set: :func:`zurau.config.broker_checks.warn_inert_configs`);
``UNSUPPORTED`` configs accept only their default (any other value is refused with a
:class:`~zurau.config.types.ConfigError`). Each reason ends up in the config's DescribeConfigs
documentation. tests/unit/test_config_support.py checks that every other definition is read by
the code.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from zurau.config.config_def import ConfigKey
from zurau.config.types import ConfigError

__all__ = ["INERT", "NO_SASL", "NO_TLS", "UNSUPPORTED", "is_default", "not_supported", "with_support"]

_JAVA_CLASS_PATH = (
    "plugins are Python packages found by remote.log.storage.manager.class.name (an entry point or "
    "module:attribute), not Java classes"
)
_PURGATORY = "completed delayed operations leave the purgatories at once, so there is nothing to purge"
_OS_BUFFERS = "socket buffer sizes are left to the operating system's auto-tuning"
_NO_QUEUE = (
    "there is no shared request queue; each connection stops reading while 64 of its requests "
    "await their responses"
)
_NO_PREALLOCATE = "segment files are not preallocated (that changes disk allocation only, never the data)"

_NO_STREAMS = (
    "streams groups (KIP-1071) are not served; it only gives the default and bounds of the streams.* "
    "group configs"
)

_NO_SHARE_FETCH = (
    "share groups' records are not delivered yet (ShareFetch and ShareAcknowledge are not served)"
)


INERT: dict[str, str] = {
    "num.network.threads": "network I/O runs on one event loop per process, with no network threads",
    "num.io.threads": "requests are handled on the broker's event loop, with no request handler threads",
    "background.threads": "background work (retention, checkpoints, expiry) runs as tasks on the event loop",
    "num.recovery.threads.per.data.dir": "logs are recovered one after another at start-up",
    "socket.send.buffer.bytes": _OS_BUFFERS,
    "socket.receive.buffer.bytes": _OS_BUFFERS,
    "replica.socket.receive.buffer.bytes": _OS_BUFFERS,
    "queued.max.requests": _NO_QUEUE,
    "queued.max.request.bytes": _NO_QUEUE,
    "ssl.protocol": "the TLS versions a listener accepts are ssl.enabled.protocols (TLSv1.2 and TLSv1.3)",
    "fetch.purgatory.purge.interval.requests": _PURGATORY,
    "producer.purgatory.purge.interval.requests": _PURGATORY,
    "delete.records.purgatory.purge.interval.requests": _PURGATORY,
    "replica.high.watermark.checkpoint.interval.ms": (
        "the high-watermark checkpoint is written with the recovery-point checkpoint, every "
        "log.flush.offset.checkpoint.interval.ms and at shutdown"
    ),
    "log.dir.failure.timeout.ms": (
        "a failed log directory is not taken offline or reported to the controller (JBOD)"
    ),
    "metadata.log.segment.bytes": "the metadata log has 64 MiB segments and is truncated below each snapshot",
    "metadata.log.segment.ms": "the metadata log has 64 MiB segments and is truncated below each snapshot",
    "metadata.max.retention.bytes": "each metadata snapshot deletes the log and the snapshots older than it",
    "metadata.max.retention.ms": "each metadata snapshot deletes the log and the snapshots older than it",
    "metadata.max.idle.interval.ms": "the active controller writes no no-op records to an idle metadata log",
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": (
        "each transaction's timeout is a timer of its own: it is aborted at its deadline, not by a periodic scan"
    ),
    "log.preallocate": _NO_PREALLOCATE,
    "preallocate": _NO_PREALLOCATE,
    "remote.log.storage.manager.class.path": _JAVA_CLASS_PATH,
    "remote.log.metadata.manager.class.path": _JAVA_CLASS_PATH,
    **dict.fromkeys(
        (
            "sasl.kerberos.service.name",
            "sasl.kerberos.kinit.cmd",
            "sasl.kerberos.ticket.renew.window.factor",
            "sasl.kerberos.ticket.renew.jitter",
            "sasl.kerberos.min.time.before.relogin",
        ),
        "Zurau has no Kerberos (GSSAPI) SASL mechanism",
    ),
    **dict.fromkeys(
        (
            "group.streams.session.timeout.ms",
            "group.streams.min.session.timeout.ms",
            "group.streams.max.session.timeout.ms",
            "group.streams.heartbeat.interval.ms",
            "group.streams.min.heartbeat.interval.ms",
            "group.streams.max.heartbeat.interval.ms",
            "group.streams.max.size",
            "group.streams.num.standby.replicas",
            "group.streams.max.standby.replicas",
            "group.streams.initial.rebalance.delay.ms",
        ),
        _NO_STREAMS,
    ),
}

NO_TLS = "it is not a TLS setting Zurau knows (see README, Security)"
NO_SASL = "it is not a SASL setting Zurau knows (see README, Security)"
_PEM_ONLY = "key and trust stores are PEM (ssl.*.type=PEM), which have no store password; ssl.key.password decrypts the key"

UNSUPPORTED: dict[str, str] = {
    "remote.log.metadata.manager.class.name": (
        "the remote log metadata is Kafka's topic-based one (__remote_log_metadata), built in"
    ),
    "create.topic.policy.class.name": "Java policy classes cannot be loaded",
    "alter.config.policy.class.name": "Java policy classes cannot be loaded",
    "max.connection.creation.rate": "new connections are not throttled",
    "group.consumer.migration.policy": (
        "a non-empty group is never converted between the classic and consumer protocols "
        "(an empty group is, when a member of the other protocol joins)"
    ),
    "ssl.keystore.password": _PEM_ONLY,
    "ssl.truststore.password": _PEM_ONLY,
}


def with_support(keys: Iterable[ConfigKey]) -> list[ConfigKey]:
    """``keys`` with their ``inert``/``unsupported`` reasons filled in."""
    return [
        replace(k, inert=INERT.get(k.name, ""), unsupported=UNSUPPORTED.get(k.name, ""))
        if k.name in INERT or k.name in UNSUPPORTED
        else k
        for k in keys
    ]


def is_default(d: ConfigKey, value: Any) -> bool:
    """True when ``value`` is ``d``'s default (strings compared case-insensitively)."""
    if isinstance(value, str) and isinstance(d.default, str):
        return value.lower() == d.default.lower()
    return bool(value == d.default)


def not_supported(name: str, value: Any, reason: str) -> ConfigError:
    """The error refusing a value Zurau does not support, with the reason."""
    return ConfigError.invalid(name, value, f"not supported by Zurau: {reason}")
