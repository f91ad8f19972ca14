"""The errors kafkamc reports to its user, each mapped to an exit code by the CLI."""

from __future__ import annotations

__all__ = ["KafkamcError", "UsageError", "SpecRaised", "EngineError", "SymbolicUnsupported", "SoundnessError"]


class KafkamcError(Exception):
    """Base of every error kafkamc reports without a traceback."""

    exit_code = 2


class UsageError(KafkamcError):
    """Bad invocation or input: unknown spec, parameter, invariant, a value out of range (exit 2)."""

    exit_code = 2


class SpecRaised(KafkamcError):
    """A spec function raised during exploration (exit 3); the message names the function and state."""

    exit_code = 3

    def __init__(self, where: str, state: object, error: BaseException) -> None:
        self.where = where
        self.state = state
        self.error = error
        super().__init__(
            f"{where} raised {type(error).__name__}: {error} on state {state!r}"
        )


class EngineError(KafkamcError):
    """The engine could not finish (for instance a lost Spark cluster); exit 3, no result written."""

    exit_code = 3


class SymbolicUnsupported(KafkamcError):
    """``prove`` met a construct it cannot execute exactly on symbolic values (exit 3); the message
    names the construct, the function and the line. Never silently approximated."""

    exit_code = 3


class SoundnessError(EngineError):
    """The prover's symbolic answer disagreed with the concrete replay of the spec: an internal
    bug, reported instead of an unchecked result (exit 3)."""
