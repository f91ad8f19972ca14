"""Turning results and traces into JSON and into text a person reads in a minute."""

from __future__ import annotations

import dataclasses
import enum
import json
import re
import sys
from dataclasses import dataclass
from typing import Any

from kafkamc.result import CheckResult
from kafkamc.counterexamples.trace import Trace
from kafkamc.terminal import printable

__all__ = [
    "SCHEMA", "json_sort_key", "state_to_json", "trace_to_json", "result_to_json", "flatten", "show_value",
    "render_trace", "render_summary", "describe_change", "entity_names", "LOOP_MARK", "lasso_end",
    "render_coverage", "coverage_warnings",
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
    out = []
    for st in trace.steps:
        step = {"action": st.action, "state": state_to_json(st.state)}
        sets = _state_sets(st.state)
        if sets:
            # Where the state held frozensets (JSON Pointers into "state"), so readers can tell
            # a set from a tuple.
            step["sets"] = sets
        out.append(step)
    return out


_BMC_KEYS = ("bmc_depth", "encoding", "logic", "shapes", "shapes_built", "transitions", "paths", "solver_checks",
             "relation_cpu", "history_left_out", "commuting_pairs", "commute_cpu", "symmetry")


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
        out.update(_spec_context(result))
        if result.trace.loop_start is not None:
            # A lasso: the last state goes back to trace[loop_start] by loop_action (null: it
            # stutters forever), under the fairness the run assumed.
            out["loop_start"] = result.trace.loop_start
            out["loop_action"] = result.trace.loop_action
            out["fairness"] = result.extra.get("fairness")
    if result.engine == "bmc":
        # How the symbolic run answered: the depth it finished, the relation's size, the solver's
        # logic, and the history fields it left out of the encoding (none read by the invariants).
        out["bmc"] = {k: result.extra[k] for k in _BMC_KEYS if k in result.extra}
    if result.coverage is not None:
        out["coverage"] = [
            {"action": c.action, "enabled": c.enabled, "generated": c.generated, "distinct": c.distinct}
            for c in result.coverage
        ]
    out["fingerprint_collision_probability"] = result.fingerprint_collision_probability
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


# -- the one trace renderer ----------------------------------------------------------------------
#
# `check`, `simulate`, `gate` and `trace show` all print a trace through `render_trace`, and all of
# them from the JSON trace document (`result_to_json`, or a trace file as `load_trace_file` reads
# it): a live result is turned into that document first, so what the terminal shows is a function
# of what the file holds and the two cannot drift apart. JSON has no sets, so each step records the
# JSON Pointers of the values that were frozensets (`"sets"`), and the document records the spec's
# `entities` hook; with those the file renders exactly as the live trace.


@dataclass(frozen=True, slots=True)
class _Set:
    """A set in a trace value (a JSON list that the step's ``sets`` pointers mark as one)."""

    items: tuple[Any, ...]


_ABSENT = object()
_BARE = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]*$")


def _pointer_part(key: Any) -> str:
    return str(key).replace("~", "~0").replace("/", "~1")


def _set_pointers(value: Any, pointer: str, out: list[str]) -> None:
    """The JSON Pointers (into ``state_to_json(value)``) of every frozenset inside ``value``."""
    if isinstance(value, frozenset):
        out.append(pointer)
        members = sorted(value, key=lambda v: json_sort_key(state_to_json(v)))
        for i, item in enumerate(members):
            _set_pointers(item, f"{pointer}/{i}", out)
    elif isinstance(value, tuple):
        for i, item in enumerate(value):
            _set_pointers(item, f"{pointer}/{i}", out)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            _set_pointers(getattr(value, f.name), f"{pointer}/{_pointer_part(f.name)}", out)


def _state_sets(state: Any) -> list[str]:
    """The sorted JSON Pointers of the frozensets in a live state (a step's ``sets``)."""
    out: list[str] = []
    _set_pointers(state, "", out)
    return sorted(out)


def _typed(value: Any, pointer: str, sets: frozenset[str]) -> Any:
    """A JSON trace value as the renderer compares it: lists as tuples, marked lists as sets."""
    if isinstance(value, list):
        items = tuple(_typed(v, f"{pointer}/{i}", sets) for i, v in enumerate(value))
        return _Set(items) if pointer in sets else items
    if isinstance(value, dict):
        return {str(k): _typed(v, f"{pointer}/{_pointer_part(k)}", sets) for k, v in value.items()}
    return value


def _show(value: Any) -> str:
    """One value: tuples ``(a, b)``, sets ``{a, b}`` (empty: ``set()``), records ``{f: v}``,
    names bare and other strings quoted, control characters escaped."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value if _BARE.match(value) else printable(json.dumps(value, ensure_ascii=False))
    if isinstance(value, _Set):
        return "{" + ", ".join(_show(v) for v in value.items) + "}" if value.items else "set()"
    if isinstance(value, tuple):
        inner = ", ".join(_show(v) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{printable(k)}: {_show(v)}" for k, v in value.items()) + "}"
    return printable(str(value))


def _opened(value: Any) -> bool:
    """Whether a value is shown by its parts: a record, or a tuple of containers (by index)."""
    if isinstance(value, dict):
        return bool(value)
    return (
        isinstance(value, tuple) and bool(value)
        and all(isinstance(v, (tuple, dict, _Set)) for v in value)
    )


def flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    """Paths to the leaves of a trace value: records opened by ``.field``, tuples of containers by
    ``[i]``; sets, scalars and tuples of scalars are leaves."""
    if isinstance(value, dict) and value:
        out: dict[str, Any] = {}
        for key, item in value.items():
            out.update(flatten(item, f"{prefix}.{printable(key)}" if prefix else printable(key)))
        return out
    if _opened(value):
        out = {}
        for i, item in enumerate(value):
            out.update(flatten(item, f"{prefix}[{i}]"))
        return out
    return {prefix or "state": value}


def entity_names(entities: dict[str, Any] | None) -> dict[str, str]:
    """Field -> the prefix of its entities' names (``r`` for r1, r2...): the kind's first letter
    when no other kind shares it, else the whole kind (``producer1``)."""
    if not entities:
        return {}
    letters = [str(kind)[:1] for kind in entities]
    out = {}
    for kind, fields in entities.items():
        kind = str(kind)
        short = kind[:1] if letters.count(kind[:1]) == 1 else kind
        for f in fields:
            out[str(f)] = short
    return out


def _singular(name: str) -> str:
    if name.endswith("ies"):
        return name[:-3] + "y"
    return name[:-1] if name.endswith("s") and not name.endswith("ss") else name


def _parts(state: Any, entities: dict[str, Any] | None) -> list[tuple[str, Any]]:
    """The state's top-level (path, value) pairs; a per-entity field is one pair per entity, named
    as labels name them, 1-based: ``r2.logs``, or ``b2`` alone for a kind whose only field is its
    plural (``brokers``)."""
    if not isinstance(state, dict):
        return [("state", state)]
    names = entity_names(entities)
    whole = {str(f) for kind, fields in (entities or {}).items() if len(fields) == 1
             for f in fields if _singular(str(f)) == str(kind)}
    out: list[tuple[str, Any]] = []
    for key, value in state.items():
        prefix = names.get(key)
        if prefix is not None and isinstance(value, tuple):
            for i, item in enumerate(value):
                out.append((f"{prefix}{i + 1}" if key in whole else f"{prefix}{i + 1}.{printable(key)}", item))
        else:
            out.append((printable(key), value))
    return out


def describe_change(old: Any, new: Any) -> str:
    """``old -> new``, or for a tuple that grew or shrank at its end / a set, only the difference."""
    if isinstance(old, tuple) and isinstance(new, tuple):
        edit = _edit(old, new)
        if edit is not None:
            return edit
    if isinstance(old, _Set) and isinstance(new, _Set) and old.items and new.items:
        added = tuple(v for v in new.items if v not in old.items)
        removed = tuple(v for v in old.items if v not in new.items)
        parts = ([f"+{_show(_Set(added))}"] if added else []) + ([f"-{_show(_Set(removed))}"] if removed else [])
        return f"{_show(old)} -> {_show(new)} ({' '.join(parts)})"
    return f"{_show(old)} -> {_show(new)}"


def _edit(old: tuple[Any, ...], new: tuple[Any, ...]) -> str | None:
    """A tuple's change as one edit when it is one: appended, truncated, one item removed or inserted."""
    shown = lambda items: ", ".join(_show(v) for v in items)  # noqa: E731
    if len(new) > len(old) and new[: len(old)] == old:
        return f"appended {shown(new[len(old):])}"
    if len(new) < len(old) and old[: len(new)] == new:
        return f"truncated to {len(new)} (dropped {shown(old[len(new):])})"
    if len(new) == len(old) - 1:
        i = next(i for i in range(len(old)) if i == len(new) or old[i] != new[i])
        if old[i + 1:] == new[i:]:
            return f"removed [{i}] {_show(old[i])}"
    if len(new) == len(old) + 1:
        i = next(i for i in range(len(new)) if i == len(old) or old[i] != new[i])
        if old[i:] == new[i + 1:]:
            return f"inserted [{i}] {_show(new[i])}"
    return None


LOOP_MARK = "-- the cycle starts here, and repeats --"


def lasso_end(loop_start: int, loop_action: str | None, length: int) -> str:
    """The line that closes a lasso's rendering: back to the cycle's first state, or stuttering."""
    if loop_action is None:
        return f"-- and stays in state {length} forever (stuttering: no fair action is enabled there) --"
    return f"-- {loop_action} leads back to state {loop_start + 1}, and the cycle repeats forever --"


def _diff(path: str, old: Any, new: Any, out: list[str]) -> None:
    """Lines ``path: change`` for what differs between two trace values, opened where they are."""
    if old is _ABSENT or new is _ABSENT:
        shown = lambda v: "(absent)" if v is _ABSENT else _show(v)  # noqa: E731
        out.append(f"{path}: {shown(old)} -> {shown(new)}")
        return
    if old == new:
        return
    if isinstance(old, dict) and isinstance(new, dict) and old and new:
        for key in list(new) + [k for k in old if k not in new]:
            _diff(f"{path}.{printable(key)}", old.get(key, _ABSENT), new.get(key, _ABSENT), out)
        return
    if isinstance(old, tuple) and isinstance(new, tuple) and (_opened(old) or _opened(new)):
        edit = _edit(old, new)
        if edit is not None:
            out.append(f"{path}: {edit}")
            return
        if old and new:
            for i in range(max(len(old), len(new))):
                _diff(f"{path}[{i}]", old[i] if i < len(old) else _ABSENT, new[i] if i < len(new) else _ABSENT, out)
            return
    out.append(f"{path}: {describe_change(old, new)}")


def _document_of(source: Any, entities: dict[str, Any] | None) -> dict[str, Any]:
    if isinstance(source, CheckResult):
        doc = result_to_json(source)
    elif isinstance(source, Trace):
        doc = {"trace": trace_to_json(source)}
        if source.loop_start is not None:
            doc.update(loop_start=source.loop_start, loop_action=source.loop_action)
    else:
        doc = source
    if entities is not None:
        doc = {**doc, "entities": entities}
    return doc


def render_trace(source: CheckResult | Trace | dict[str, Any], full: bool = False,
                 entities: dict[str, Any] | None = None) -> str:
    """Each step's action, then only what changed (``old -> new``), or every field with ``full``.

    ``source`` is a result, a bare trace, or a trace document (``result_to_json`` or a loaded trace
    file); all are rendered from the document form, so a result and its file print the same text.
    Per-entity fields (the document's ``entities``, or ``entities`` given here) read ``r2.logs``.
    The last step of a violation is marked with what fails there.
    """
    doc = _document_of(source, entities)
    hint = doc.get("entities") if isinstance(doc.get("entities"), dict) else None
    steps = doc["trace"]
    violated = doc.get("violated")
    loop_start = doc.get("loop_start")
    if not (isinstance(loop_start, int) and not isinstance(loop_start, bool) and 0 <= loop_start < len(steps)):
        loop_start = None
    width = len(str(len(steps)))
    pad = " " * width + "    "
    lines: list[str] = []
    prev: list[tuple[str, Any]] | None = None
    for n, step in enumerate(steps, start=1):
        sets = step.get("sets")
        marked = frozenset(p for p in sets if isinstance(p, str)) if isinstance(sets, list) else frozenset()
        parts = _parts(_typed(step["state"], "", marked), hint)
        title = "initial state" if step["action"] is None else printable(str(step["action"]))
        if loop_start == n - 1:
            lines.append(LOOP_MARK)
        if n == len(steps) and violated and loop_start is None:
            what = "no successors (deadlock)" if violated == "deadlock" else f"{printable(str(violated))} fails"
            title += f"   <- {what} here"
        lines.append(f"{n:>{width}}. {title}")
        if prev is None or full:
            for path, value in parts:
                lines.extend(f"{pad}{leaf} = {_show(v)}" for leaf, v in flatten(value, path).items())
        else:
            changes: list[str] = []
            before = dict(prev)
            for path, value in parts:
                _diff(path, before.pop(path, _ABSENT), value, changes)
            for path, value in before.items():
                _diff(path, value, _ABSENT, changes)
            lines.extend(pad + line for line in changes)
        prev = parts
    if loop_start is not None:
        action = doc.get("loop_action")
        lines.append(lasso_end(loop_start, printable(action) if isinstance(action, str) else None, len(steps)))
    return "\n".join(lines)


def _spec_context(result: CheckResult) -> dict[str, Any]:
    """What a trace file records of the spec for readers without it: the ``entities`` hook and
    the checked properties' descriptions. Found only for a bundled spec or a spec_ref whose module
    the run already imported: rendering never imports a user's code."""
    cls = None
    ref = result.extra.get("spec_ref")
    try:
        if isinstance(ref, str) and ":" in ref:
            module, _, attr = ref.partition(":")
            cls = getattr(sys.modules.get(module), attr, None)
        else:
            from kafkamc.spec.registry import BUNDLED, load_spec_class

            cls = load_spec_class(result.spec) if result.spec in BUNDLED else None
    except Exception:  # a spec that cannot be found only loses its hints
        cls = None
    if not isinstance(cls, type):
        return {}
    out: dict[str, Any] = {}
    hint = getattr(cls, "entities", None)
    if callable(hint):
        try:
            from kafkamc.spec.api import Params

            hint = hint(Params(dict(result.params)))
        except Exception:
            hint = None
    if isinstance(hint, dict) and all(
        isinstance(k, str) and isinstance(v, (tuple, list)) and all(isinstance(f, str) for f in v)
        for k, v in hint.items()
    ):
        out["entities"] = {k: list(v) for k, v in hint.items()}
    try:
        props = {p.name: p.description for p in cls.properties()}
    except Exception:
        props = {}
    described = {name: props[name] for name in result.invariants if props.get(name)}
    if described:
        out["descriptions"] = described
    return out


def render_summary(result: CheckResult) -> str:
    params = " ".join(f"{k}={_param(v)}" for k, v in result.params.items())
    rate = f"{result.states_per_second:,.0f} states/s"
    stats = (
        f"{result.distinct_states:,} distinct states, {result.states_generated:,} generated, "
        f"depth {result.depth}, {result.seconds:.2f} s ({rate})"
    )
    head = f"{result.spec} [{params}] engine={result.engine}{' symmetry' if result.symmetry else ''}"
    checked = ", ".join(result.invariants) or "no invariants"
    if result.result == "ok" and result.extra.get("checker") == "liveness":
        verdict = f"ok: every fair behaviour satisfies {checked}"
    elif result.result == "ok":
        verdict = f"ok: every reachable state satisfies {checked}"
    elif result.result == "violation" and result.trace is not None and result.trace.loop_start is not None:
        length, start = len(result.trace), result.trace.loop_start
        end = "a state where it may stop (stutter) forever" if result.trace.loop_action is None else (
            f"a cycle of {_count(length - start, 'transition')} that repeats forever")
        verdict = (f"violation: {result.violated} fails on a fair behaviour: {_count(start, 'step')} to {end} "
                   f"(a lasso of {_count(length, 'state')})")
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
        if result.violated is not None:
            verdict = f"incomplete ({why}): {result.violated} fails on a state explored"
            if result.trace is None:
                verdict += "; the run was stopped before its trace was built (run again for it)"
        else:
            verdict = f"incomplete ({why}): no violation of {checked} in the states explored; not exhaustive"
    collision = f"fingerprint collision probability {_probability(result.fingerprint_collision_probability)}"
    return f"{head}\n{verdict}\n{stats}\n{collision} (optimistic, as TLC computes it)"


def _probability(value: float) -> str:
    return "0" if value == 0 else f"{value:.1e}"


def render_coverage(result: CheckResult) -> str:
    """TLC's -coverage as a table: per action, the states it was enabled on, the successors it
    generated and the distinct states it found first ('' when the engine counts none)."""
    if result.coverage is None:
        return ""
    if not result.coverage:
        return "coverage: the spec has no actions"
    rows = [("action", "enabled", "generated", "distinct")]
    rows += [(c.action, f"{c.enabled:,}", f"{c.generated:,}", f"{c.distinct:,}") for c in result.coverage]
    width = [max(len(r[i]) for r in rows) for i in range(4)]
    return "action coverage (states it was enabled on, successors generated, distinct states found first):\n" + "\n".join(
        f"  {r[0]:<{width[0]}}  {r[1]:>{width[1]}}  {r[2]:>{width[2]}}  {r[3]:>{width[3]}}".rstrip() for r in rows
    )


def coverage_warnings(result: CheckResult) -> list[str]:
    """One line per action that never fired, or for a spec without actions: an ok that may be vacuous.

    Not for a violation: the search stopped early, so an action that has not fired yet says nothing.
    """
    if result.coverage is None or result.result == "violation":
        return []
    if not result.coverage:
        return [f"warning: spec {result.spec} has no actions (no @action functions): only its initial states "
                "were checked"]
    if result.result == "ok":
        why = "never fired in any reachable state (with these parameters it is never enabled)"
    else:
        why = "has not fired in the states explored (the run is incomplete: it may fire further on)"
    return [f"warning: action {c.action} {why}" for c in result.coverage if c.enabled == 0]


def _count(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def _param(value: Any) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)
