"""Fingerprinting and the exploration engines."""

from kafkamc.checker.local import explore
from kafkamc.result import CheckResult, LevelStats

__all__ = ["explore", "CheckResult", "LevelStats"]
