"""kafkamc: an explicit-state model checker for Apache Kafka's coordination protocols."""

from kafkamc.invariants.api import action_property, invariant, recoverable
from kafkamc.spec.api import Param, Params, Spec, action

__all__ = ["Spec", "Param", "Params", "action", "invariant", "action_property", "recoverable"]
__version__ = "0.1.0"
