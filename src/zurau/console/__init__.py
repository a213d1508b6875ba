"""``zurau console``: a web console for a Kafka-compatible cluster, its schema registry and
Kafka Connect. An edge app: it reaches the cluster only through :mod:`zurau.client` and the other
services only through their REST APIs, so it works against any Kafka-compatible cluster.

Modules: :mod:`.console_config` (settings), :mod:`.cluster_views` (overview, topics, configs,
produce), :mod:`.message_browser` (bounded, filtered scans) with :mod:`.filter_expr` (the safe
filter language) and :mod:`zurau.schema_formats.record_decoding` (string/JSON/hex/Avro/JSON
Schema/Protobuf, shared with the REST proxy), :mod:`.groups_view` (lag,
lag history, offset resets), :mod:`.balancer_views` (the self-balancing cluster: load per broker,
moves in flight, the dry-run plan, rebalance, broker removal; reading and acting are
:mod:`zurau.client.balancer_view`'s, shared with ``zurau balancer``), :mod:`.service_views` and :mod:`.service_clients` (registry,
Connect, REST proxy, metrics over HTTP; the registry's client is
:mod:`zurau.schema_formats.registry_http`), :mod:`.metrics_view` and :mod:`.tier_metrics_view` (a tiered topic's remote tier
from the scraped metrics), :mod:`.web_api` (the JSON API and the front
end in ``static/``), :mod:`.cluster_clients` (one principal's connections), :mod:`.auth` (logins
to a SASL cluster: sessions, cookie, request forgery checks), :mod:`.server` and
:mod:`.embedded_console` (``EmbeddedConsole`` for tests).

It never imports the broker stack (an import-linter contract enforces it).
"""
