"""A self-contained HTML viewer of a counterexample trace.

One file, no network: the page's CSS and JavaScript (package data beside this module:
``viewer/viewer.css``, ``viewer/viewer.js``, ``viewer/viewer.html``) are inlined, a Content-Security-Policy with
``default-src 'none'`` forbids every fetch, and only the page's own script (by its SHA-256) may
run. The trace is embedded as JSON in a ``<script type="application/json">`` block with ``<``,
``>`` and ``&`` escaped, and the page builds its DOM with ``textContent`` only, so a label or a
value that holds HTML or script shows as text and runs nothing.

What the page shows: the violated invariant with the failing step marked; a step list (number,
action label); the selected step's state, per-entity variables as a table (one row per replica,
broker, producer...) and the others as a tree, each value marked added, modified, removed or
unchanged against the previous step, with a "hide unchanged" toggle and a filter by variable or
entity; swim lanes with one row per entity over the steps, showing whose state each action
changed and whom its label names; arrow-key navigation; ``#step-N`` fragments.

Entities come from the spec when its class declares them (an ``entities`` class attribute
mapping a kind to the names of the state's per-entity tuple fields, e.g.
``{"replica": ("logs", "hw", "leader_epoch", "leader", "isr")}``, entity ``i`` at index
``i-1``) and are otherwise inferred: a top-level field that holds a list of the same length in
every state belongs to the kind of the parameter it is named after (``producers``) or whose value
is that length (``replicas=3``).
"""

from __future__ import annotations

import base64
import functools
import hashlib
import html
import importlib.resources
import json
import re
from typing import Any

from kafkamc.counterexamples.itf import document_of
from kafkamc.safewrite import write_file

__all__ = ["render_html", "write_html", "infer_entities", "lanes_of", "embed_json", "page_data", "viewer_asset"]

_CALL = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*\((.*)\)")


def embed_json(data: Any) -> str:
    """JSON that is safe inside a ``<script type="application/json">`` element."""
    text = json.dumps(data, ensure_ascii=True, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


# -- entities --------------------------------------------------------------------------------


_ENTITY_WORDS = {
    "broker", "replica", "producer", "consumer", "member", "node", "voter", "controller", "partition",
    "client", "server", "coordinator", "follower", "observer",
}


def _singular(name: str) -> str:
    if name.endswith("ies"):
        return name[:-3] + "y"
    if name.endswith("s") and not name.endswith("ss"):
        return name[:-1]
    return name


def _set_like(value: list[Any]) -> bool:
    """A sorted list of distinct integers: how a frozenset looks in the JSON trace."""
    return all(isinstance(v, int) and not isinstance(v, bool) for v in value) and all(
        a < b for a, b in zip(value, value[1:])
    )


def infer_entities(doc: dict[str, Any], hint: Any = None) -> list[dict[str, Any]]:
    """The entity kinds of a trace: ``[{"kind", "fields", "count", "names"}]``.

    ``hint`` (a spec's ``entities`` attribute) maps kinds to field names; without it the fields
    are inferred as the module docstring says. A field is per-entity only if it is a list of one
    length in every state of the trace.
    """
    states = [step["state"] for step in doc["trace"]]
    if not states or not all(isinstance(s, dict) for s in states):
        return []
    first = states[0]
    lengths: dict[str, int] = {}
    for key, value in first.items():
        if not isinstance(value, list) or len(value) < 1:
            continue
        if all(isinstance(s.get(key), list) and len(s[key]) == len(value) for s in states):
            if len(value) > 1 and all(_set_like(s[key]) for s in states):
                continue
            lengths[key] = len(value)
    groups: dict[str, list[str]] = {}
    if isinstance(hint, dict) and hint:
        for kind, fields in hint.items():
            chosen = [f for f in fields if f in lengths]
            if chosen and len({lengths[f] for f in chosen}) == 1:
                groups[str(kind)] = chosen
    else:
        params = {
            k: v for k, v in (doc.get("params") or {}).items()
            if isinstance(v, int) and not isinstance(v, bool) and v >= 1
        }
        leftover: dict[int, list[str]] = {}
        for key, n in lengths.items():
            named = next((k for k in params if params[k] == n and (k == key or _singular(k) == _singular(key))), None)
            if named is not None:
                groups.setdefault(_singular(named), []).append(key)
            else:
                leftover.setdefault(n, []).append(key)
        for n, fields in sorted(leftover.items(), key=lambda kv: -len(kv[1])):
            by_value = [k for k in params if params[k] == n and _singular(k) not in groups]
            # A parameter that counts brokers, replicas, ... before one that merely has that value.
            by_value.sort(key=lambda k: _singular(k) not in _ENTITY_WORDS)
            if by_value:
                groups.setdefault(_singular(by_value[0]), []).extend(fields)
            elif n >= 2 and (len(fields) >= 2 or any(isinstance(v, dict) for v in first[fields[0]])):
                if "entity" not in groups:
                    groups["entity"] = fields
    initials = [kind[:1] for kind in groups]
    out = []
    for kind, fields in groups.items():
        count = lengths[fields[0]]
        short = initials.count(kind[:1]) == 1 and kind != "entity"
        # Named as the text renderer names them (``r2``; ``producer2`` when kinds share a letter).
        names = [f"{kind[:1]}{i}" if short else f"{kind}{i}" for i in range(1, count + 1)]
        group = {"kind": kind, "fields": fields, "count": count, "names": names}
        columns = {f: _record_keys(states, f) for f in fields}
        columns = {f: keys for f, keys in columns.items() if keys}
        if columns:
            # Per-entity records (a tuple of dataclasses) are shown with a column per field.
            group["columns"] = columns
        out.append(group)
    return out


def _record_keys(states: list[dict[str, Any]], field: str) -> list[str] | None:
    """The keys shared by every item of a per-entity field if every item is an object, else None."""
    keys: list[str] | None = None
    for s in states:
        for item in s[field]:
            if not isinstance(item, dict) or not item:
                return None
            if keys is None:
                keys = list(item)
            elif list(item) != keys:
                return None
    return keys


def _mentions(kind: str, index: int, name: str, short: bool) -> re.Pattern[str]:
    """How a label names entity ``index`` of ``kind``: ``r2``, ``replica=2``, ``producer 2``; the
    one-letter form only when no other kind shares the letter (``p1`` of producers or partitions)."""
    alternatives = [re.escape(name), rf"{re.escape(kind)}\s*[=: ]\s*{index}"]
    if short:
        alternatives.append(rf"{re.escape(kind[:1])}{index}")
    return re.compile(r"(?<![A-Za-z0-9_])(?:" + "|".join(alternatives) + r")(?![A-Za-z0-9_])", re.IGNORECASE)


def lanes_of(doc: dict[str, Any], entities: list[dict[str, Any]]) -> dict[str, Any]:
    """Swim lanes: a row per entity (and one for the shared state) and, per step and row, the cell
    ``[changed fields, named first in the label, named in the label]`` (None if nothing)."""
    rows = []
    entity_fields = set()
    initials = [group["kind"][:1] for group in entities]
    for group in entities:
        short = initials.count(group["kind"][:1]) == 1 and group["kind"] != "entity"
        entity_fields.update(group["fields"])
        for i, name in enumerate(group["names"]):
            rows.append({"name": name, "kind": group["kind"], "index": i, "fields": group["fields"],
                         "columns": group.get("columns", {}),
                         "pattern": _mentions(group["kind"], i + 1, name, short)})
    rows.append({"name": "shared", "kind": "shared", "index": -1, "fields": None, "pattern": None})
    cells: list[list[Any]] = []
    steps = doc["trace"]
    for n, step in enumerate(steps):
        label = step["action"] or ""
        match = _CALL.match(label)
        first_arg = ""
        if match:
            args = match.group(2)
            first_arg = re.split(r",(?![^()]*\))", args)[0] if args else ""
        cur = step["state"]
        prev = steps[n - 1]["state"] if n > 0 else None
        row_cells: list[Any] = []
        for row in rows:
            changed: list[str] = []
            if prev is not None and isinstance(cur, dict) and isinstance(prev, dict):
                if row["fields"] is None:
                    changed = [k for k in cur if k not in entity_fields and prev.get(k, _MISSING) != cur[k]]
                    changed += [k for k in prev if k not in cur and k not in entity_fields]
                else:
                    i = row["index"]
                    for f in row["fields"]:
                        old, new = _item(prev.get(f), i), _item(cur.get(f), i)
                        if old == new:
                            continue
                        keys = row["columns"].get(f)
                        if keys and isinstance(old, dict) and isinstance(new, dict):
                            changed += [k for k in keys if old.get(k) != new.get(k)]
                        else:
                            changed.append(f)
            elif prev is not None and row["fields"] is None and prev != cur:
                changed = ["state"]
            actor = bool(row["pattern"] and first_arg and row["pattern"].search(first_arg))
            named = bool(row["pattern"] and label and row["pattern"].search(label))
            row_cells.append([changed, actor, named] if (changed or named) else None)
        cells.append(row_cells)
    return {
        "rows": [{"name": r["name"], "kind": r["kind"], "index": r["index"]} for r in rows],
        "cells": cells,
    }


_MISSING = object()


def _item(value: Any, i: int) -> Any:
    return value[i] if isinstance(value, list) and 0 <= i < len(value) else _MISSING


# -- the page --------------------------------------------------------------------------------


def _spec_info(doc: dict[str, Any]) -> tuple[str | None, Any]:
    """The violated property's description and the spec's ``entities`` hook, for bundled specs."""
    spec = doc.get("spec")
    if not isinstance(spec, str) or not doc.get("kafkamc", True):
        return None, None
    try:
        from kafkamc.spec.registry import BUNDLED, bundled_names, load_spec_class

        if spec not in BUNDLED or spec not in bundled_names():
            return None, None
        cls = load_spec_class(spec)
    except Exception:
        return None, None
    description = None
    violated = doc.get("violated")
    if violated == "deadlock":
        description = "a reachable state has no successors"
    elif isinstance(violated, str):
        for prop in cls.properties():
            if prop.name == violated:
                description = prop.description
    hint = getattr(cls, "entities", None)
    if callable(hint):
        try:
            from kafkamc.spec.api import Params

            hint = hint(Params(dict(doc.get("params") or {})))
        except Exception:
            hint = None
    return description, hint


def page_data(doc: dict[str, Any]) -> dict[str, Any]:
    """Everything the page's script reads, computed from a checked trace document."""
    description, hint = _spec_info(doc)
    if isinstance(doc.get("entities"), dict):
        hint = doc["entities"]
    recorded = doc.get("descriptions") if isinstance(doc.get("descriptions"), dict) else {}
    violated = doc.get("violated")
    if isinstance(violated, str) and isinstance(recorded.get(violated), str):
        # Recorded by the run (any spec, a user's too): no import needed to describe it.
        description = recorded[violated]
    entities = infer_entities(doc, hint)
    stats = {k: doc[k] for k in ("distinct_states", "states_generated", "depth", "seconds") if k in doc}
    return {
        "spec": doc.get("spec"),
        "params": _js_safe(doc.get("params") or {}),
        "engine": doc.get("engine"),
        "result": doc.get("result"),
        "violated": doc.get("violated"),
        "description": description,
        "invariants": doc.get("invariants") or [],
        "stats": stats,
        "format": doc.get("format", "kafkamc"),
        "descriptions": {str(k): v for k, v in recorded.items() if isinstance(v, str)},
        "steps": [{"action": s["action"], "state": _js_safe(s["state"]), "sets": _sets_of(s)} for s in doc["trace"]],
        "failing": len(doc["trace"]) if doc.get("violated") and doc.get("loop_start") is None else None,
        # A lasso (liveness counterexample): the steps from loop_start on repeat forever.
        "loop_start": doc.get("loop_start"),
        "loop_action": doc.get("loop_action"),
        "entities": entities,
        "lanes": lanes_of(doc, entities),
    }


def _sets_of(step: dict[str, Any]) -> list[str]:
    """A step's recorded set pointers (see ``render.trace_to_json``): which lists are sets."""
    sets = step.get("sets")
    return [p for p in sets if isinstance(p, str)] if isinstance(sets, list) else []


_JS_SAFE = 2**53 - 1


def _js_safe(value: Any) -> Any:
    """Integers JavaScript cannot hold exactly become ``{"#bigint": "digits"}``, as in ITF."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return value if -_JS_SAFE <= value <= _JS_SAFE else {"#bigint": str(value)}
    if isinstance(value, list):
        return [_js_safe(v) for v in value]
    if isinstance(value, dict):
        return {k: _js_safe(v) for k, v in value.items()}
    return value


def render_html(trace_document: dict[str, Any]) -> str:
    """The viewer page of a trace document (the JSON of ``kafkamc check --json``, or an ITF object)."""
    doc = document_of(trace_document)
    data = page_data(doc)
    script = viewer_asset("viewer.js")
    script_hash = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")
    csp = (
        "default-src 'none'; "
        f"script-src 'sha256-{script_hash}'; "
        "style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'"
    )
    title = f"{doc.get('spec') or 'trace'}: {doc.get('violated') or 'trace'}"
    return (
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        f"<meta http-equiv=\"Content-Security-Policy\" content=\"{html.escape(csp)}\">\n"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
        f"<title>{html.escape(title)} - kafkamc trace</title>\n"
        f"<style>\n{viewer_asset('viewer.css')}</style>\n</head>\n<body>\n{viewer_asset('viewer.html')}"
        f"<script type=\"application/json\" id=\"trace-data\">{embed_json(data)}</script>\n"
        f"<script>{script}</script>\n</body>\n</html>\n"
    )


def write_html(result_or_document: Any, path: str) -> str:
    """Write the viewer of a CheckResult or a trace document to ``path``; returns the path."""
    return write_file(path, render_html(document_of(result_or_document)))


@functools.cache
def viewer_asset(name: str) -> str:
    """One of the viewer's files (``viewer.css``, ``viewer.js``, ``viewer.html``), package data."""
    return importlib.resources.files("kafkamc.counterexamples").joinpath("viewer", name).read_text(encoding="utf-8")
