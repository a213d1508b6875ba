"""Test support: brokers in a separate process, free ports, waiting helpers."""
