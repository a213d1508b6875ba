"""Run ``zurau broker start`` as a separate OS process (for kill -9 and restart tests).

The helper lives in the package, :mod:`zurau.testing.broker_process`, so that the benchmarks
(``bench/``) use the same one; this module keeps the names tests import.
"""

from __future__ import annotations

from zurau.testing.broker_process import BrokerProcess, ServerProcess, free_port, wait_for_port

__all__ = ["BrokerProcess", "ServerProcess", "free_port", "wait_for_port"]
