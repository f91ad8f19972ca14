"""Counterexamples in the Informal Trace Format (ITF) of Apalache and Quint, and reading trace files.

ITF (Apalache ADR-015) is a JSON object ``{"#meta", "vars", "states"}``; each state maps every
variable to a value and may carry its own ``#meta``. Values use ITF's encodings: integers as
``{"#bigint": "42"}`` (as Quint writes every integer, so no reader meets a precision limit),
tuples as ``{"#tup": [...]}``, sets as ``{"#set": [...]}``, maps as ``{"#map": [[k, v], ...]}``,
records (our nested dataclasses) as JSON objects, IntEnum members by name (as Apalache writes
model values) and booleans as JSON booleans.

What kafkamc puts in the trace's ``#meta``: ``format``, ``format-description``, ``source`` (the
spec), ``description``, and ``spec``, ``parameters``, ``invariant`` (the violated one),
``invariants`` (all checked), ``engine``, ``result``, ``path`` (the successor-index path that
``kafkamc trace replay`` re-executes) and the run's statistics. A state's ``#meta`` holds its
``index`` and, except for the initial state, the ``action`` label that led to it: string values
only, which every ITF reader accepts. A liveness counterexample is a lasso: the trace's ``loop``
is the index of the state the last state leads back to, by the ``#meta`` ``loop_action`` (null:
the last state stutters forever), under the ``#meta`` ``fairness``.

Reading goes the other way, to the JSON trace shape of ``kafkamc check --json`` (see
``kafkamc.counterexamples.render.result_to_json``), so the terminal renderer, ``replay`` and the
HTML viewer handle both kinds of file alike. ITF written by other tools is read too: their state
``#meta`` ``action`` (or Quint's ``mbt::actionTaken`` variable) becomes the step's action.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import math
import os
import stat
from typing import Any

from kafkamc import __version__
from kafkamc.result import CheckResult
from kafkamc.counterexamples.render import SCHEMA, json_sort_key, result_to_json
from kafkamc.errors import UsageError
from kafkamc.safewrite import write_file

__all__ = [
    "ITF_FORMAT_DESCRIPTION", "value_to_itf", "state_to_itf", "result_to_itf", "write_itf", "itf_path",
    "itf_to_json_value", "is_itf", "itf_to_document", "read_itf", "load_trace_file", "check_document",
    "document_of",
]

ITF_FORMAT_DESCRIPTION = "https://apalache-mc.org/docs/adr/015adr-trace.html"
# The variable a state that is not a dataclass is stored under (the reader unwraps it again).
_WHOLE_STATE = "state"
_QUINT_ACTION = "mbt::actionTaken"


# -- writing ---------------------------------------------------------------------------------


def value_to_itf(value: Any) -> Any:
    """One state value in ITF's encoding (see the module docstring)."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, enum.Enum):
        return value.name
    if isinstance(value, int):
        return {"#bigint": str(int(value))}
    if isinstance(value, tuple):
        return {"#tup": [value_to_itf(v) for v in value]}
    if isinstance(value, list):
        return [value_to_itf(v) for v in value]
    if isinstance(value, (frozenset, set)):
        # The order kafkamc's JSON trace lists the members in, so both files read the same.
        pairs = sorted(((_json_of(v), value_to_itf(v)) for v in value), key=lambda kv: json_sort_key(kv[0]))
        return {"#set": [itf for _, itf in pairs]}
    if isinstance(value, dict):
        items = sorted(value.items(), key=lambda kv: json_sort_key(_json_of(kv[0])))
        return {"#map": [[value_to_itf(k), value_to_itf(v)] for k, v in items]}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: value_to_itf(getattr(value, f.name)) for f in dataclasses.fields(value)}
    return {"#unserializable": repr(value)}


def state_to_itf(state: Any) -> dict[str, Any]:
    """A state's variables: a dataclass's fields, or the whole value under ``state``."""
    if dataclasses.is_dataclass(state) and not isinstance(state, type):
        return {f.name: value_to_itf(getattr(state, f.name)) for f in dataclasses.fields(state)}
    return {_WHOLE_STATE: value_to_itf(state)}


def result_to_itf(result: CheckResult) -> dict[str, Any]:
    """The ITF trace object of a result's counterexample (ValueError if it has none)."""
    if result.trace is None:
        raise ValueError(f"result {result.result!r} of spec {result.spec} has no counterexample trace")
    steps = result.trace.steps
    first = steps[0].state
    whole = not (dataclasses.is_dataclass(first) and not isinstance(first, type))
    variables = [_WHOLE_STATE] if whole else [f.name for f in dataclasses.fields(first)]
    meta: dict[str, Any] = {
        "format": "ITF",
        "format-description": ITF_FORMAT_DESCRIPTION,
        "source": result.spec,
        "description": f"Created by kafkamc {__version__}: a counterexample to {result.violated}",
        "spec": result.spec,
        "parameters": dict(result.params),
        "invariant": result.violated,
        "invariants": list(result.invariants),
        "engine": result.engine,
        "result": result.result,
        "path": list(result.trace.path),
        "distinct_states": result.distinct_states,
        "states_generated": result.states_generated,
        "depth": result.depth,
        "kafkamc_schema": SCHEMA,
    }
    if result.extra.get("spec_ref"):
        meta["spec_ref"] = result.extra["spec_ref"]
    # The spec's entities hook and property descriptions, as the JSON trace records them.
    meta.update({k: v for k, v in result_to_json(result).items() if k in ("entities", "descriptions")})
    if whole:
        meta["kafkamc_whole_state"] = True
    states = []
    for index, step in enumerate(steps):
        smeta: dict[str, Any] = {"index": index}
        if step.action is not None:
            smeta["action"] = step.action
        item = {"#meta": smeta}
        item.update(state_to_itf(step.state))
        states.append(item)
    out = {"#meta": meta, "vars": variables, "states": states}
    if result.trace.loop_start is not None:
        # ITF's lasso: the last state is followed by states[loop] again (by the meta's loop_action,
        # or by stuttering when that is null).
        out["loop"] = result.trace.loop_start
        meta["loop_action"] = result.trace.loop_action
        meta["fairness"] = result.extra.get("fairness")
    return out


def itf_path(result: CheckResult, out_dir: str) -> str:
    """``DIR/<spec>-<invariant>.itf.json``, named as ``write_trace_file`` names the JSON trace."""
    return os.path.join(out_dir, f"{_file_part(result.spec)}-{_file_part(str(result.violated))}.itf.json")


def write_itf(result: CheckResult, out_dir: str) -> str | None:
    """Write the counterexample as ``DIR/<spec>-<invariant>.itf.json``; None when there is none."""
    if result.trace is None or result.violated is None:
        return None
    return write_file(itf_path(result, out_dir), json.dumps(result_to_itf(result), indent=1) + "\n")


def _file_part(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in name)


def _json_of(value: Any) -> Any:
    """The value as kafkamc's JSON trace writes it (the key sets and maps are sorted by)."""
    return itf_to_json_value(value_to_itf(value))


# -- reading ---------------------------------------------------------------------------------


class _Malformed(Exception):
    pass


def itf_to_json_value(value: Any) -> Any:
    """An ITF value in kafkamc's JSON trace shape.

    Integers become JSON numbers, tuples lists, sets sorted lists, records objects; a map becomes
    an object when every key is a string, else a list of ``[key, value]`` pairs.
    """
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if value.is_integer():
            return int(value)
        raise _Malformed(f"a number that is not an integer: {_short(value)}")
    if isinstance(value, list):
        return [itf_to_json_value(v) for v in value]
    if not isinstance(value, dict):
        raise _Malformed(f"an unexpected value {_short(value)}")
    special = [k for k in value if isinstance(k, str) and k.startswith("#")]
    if not special:
        return {k: itf_to_json_value(v) for k, v in value.items()}
    if len(value) != 1:
        raise _Malformed(f"an object mixing {_short(special[0])} with other keys")
    tag, inner = next(iter(value.items()))
    if tag == "#bigint":
        if not isinstance(inner, str):
            raise _Malformed(f"#bigint must be a string of digits, not {_short(inner)}")
        if len(inner) > MAX_DIGITS:
            raise _Malformed(f"#bigint of {len(inner):,} characters (at most {MAX_DIGITS:,} digits)")
        try:
            return int(inner)
        except ValueError:
            raise _Malformed(f"#bigint {_short(inner)} is not an integer") from None
    if tag in ("#tup", "#set"):
        if not isinstance(inner, list):
            raise _Malformed(f"{tag} must hold a list, not {_short(inner)}")
        items = [itf_to_json_value(v) for v in inner]
        return sorted(items, key=json_sort_key) if tag == "#set" else items
    if tag == "#map":
        if not isinstance(inner, list) or not all(isinstance(kv, list) and len(kv) == 2 for kv in inner):
            raise _Malformed("#map must hold a list of [key, value] pairs")
        pairs = [(itf_to_json_value(k), itf_to_json_value(v)) for k, v in inner]
        if all(isinstance(k, str) for k, _ in pairs):
            return {k: v for k, v in pairs}
        return [[k, v] for k, v in sorted(pairs, key=lambda kv: json_sort_key(kv[0]))]
    if tag == "#unserializable":
        return str(inner)
    raise _Malformed(f"an unknown ITF encoding {_short(tag)}")


def _itf_set_pointers(value: Any, pointer: str, out: list[str]) -> None:
    """The JSON Pointers, into the value ``itf_to_json_value`` makes of ``value``, of its sets
    (the ``sets`` of a step, so the renderer tells a set from a tuple as for a JSON trace)."""
    if isinstance(value, list):
        for i, item in enumerate(value):
            _itf_set_pointers(item, f"{pointer}/{i}", out)
        return
    if not isinstance(value, dict):
        return
    if len(value) == 1 and next(iter(value)) in ("#set", "#tup", "#map"):
        tag, inner = next(iter(value.items()))
        if tag == "#set":
            out.append(pointer)
            inner = sorted(inner, key=lambda v: json_sort_key(itf_to_json_value(v)))
        if tag == "#map":
            pairs = [(itf_to_json_value(k), k, v) for k, v in inner]
            if all(isinstance(k, str) for k, _, _ in pairs):
                for key, _, v in pairs:
                    _itf_set_pointers(v, f"{pointer}/{key.replace('~', '~0').replace('/', '~1')}", out)
            else:
                pairs.sort(key=lambda kv: json_sort_key(kv[0]))
                for i, (_, k, v) in enumerate(pairs):
                    _itf_set_pointers(k, f"{pointer}/{i}/0", out)
                    _itf_set_pointers(v, f"{pointer}/{i}/1", out)
            return
        for i, item in enumerate(inner):
            _itf_set_pointers(item, f"{pointer}/{i}", out)
        return
    if any(isinstance(k, str) and k.startswith("#") for k in value):
        return
    for key, item in value.items():
        _itf_set_pointers(item, f"{pointer}/{key.replace('~', '~0').replace('/', '~1')}", out)


def is_itf(obj: Any) -> bool:
    """True for a JSON object shaped like an ITF trace (a ``states`` list and a ``vars`` list)."""
    return isinstance(obj, dict) and isinstance(obj.get("states"), list) and isinstance(obj.get("vars"), list)


def itf_to_document(obj: Any, where: str = "the ITF trace") -> dict[str, Any]:
    """An ITF trace object (kafkamc's or another tool's) as kafkamc's JSON trace document."""
    if not is_itf(obj):
        raise UsageError(f"{where} is not an ITF trace (a JSON object with 'vars' and 'states' lists)")
    meta = obj.get("#meta") or {}
    if not isinstance(meta, dict):
        raise UsageError(f"{where}: '#meta' must be an object")
    variables = obj["vars"]
    if not all(isinstance(v, str) for v in variables):
        raise UsageError(f"{where}: 'vars' must be a list of strings")
    if not obj["states"]:
        raise UsageError(f"{where} has no states")
    whole = bool(meta.get("kafkamc_whole_state"))
    trace = []
    for n, item in enumerate(obj["states"]):
        if not isinstance(item, dict):
            raise UsageError(f"{where}: state {n} is not an object")
        smeta = item.get("#meta") or {}
        if not isinstance(smeta, dict):
            raise UsageError(f"{where}: state {n}: '#meta' must be an object")
        action = smeta.get("action")
        if action is None and isinstance(item.get(_QUINT_ACTION), str) and n > 0:
            action = item[_QUINT_ACTION]
        if action is not None and not isinstance(action, str):
            raise UsageError(f"{where}: state {n}: the action must be a string")
        missing = [v for v in variables if v not in item]
        if missing:
            raise UsageError(f"{where}: state {n} has no value for variable {_short(missing[0])}")
        try:
            state = {v: itf_to_json_value(item[v]) for v in variables if v != _QUINT_ACTION}
        except _Malformed as exc:
            raise UsageError(f"{where}: state {n}: {exc}") from None
        sets: list[str] = []
        for v in variables:
            if v != _QUINT_ACTION:
                _itf_set_pointers(item[v], "" if whole else "/" + v.replace("~", "~0").replace("/", "~1"), sets)
        if whole:
            state = state.get(_WHOLE_STATE)
        step = {"action": None if n == 0 else action, "state": state}
        if sets:
            step["sets"] = sorted(sets)
        trace.append(step)
    params = meta.get("parameters") if isinstance(meta.get("parameters"), dict) else {}
    spec = meta.get("spec") if isinstance(meta.get("spec"), str) else None
    invariants = meta.get("invariants") if isinstance(meta.get("invariants"), list) else []
    doc: dict[str, Any] = {
        "schema": SCHEMA,
        "spec": spec if spec is not None else (meta.get("source") if isinstance(meta.get("source"), str) else None),
        "params": dict(params),
        "engine": meta.get("engine") if isinstance(meta.get("engine"), str) else None,
        "result": meta.get("result") if isinstance(meta.get("result"), str) else "violation",
        "invariants": [str(i) for i in invariants],
        "violated": meta.get("invariant") if isinstance(meta.get("invariant"), str) else None,
        "trace": trace,
        "format": "itf",
        "kafkamc": spec is not None,
    }
    for key in ("distinct_states", "states_generated", "depth"):
        if isinstance(meta.get(key), int) and not isinstance(meta.get(key), bool):
            doc[key] = meta[key]
    if isinstance(meta.get("spec_ref"), str):
        doc["spec_ref"] = meta["spec_ref"]
    for key in ("entities", "descriptions"):
        if isinstance(meta.get(key), dict):
            doc[key] = meta[key]
    path = meta.get("path")
    if isinstance(path, list) and path and all(isinstance(i, int) and not isinstance(i, bool) for i in path):
        doc["path"] = list(path)
    loop = obj.get("loop")
    if loop is not None:
        if not isinstance(loop, int) or isinstance(loop, bool) or not 0 <= loop < len(trace):
            raise UsageError(f"{where}: 'loop' must be the index of one of its states, not {loop!r}")
        doc["loop_start"] = loop
        doc["loop_action"] = meta.get("loop_action") if isinstance(meta.get("loop_action"), str) else None
        if isinstance(meta.get("fairness"), dict):
            doc["fairness"] = meta["fairness"]
    return doc


def read_itf(path: str) -> dict[str, Any]:
    """Load an ``.itf.json`` file as kafkamc's JSON trace document."""
    return itf_to_document(_load_json(path), path)


def check_document(doc: Any, where: str = "the trace") -> dict[str, Any]:
    """Validate kafkamc's JSON trace document (``kafkamc check --json`` with a trace); UsageError if not."""
    if not isinstance(doc, dict) or "schema" not in doc or "trace" not in doc:
        raise UsageError(
            f"{where} is not a kafkamc trace: expected the JSON object of 'kafkamc check --out' "
            "(with 'schema' and 'trace') or an ITF trace (.itf.json)"
        )
    if doc["schema"] != SCHEMA:
        raise UsageError(f"{where} has trace schema {_short(doc['schema'])}; this kafkamc reads schema {SCHEMA}")
    trace = doc["trace"]
    if trace is None:
        raise UsageError(f"{where} holds no counterexample (result {_short(doc.get('result'))})")
    if not isinstance(trace, list) or not trace:
        raise UsageError(f"{where}: 'trace' must be a non-empty list of steps")
    for n, step in enumerate(trace):
        if not isinstance(step, dict) or "state" not in step or "action" not in step:
            raise UsageError(f"{where}: step {n + 1} must be an object with 'action' and 'state'")
        if step["action"] is not None and not isinstance(step["action"], str):
            raise UsageError(f"{where}: step {n + 1}: the action must be a string or null")
    if not isinstance(doc.get("params", {}), dict):
        raise UsageError(f"{where}: 'params' must be an object")
    for key in ("spec", "spec_ref", "violated", "engine", "result"):
        if doc.get(key) is not None and not isinstance(doc[key], str):
            raise UsageError(f"{where}: {key!r} must be a string or null, not {type(doc[key]).__name__}")
    invariants = doc.get("invariants", [])
    if not (isinstance(invariants, list) and all(isinstance(i, str) for i in invariants)):
        raise UsageError(f"{where}: 'invariants' must be a list of names (strings)")
    for key in ("distinct_states", "states_generated", "depth"):
        value = doc.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise UsageError(f"{where}: {key!r} must be an integer or null")
    loop = doc.get("loop_start")
    if loop is not None and (not isinstance(loop, int) or isinstance(loop, bool) or not 0 <= loop < len(trace)):
        raise UsageError(f"{where}: 'loop_start' must be the index of one of its steps, not {loop!r}")
    if doc.get("loop_action") is not None and not isinstance(doc["loop_action"], str):
        raise UsageError(f"{where}: 'loop_action' must be a string or null")
    path = doc.get("path")
    if path is not None and not (
        isinstance(path, list) and all(isinstance(i, int) and not isinstance(i, bool) for i in path)
    ):
        raise UsageError(f"{where}: 'path' must be a list of integers")
    return doc


def load_trace_file(path: str) -> dict[str, Any]:
    """Either kind of trace file (kafkamc JSON or ITF) as kafkamc's JSON trace document."""
    obj = _load_json(path)
    if is_itf(obj):
        return itf_to_document(obj, path)
    doc = check_document(obj, path)
    out = dict(doc)
    out.setdefault("format", "kafkamc")
    out.setdefault("kafkamc", True)
    return out


def document_of(result_or_document: Any) -> dict[str, Any]:
    """A CheckResult or an ITF object or a JSON trace document, as a checked JSON trace document."""
    if isinstance(result_or_document, CheckResult):
        doc = result_to_json(result_or_document)
        return check_document(doc, f"the result of {result_or_document.spec}")
    if is_itf(result_or_document):
        return itf_to_document(result_or_document)
    return check_document(result_or_document)


# Bounds on what a trace file may hold; kafkamc's own files are far inside them. A file beyond
# them is refused in one line instead of exhausting memory, the stack or CPython's int parser.
MAX_TRACE_BYTES = 256 * 1024 * 1024
MAX_NESTING = 100
MAX_DIGITS = 4300  # CPython's own limit on int <-> str conversion


def _load_json(path: str) -> Any:
    try:
        info = os.stat(path)
    except OSError as exc:
        raise UsageError(f"cannot read trace file {path}: {exc.strerror or exc}") from None
    if not stat.S_ISREG(info.st_mode):
        raise UsageError(f"{path} is not a trace file: not a regular file")
    if info.st_size > MAX_TRACE_BYTES:
        raise UsageError(f"{path} is not a trace file: larger than {MAX_TRACE_BYTES >> 20} MiB")
    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_TRACE_BYTES + 1)  # bounded: the file may grow while it is read
    except OSError as exc:
        raise UsageError(f"cannot read trace file {path}: {exc.strerror or exc}") from None
    if len(data) > MAX_TRACE_BYTES:
        raise UsageError(f"{path} is not a trace file: larger than {MAX_TRACE_BYTES >> 20} MiB")
    try:
        obj = json.loads(data.decode("utf-8"), parse_constant=_no_constant, parse_int=_bounded_int,
                         parse_float=_finite_float)
    except UnicodeDecodeError:
        raise UsageError(f"{path} is not a trace file: not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise UsageError(f"{path} is not a trace file: invalid JSON at line {exc.lineno} column {exc.colno}") from None
    except RecursionError:
        raise UsageError(f"{path} is not a trace file: JSON nested too deeply") from None
    except _Malformed as exc:
        raise UsageError(f"{path} is not a trace file: {exc}") from None
    problem = _unusable(obj)
    if problem is not None:
        raise UsageError(f"{path} is not a trace file: {problem}")
    return obj


def _no_constant(name: str) -> Any:
    raise _Malformed(f"{name} is not a value a trace holds (allowed: integers, strings, booleans, null)")


def _bounded_int(text: str) -> int:
    if len(text) > MAX_DIGITS:
        raise _Malformed(f"an integer of {len(text):,} digits (at most {MAX_DIGITS:,})")
    return int(text)


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _Malformed(f"the number {text[:40]} is out of range")
    return value


def _unusable(obj: Any) -> str | None:
    """Why a parsed document cannot be shown or replayed: nesting beyond ``MAX_NESTING`` (the
    renderers recurse), or a string that is not text (a lone surrogate cannot be printed)."""
    stack = [(obj, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > MAX_NESTING:
            return f"nested more than {MAX_NESTING} levels deep"
        if isinstance(value, dict):
            for key, item in value.items():
                if not _is_text(key):
                    return f"a key that is not text: {_short(key)}"
                stack.append((item, depth + 1))
        elif isinstance(value, list):
            stack.extend((item, depth + 1) for item in value)
        elif isinstance(value, str) and not _is_text(value):
            return f"a string that is not text (a lone surrogate): {_short(value)}"
    return None


def _is_text(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _short(value: Any) -> str:
    text = ascii(value) if isinstance(value, str) else repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
