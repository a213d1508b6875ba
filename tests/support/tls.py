"""Test certificates for Zurau's own tests: :mod:`zurau.testing.certificates`."""

from zurau.testing.certificates import Pem, TestCA

__all__ = ["Pem", "TestCA"]
