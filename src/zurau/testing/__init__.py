"""Helpers for Zurau's tests and benchmarks (and anyone else's): brokers in their own processes.

:mod:`zurau.testing.broker_process` starts ``zurau broker start`` (or any server) as a separate OS
process on a free port of 127.0.0.1, waits until it accepts connections, and stops it by its own
process id. This package imports only the standard library; an import-linter contract keeps it
free of the broker stack, so it runs the broker it tests, never a copy of it in-process.
"""
