"""A Confluent-compatible schema registry: an edge app that stores its state in the compacted
``_schemas`` topic through :mod:`zurau.client` and serves Confluent's REST API.

Modules: :mod:`.store_records` (the topic's key/value JSON), :mod:`.registry_state` (state
rebuilt from the topic), :mod:`.kafka_store` (the topic as a store), :mod:`.registry`
(operations), :mod:`.rest_api` (HTTP), :mod:`.leader_election`
(the primary, elected through the Kafka group protocol), :mod:`.forwarding` (secondaries' writes
to the primary), :mod:`.server`,
:mod:`.embedded_registry` (``EmbeddedRegistry`` for tests), :mod:`.registry_config`, :mod:`.errors`.
Schema parsing, canonical forms and the compatibility checkers are in the shared library
:mod:`zurau.schema_formats` (the console and the REST proxy parse and decode with it too).

It never imports the broker stack (an import-linter contract enforces it).
"""
