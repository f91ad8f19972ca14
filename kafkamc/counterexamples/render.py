"""Turning results and traces into JSON and into text a person reads in a minute."""

from __future__ import annotations

import dataclasses
import enum
import json
from typing import Any

from kafkamc.result import CheckResult
from kafkamc.counterexamples.trace import Trace

__all__ = [
    "SCHEMA", "json_sort_key", "state_to_json", "trace_to_json", "result_to_json", "flatten", "show_value",
    "render_trace", "render_summary", "describe_change", "entity_names",
]

SCHEMA = 1


def state_to_json(value: Any) -> Any:
    """Objects of their fields; tuples as lists; frozensets as sorted lists; IntEnums by name."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, enum.Enum):
        return value.name
    if isinstance(value, int):
        return int(value)
    if isinstance(value, tuple):
        return [state_to_json(v) for v in value]
    if isinstance(value, frozenset):
        items = [state_to_json(v) for v in value]
        return sorted(items, key=json_sort_key)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: state_to_json(getattr(value, f.name)) for f in dataclasses.fields(value)}
    return repr(value)


def json_sort_key(item: Any) -> tuple[int, Any]:
    """The order of a set's members once in JSON form (JSON traces, ITF and the renderers share it)."""
    if isinstance(item, bool):
        return (0, int(item))
    if isinstance(item, int):
        return (1, item)
    if isinstance(item, str):
        return (2, item)
    return (3, json.dumps(item, sort_keys=True))


def trace_to_json(trace: Trace | None) -> list[dict[str, Any]] | None:
    if trace is None:
        return None
    return [{"action": st.action, "state": state_to_json(st.state)} for st in trace.steps]


def result_to_json(result: CheckResult) -> dict[str, Any]:
    """The stable ``--json`` object (schema 1)."""
    out = {
        "schema": SCHEMA,
        "spec": result.spec,
        "params": dict(result.params),
        "engine": result.engine,
        "result": result.result,
        "invariants": list(result.invariants),
        "violated": result.violated,
        "distinct_states": result.distinct_states,
        "states_generated": result.states_generated,
        "depth": result.depth,
        "seconds": round(result.seconds, 3),
        "trace": trace_to_json(result.trace),
    }
    if result.reason is not None:
        out["reason"] = result.reason
    if result.extra.get("spec_ref"):
        # Where the spec class lives, so a trace of a user's own spec replays without --spec.
        out["spec_ref"] = result.extra["spec_ref"]
    if result.trace is not None:
        out["path"] = list(result.trace.path)
    return out


def show_value(value: Any) -> str:
    """A compact rendering: tuples as (a, b), frozensets as {a, b} sorted, dataclasses as Name(f=v)."""
    if isinstance(value, enum.Enum):
        return value.name
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple):
        inner = ", ".join(show_value(v) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if isinstance(value, frozenset):
        items = sorted(value, key=lambda v: json_sort_key(state_to_json(v)))
        return "{" + ", ".join(show_value(v) for v in items) + "}"
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = ", ".join(f"{f.name}={show_value(getattr(value, f.name))}" for f in dataclasses.fields(value))
        return f"{type(value).__name__}({fields})"
    return repr(value) if isinstance(value, str) else str(value)


def flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    """Dotted paths to leaves; dataclasses and tuples of structured values are opened up."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out: dict[str, Any] = {}
        for f in dataclasses.fields(value):
            out.update(flatten(getattr(value, f.name), f"{prefix}.{f.name}" if prefix else f.name))
        return out
    if isinstance(value, tuple) and value and all(
        dataclasses.is_dataclass(v) or (isinstance(v, tuple) and len(v) > 0 and _structured(v)) for v in value
    ):
        out = {}
        for i, v in enumerate(value):
            out.update(flatten(v, f"{prefix}[{i}]"))
        return out
    return {prefix or "state": value}


def _structured(value: tuple[Any, ...]) -> bool:
    return any(dataclasses.is_dataclass(v) for v in value)


def entity_names(entities: dict[str, tuple[str, ...]] | None) -> dict[str, str]:
    """Field -> the prefix of its entities' names: the kind's first letter when that is unambiguous."""
    if not entities:
        return {}
    letters = [kind[0] for kind in entities]
    out = {}
    for kind, fields in entities.items():
        short = kind[0] if letters.count(kind[0]) == 1 else kind
        for f in fields:
            out[f] = short
    return out


def _open_entities(state: Any, names: dict[str, str]) -> dict[str, Any]:
    """Flatten, but a per-entity tuple field becomes one entry per entity: ``r2.logs``."""
    if not names or not (dataclasses.is_dataclass(state) and not isinstance(state, type)):
        return flatten(state)
    out: dict[str, Any] = {}
    for f in dataclasses.fields(state):
        value = getattr(state, f.name)
        prefix = names.get(f.name)
        if prefix is not None and isinstance(value, tuple):
            for i, item in enumerate(value):
                out.update(flatten(item, f"{prefix}{i + 1}.{f.name}"))
        else:
            out.update(flatten(value, f.name))
    return out


def describe_change(old: Any, new: Any) -> str:
    """``old -> new``, or for a tuple that grew or shrank at its end / a set, only the difference."""
    if isinstance(old, tuple) and isinstance(new, tuple) and old != new:
        if len(new) > len(old) and new[: len(old)] == old:
            return f"appended {', '.join(show_value(v) for v in new[len(old):])}"
        if len(new) < len(old) and old[: len(new)] == new:
            return f"truncated to {len(new)} (dropped {', '.join(show_value(v) for v in old[len(new):])})"
    if isinstance(old, frozenset) and isinstance(new, frozenset) and old and new:
        added = frozenset(new - old)
        removed = frozenset(old - new)
        parts = ([f"+{show_value(added)}"] if added else []) + ([f"-{show_value(removed)}"] if removed else [])
        return f"{show_value(old)} -> {show_value(new)} ({' '.join(parts)})"
    return f"{show_value(old)} -> {show_value(new)}"


def render_trace(trace: Trace, full: bool = False, entities: dict[str, tuple[str, ...]] | None = None) -> str:
    """Each step's action, then only what changed (old -> new), or every field with ``full``.

    ``entities`` (a spec's ``entities`` hint) opens per-entity tuples into one line per entity.
    """
    names = entity_names(entities)
    lines = []
    prev: dict[str, Any] | None = None
    width = len(str(len(trace.steps)))
    pad = " " * width
    for n, step in enumerate(trace.steps, start=1):
        flat = _open_entities(step.state, names)
        printed: set[str] = set()
        title = "initial state" if step.action is None else step.action
        lines.append(f"{n:>{width}}. {title}")
        for path, value in flat.items():
            if prev is None or full:
                lines.append(f"{pad}    {path} = {show_value(value)}")
            elif path not in prev:
                parent = _parent_in(path, prev)
                if parent is not None and parent not in printed:
                    printed.add(parent)
                    lines.append(f"{pad}    {parent}: {show_value(prev[parent])} -> (opened below)")
                lines.append(f"{pad}    {path}: (absent) -> {show_value(value)}")
            elif prev[path] != value:
                lines.append(f"{pad}    {path}: {describe_change(prev[path], value)}")
        if prev is not None and not full:
            for path in prev:
                if path not in flat and path not in printed and not _has_children(path, flat):
                    lines.append(f"{pad}    {path}: {show_value(prev[path])} -> (absent)")
        prev = flat
    return "\n".join(lines)


def _parent_in(path: str, flat: dict[str, Any]) -> str | None:
    """The leaf of ``flat`` that ``path`` is nested under (a tuple that just gained structure)."""
    for cut in range(len(path) - 1, 0, -1):
        if path[cut] in "[." and path[:cut] in flat:
            return path[:cut]
    return None


def _has_children(path: str, flat: dict[str, Any]) -> bool:
    return any(k.startswith(path + "[") or k.startswith(path + ".") for k in flat)


def render_summary(result: CheckResult) -> str:
    params = " ".join(f"{k}={_param(v)}" for k, v in result.params.items())
    rate = f"{result.states_per_second:,.0f} states/s"
    stats = (
        f"{result.distinct_states:,} distinct states, {result.states_generated:,} generated, "
        f"depth {result.depth}, {result.seconds:.2f} s ({rate})"
    )
    head = f"{result.spec} [{params}] engine={result.engine}{' symmetry' if result.symmetry else ''}"
    checked = ", ".join(result.invariants) or "no invariants"
    if result.result == "ok":
        verdict = f"ok: every reachable state satisfies {checked}"
    elif result.result == "violation":
        length = len(result.trace) if result.trace is not None else 0
        what = "a deadlock (a state with no successors)" if result.violated == "deadlock" else result.violated
        verdict = f"violation: {what} fails after {length - 1} steps (shortest trace, {length} states)"
    else:
        why = {"max-depth": "--max-depth reached", "max-states": "--max-states reached",
               "interrupted": "interrupted", "terminated": "terminated by SIGTERM or SIGHUP",
               "max-memory": "--max-memory reached"}.get(result.reason or "", result.reason or "bounded")
        if result.extra.get("stop_detail"):
            why += f": {result.extra['stop_detail']}"
        verdict = f"incomplete ({why}): no violation of {checked} in the states explored; not exhaustive"
    return f"{head}\n{verdict}\n{stats}"


def _param(value: Any) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)
