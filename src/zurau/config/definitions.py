"""The broker's and the topics' definition tables, assembled from the areas.

:data:`BROKER_CONFIGS` is every broker config, keyed by Kafka name, in the areas' order (KRaft,
server, log, replication, coordinators, security, self-balancing); :data:`TOPIC_CONFIGS` every
topic config. Both carry what Zurau does with each config (:mod:`zurau.config.support`). Invariants, checked
at import: names are unique, defaults satisfy their own rules, and every config marked inert or
unsupported is defined.
"""

from __future__ import annotations

from zurau.config.balancer_configs import BALANCER_CONFIGS
from zurau.config.config_def import ConfigKey, key_table
from zurau.config.coordinator_configs import COORDINATOR_CONFIGS
from zurau.config.kraft_configs import KRAFT_CONFIGS
from zurau.config.remote_log_configs import REMOTE_LOG_CONFIGS
from zurau.config.replication_configs import REPLICATION_CONFIGS
from zurau.config.security_configs import SECURITY_CONFIGS
from zurau.config.server_configs import SERVER_CONFIGS
from zurau.config.server_log_configs import SERVER_LOG_CONFIGS
from zurau.config.support import INERT, UNSUPPORTED, with_support
from zurau.config.topic_configs import LOG_CONFIGS

__all__ = ["BROKER_CONFIGS", "BROKER_DEFINITIONS_BY_SNAKE_NAME", "TOPIC_CONFIGS", "TOPIC_CONFIG_SYNONYMS"]

TOPIC_CONFIGS: dict[str, ConfigKey] = key_table(with_support(LOG_CONFIGS))

BROKER_CONFIGS: dict[str, ConfigKey] = key_table(
    with_support(
        (
            *KRAFT_CONFIGS,
            *SERVER_CONFIGS,
            *SERVER_LOG_CONFIGS,
            *REMOTE_LOG_CONFIGS,
            *REPLICATION_CONFIGS,
            *COORDINATOR_CONFIGS,
            *SECURITY_CONFIGS,
            *BALANCER_CONFIGS,
        )
    )
)

for _name in (*INERT, *UNSUPPORTED):
    if _name not in TOPIC_CONFIGS and _name not in BROKER_CONFIGS:
        raise AssertionError(f"config {_name} is marked inert or unsupported but not defined")

#: topic config name -> broker synonym names, in priority order.
TOPIC_CONFIG_SYNONYMS: dict[str, tuple[str, ...]] = {
    n: tuple(s.name for s in d.synonyms) for n, d in TOPIC_CONFIGS.items() if d.synonyms
}

#: ``segment_bytes`` -> ``segment.bytes``: the broker config behind a snake_case attribute.
BROKER_DEFINITIONS_BY_SNAKE_NAME: dict[str, str] = {d.snake_name: n for n, d in BROKER_CONFIGS.items()}
