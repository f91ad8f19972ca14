"""The Spec API and one module per protocol."""

from kafkamc.spec.api import Action, Param, Params, Spec, action, format_label
from kafkamc.spec.registry import BUNDLED, bundled_names, load_spec_class

__all__ = [
    "Action", "Param", "Params", "Spec", "action", "format_label",
    "BUNDLED", "bundled_names", "load_spec_class",
]
