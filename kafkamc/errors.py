"""The errors kafkamc reports to its user, each mapped to an exit code by the CLI."""

from __future__ import annotations

__all__ = ["KafkamcError", "UsageError", "SpecLoadError", "SpecRaised", "SpecError", "MalformedSpec", "EngineError",
           "SymbolicUnsupported", "SoundnessError", "short_repr"]


class KafkamcError(Exception):
    """Base of every error kafkamc reports without a traceback."""

    exit_code = 2


class UsageError(KafkamcError):
    """Bad invocation or input: unknown spec, parameter, invariant, a value out of range (exit 2)."""

    exit_code = 2


class SpecLoadError(UsageError):
    """A user's spec module failed to import, or its validate_params raised (exit 2). The gate
    reports it as an error of that one check and still runs the others."""


class SpecRaised(KafkamcError):
    """A spec function raised during exploration (exit 3); the message names the function and state."""

    exit_code = 3

    def __init__(self, where: str, state: object, error: BaseException) -> None:
        self.where = where
        self.state = state
        self.error = error
        if type(error).__name__ == MalformedSpec.__name__:  # by name: workers send it back as text
            text = f"{where} is malformed: {error}, on state {state!r}"
        else:
            text = f"{where} raised {type(error).__name__}: {error} on state {state!r}"
        super().__init__(text)


class MalformedSpec(Exception):
    """What a spec function returned has the wrong shape (carried inside SpecRaised, exit 3)."""


class SpecError(KafkamcError):
    """The spec broke a rule of the Spec API during exploration (exit 3) without raising: a
    property returned something other than a bool, or successors came out in a different order."""

    exit_code = 3


def short_repr(value: object, limit: int = 200) -> str:
    """``repr(value)`` cut to ``limit`` characters, for one-line messages."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


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
