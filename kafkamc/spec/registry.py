"""Finding a spec by its bundled name or by ``module:Class`` reference."""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys

from kafkamc.errors import SpecLoadError, UsageError
from kafkamc.invariants.api import property_of
from kafkamc.spec.api import Spec

__all__ = ["BUNDLED", "bundled_names", "load_spec_class", "build_spec", "select_properties"]

# Imported lazily so that a broken or heavy spec module costs nothing to the others.
BUNDLED: dict[str, str] = {
    "controller": "kafkamc.spec.controller:Controller",
    "replication": "kafkamc.spec.replication:Replication",
    "transactions": "kafkamc.spec.transactions:Transactions",
    "group": "kafkamc.spec.group:Group",
    "group-kip848": "kafkamc.spec.group_kip848:GroupKip848",
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
    if module_name.startswith("."):
        raise UsageError(f"spec reference {shown!r} is relative; name the module absolutely, "
                         "as package.module:ClassName")
    if os.getcwd() not in sys.path and "" not in sys.path:
        # A console script does not put the working directory on sys.path; `python -m` does.
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name and (module_name == exc.name or module_name.startswith(exc.name + ".")):
            raise UsageError(f"cannot import module {module_name!r} for spec {shown!r}: {exc}") from None
        # The module exists but imports something that does not.
        raise SpecLoadError(f"cannot import module {module_name!r} for spec {shown!r}: "
                            f"{type(exc).__name__}: {exc}") from None
    except (Exception, SystemExit) as exc:
        # The user's module itself is broken (a syntax error, an exception at import time).
        raise SpecLoadError(f"cannot import module {module_name!r} for spec {shown!r}: "
                            f"{type(exc).__name__}: {exc}") from None
    cls = getattr(module, attr, None)
    if cls is None:
        raise UsageError(f"module {module_name!r} has no attribute {attr!r} (spec {shown!r})")
    if not (isinstance(cls, type) and issubclass(cls, Spec)):
        raise UsageError(f"{shown!r} is not a kafkamc Spec subclass")
    _check_class(cls, shown)
    return cls


def _check_class(cls: type[Spec], shown: str) -> None:
    """What can be told wrong about a spec class without running it: cheap, once per load."""
    if cls is Spec:
        raise UsageError(f"{shown!r} is the abstract base class kafkamc.Spec; name a subclass of it")
    if cls.init_states is Spec.init_states:
        raise UsageError(f"spec {shown!r} defines no init_states(p); a spec needs its initial states")
    for attr in ("invariants", "recoverability"):
        listed = getattr(cls, attr)
        if not isinstance(listed, (tuple, list)):
            raise UsageError(f"spec {shown!r}: {attr} must be a tuple of decorated functions, "
                             f"not {type(listed).__name__}")
        for fn in listed:
            try:
                property_of(fn)
            except TypeError:
                name = getattr(fn, "__qualname__", None) or repr(fn)
                decorators = "@recoverable" if attr == "recoverability" else "@invariant or @action_property"
                raise UsageError(f"spec {shown!r}: {attr} lists {name}, which is not decorated with "
                                 f"{decorators}") from None


def build_spec(ref: str, assignments: list[str] | dict[str, object] = ()) -> Spec:
    """The spec ``ref`` bound to ``-p NAME=VALUE`` assignments (or a dict of typed values)."""
    cls = load_spec_class(ref)
    params = {prm.name: prm for prm in cls.parameters}
    values: dict[str, object] = {}
    items = assignments.items() if isinstance(assignments, dict) else _split(assignments)
    for name, raw in items:
        if name not in params:
            allowed = ", ".join(params) or "none"
            raise UsageError(f"unknown parameter {name!r} for spec {cls.name}; allowed: {allowed}")
        if name in values:
            raise UsageError(f"parameter {name!r} given twice for spec {cls.name}")
        values[name] = params[name].parse(raw) if isinstance(raw, str) else params[name].validate(raw)
    try:
        return cls(**values)
    except UsageError:
        raise
    except Exception as exc:
        # validate_params is the user's code; anything but UsageError is still a bad input.
        raise SpecLoadError(f"spec {cls.name} ({cls.__module__}:{cls.__qualname__}): validate_params raised "
                            f"{type(exc).__name__}: {exc}") from None


def _split(assignments: list[str]) -> list[tuple[str, str]]:
    out = []
    for text in assignments:
        name, eq, raw = text.partition("=")
        if not eq or not name.strip():
            raise UsageError(f"parameter {text!r} must look like NAME=VALUE, e.g. -p brokers=3")
        out.append((name.strip(), raw))
    return out


def select_properties(cls: type[Spec], names: list[str] | tuple[str, ...] | None):
    """The properties named by ``-i`` (repeatable; ``all`` for every one; none given: the defaults)."""
    if not names:
        return cls.default_properties()
    if "all" in names:
        return cls.properties()
    chosen = []
    for name in names:
        prop = cls.property_named(name)
        if prop not in chosen:
            chosen.append(prop)
    return tuple(chosen)
