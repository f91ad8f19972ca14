"""Named invariants and action properties, one module per protocol."""

from kafkamc.invariants.api import Property, action_property, invariant, property_of, recoverable

__all__ = ["Property", "invariant", "action_property", "recoverable", "property_of"]
