"""Runnable end-to-end pipelines that combine a broker (embedded or remote) with edge apps.

Unlike :mod:`zurau.spark` (an edge app that must work against any Kafka cluster), a pipeline
may start an :class:`~zurau.embedded.EmbeddedBroker` itself.
"""
