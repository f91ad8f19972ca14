"""Finding a spec by its bundled name or by ``module:Class`` reference."""

from __future__ import annotations

import importlib

from kafkamc.errors import UsageError
from kafkamc.spec.api import Spec

__all__ = ["BUNDLED", "bundled_names", "load_spec_class"]

# Imported lazily so that a broken or heavy spec module costs nothing to the others.
BUNDLED: dict[str, str] = {
    "controller": "kafkamc.spec.controller:Controller",
    "replication": "kafkamc.spec.replication:Replication",
    "transactions": "kafkamc.spec.transactions:Transactions",
    "group": "kafkamc.spec.group:Group",
}


def bundled_names() -> list[str]:
    """Bundled specs whose module is present in this installation."""
    names = []
    for name, ref in BUNDLED.items():
        module = ref.split(":")[0]
        if importlib.util.find_spec(module) is not None:
            names.append(name)
    return names


def load_spec_class(ref: str) -> type[Spec]:
    """A bundled spec name, or ``package.module:ClassName`` for a user's own spec."""
    if ref in BUNDLED and ref in bundled_names():
        return _import(BUNDLED[ref], ref)
    if ":" not in ref:
        allowed = ", ".join(bundled_names())
        raise UsageError(f"unknown spec {ref!r}; allowed: {allowed}, or module:Class for your own spec")
    return _import(ref, ref)


def _import(target: str, shown: str) -> type[Spec]:
    module_name, _, attr = target.partition(":")
    if not module_name or not attr:
        raise UsageError(f"spec reference {shown!r} must look like package.module:ClassName")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise UsageError(f"cannot import module {module_name!r} for spec {shown!r}: {exc}") from None
    cls = getattr(module, attr, None)
    if cls is None:
        raise UsageError(f"module {module_name!r} has no attribute {attr!r} (spec {shown!r})")
    if not (isinstance(cls, type) and issubclass(cls, Spec)):
        raise UsageError(f"{shown!r} is not a kafkamc Spec subclass")
    return cls
