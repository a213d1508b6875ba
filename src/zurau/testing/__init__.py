"""Helpers for Zurau's tests and benchmarks (and anyone else's): brokers in their own processes.

:mod:`zurau.testing.broker_process` starts ``zurau broker start`` (or any server) as a separate OS
process on a free port of 127.0.0.1, waits until it accepts connections, and stops it by its own
process id; :mod:`zurau.testing.cluster_process` does the same for a KRaft cluster of several
nodes (``ClusterProcesses``). This package imports only the standard library; an import-linter contract keeps it
free of the broker stack, so it runs the broker it tests, never a copy of it in-process.
"""

from zurau.testing.broker_process import BrokerProcess, ServerProcess, free_port, wait_for_port
from zurau.testing.cluster_process import ClusterProcesses, NodeProcess, random_cluster_id

__all__ = [
    "BrokerProcess",
    "ClusterProcesses",
    "NodeProcess",
    "ServerProcess",
    "free_port",
    "random_cluster_id",
    "wait_for_port",
]
