"""Verification of candidate SQL: the verdict type, the registry of methods, and :func:`verify`."""

from ehrguard.verify.api import verify
from ehrguard.verify.methods import available_methods, get_method, register_method
from ehrguard.verify.verdict import ACTIONS, Exchange, Finding, Verdict

__all__ = ["ACTIONS", "Exchange", "Finding", "Verdict", "available_methods", "get_method", "register_method", "verify"]
