"""Counterexample traces: the trace type, replay, and renderers."""

from kafkamc.counterexamples.trace import ReplayError, Trace, TraceStep, replay

__all__ = ["Trace", "TraceStep", "ReplayError", "replay"]
