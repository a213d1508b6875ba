"""Helpers for Zurau's tests and benchmarks (and anyone else's): brokers in their own processes.

:mod:`zurau.testing.broker_process` starts ``zurau broker start`` (or any server) as a separate OS
process on a free port of 127.0.0.1, waits until it accepts connections, and stops it by its own
process id; :mod:`zurau.testing.cluster_process` does the same for a KRaft cluster of several
nodes (``ClusterProcesses``), optionally with every replication and controller link behind a
fault-injecting proxy (:mod:`zurau.testing.fault_proxy`: blackhole, one-way, reset, delay), and
:mod:`zurau.testing.jepsen` records a produce/consume history and checks it (acknowledged records
exactly once at their offsets, no offset reused, reads never vanish, read_committed). This package
imports only the standard library; an import-linter contract keeps it free of the broker stack,
so it runs the broker it tests, never a copy of it in-process.
"""

from zurau.testing.broker_process import BrokerProcess, ServerProcess, free_port, wait_for_port
from zurau.testing.cluster_process import ClusterProcesses, NodeProcess, random_cluster_id
from zurau.testing.fault_proxy import FaultNetwork, FaultProxy
from zurau.testing.jepsen import CheckResult, History, check

__all__ = [
    "BrokerProcess",
    "CheckResult",
    "ClusterProcesses",
    "FaultNetwork",
    "FaultProxy",
    "History",
    "NodeProcess",
    "ServerProcess",
    "check",
    "free_port",
    "random_cluster_id",
    "wait_for_port",
]
