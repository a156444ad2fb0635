"""Verification of candidate SQL: the verdict type and the registry of methods."""

from ehrguard.verify.verdict import ACTIONS, Exchange, Finding, Verdict

__all__ = ["ACTIONS", "Exchange", "Finding", "Verdict"]
