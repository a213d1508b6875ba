"""A Kafka REST proxy compatible with Confluent's (v3 and v2 APIs), with streaming consume.

An edge app: it reaches the cluster only through :mod:`zurau.client`, so it works against any
Kafka-compatible cluster. Modules:

* :mod:`.proxy_config`: settings with Confluent kafka-rest's names;
* :mod:`.server`: the process (clients, endpoint modules, HTTP server); :mod:`.embedded_rest_proxy`:
  the same in-process for tests (``EmbeddedRestProxy``);
* :mod:`.proxy_api`, :mod:`.proxy_clients`, :mod:`.errors`, :mod:`.v3_resources`,
  :mod:`.request_bodies` (JSON bodies and their fields): what every endpoint module shares;
  :mod:`.v3_configs`: the fields of broker, cluster and topic config resources;
* endpoint modules: :mod:`.v3_clusters` (clusters, brokers, broker and cluster configs),
  :mod:`.v3_topics` (topics, topic configs, partitions, replicas, reassignments),
  :mod:`.v3_consumer_groups` (groups, consumers, assignments, lags), :mod:`.v3_acls`,
  :mod:`.v3_records` (produce), :mod:`.v2_metadata`, :mod:`.v2_produce`, :mod:`.v2_consumers`
  (consumer instances), :mod:`.streaming_consume` (records as a stream over HTTP);
* around them: :mod:`.basic_auth` (HTTP basic authentication, each user reaching a SASL cluster
  as themselves) and :mod:`.proxy_metrics` (``GET /metrics``).
"""
