"""Kafka Connect for Zurau: a connector API, converters, transforms, workers and the REST API.

An edge service: it talks to the cluster only through :mod:`zurau.client` (an import-linter
contract enforces it). Connector authors import from :mod:`zurau.connect.api`.
"""
