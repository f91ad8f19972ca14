"""A self-contained HTML viewer of a counterexample trace.

One file, no network: the page's CSS and JavaScript are inline, a Content-Security-Policy with
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
import hashlib
import html
import json
import os
import re
from typing import Any

from kafkamc.counterexamples.itf import document_of

__all__ = ["render_html", "write_html", "infer_entities", "lanes_of", "embed_json"]

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
        names = [f"{kind[:1]}{i}" if short else f"{kind} {i}" for i in range(1, count + 1)]
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
        "steps": [{"action": s["action"], "state": _js_safe(s["state"])} for s in doc["trace"]],
        "failing": len(doc["trace"]) if doc.get("violated") and doc.get("loop_start") is None else None,
        # A lasso (liveness counterexample): the steps from loop_start on repeat forever.
        "loop_start": doc.get("loop_start"),
        "loop_action": doc.get("loop_action"),
        "entities": entities,
        "lanes": lanes_of(doc, entities),
    }


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
    script_hash = base64.b64encode(hashlib.sha256(_SCRIPT.encode("utf-8")).digest()).decode("ascii")
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
        f"<style>{_STYLE}</style>\n</head>\n<body>\n{_BODY}\n"
        f"<script type=\"application/json\" id=\"trace-data\">{embed_json(data)}</script>\n"
        f"<script>{_SCRIPT}</script>\n</body>\n</html>\n"
    )


def write_html(result_or_document: Any, path: str) -> str:
    """Write the viewer of a CheckResult or a trace document to ``path``; returns the path."""
    text = render_html(document_of(result_or_document))
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.replace(tmp, path)
    return path


_STYLE = """
:root { --add: #1a7f37; --add-bg: #dafbe1; --mod: #9a6700; --mod-bg: #fff1c2; --rem: #cf222e;
  --rem-bg: #ffebe9; --muted: #6e7781; --line: #d0d7de; --sel: #ddf4ff; --fail: #cf222e; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.4 system-ui, -apple-system, "Segoe UI", sans-serif; color: #1f2328; }
code, .mono, td.val, .step-label { font-family: ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace; font-size: 12.5px; }
header { padding: 10px 16px; border-bottom: 1px solid var(--line); background: #f6f8fa; }
header h1 { font-size: 18px; margin: 0 0 4px 0; }
header .params { color: var(--muted); word-break: break-all; }
#verdict { margin-top: 6px; padding: 6px 10px; border-left: 4px solid var(--fail); background: var(--rem-bg); }
#verdict.none { border-left-color: var(--muted); background: #eaeef2; }
#verdict button { margin-left: 8px; }
#stats { color: var(--muted); font-size: 12px; margin-top: 4px; }
#lanes-wrap { overflow: auto; border-bottom: 1px solid var(--line); padding: 6px 0; max-height: 40vh; }
#lanes { border-collapse: collapse; margin: 0 16px; }
#lanes th, #lanes td { border: 1px solid #eaeef2; padding: 0; text-align: center; }
#lanes th.lane-name { position: sticky; left: 0; background: #fff; text-align: left; padding: 0 8px; white-space: nowrap; z-index: 1; }
#lanes thead th { font-weight: normal; color: var(--muted); font-size: 11px; min-width: 28px; cursor: pointer; position: sticky; top: 0; background: #fff; }
#lanes thead th.lane-name { z-index: 2; }
#lanes td { height: 22px; min-width: 28px; cursor: pointer; font-size: 10px; }
#lanes td .chg { display: block; margin: 2px; border-radius: 3px; background: #b6e3ff; color: #0a3069; line-height: 16px; overflow: hidden; white-space: nowrap; }
#lanes td .chg.actor { background: #0969da; color: #fff; font-weight: bold; }
#lanes td .named { display: block; margin: 2px; border: 1px dashed #0969da; border-radius: 3px; line-height: 14px; color: #0969da; }
#lanes .col-sel { background: var(--sel); }
#lanes .col-fail { box-shadow: inset 0 -3px 0 var(--fail); }
#lanes thead th.col-fail { color: var(--fail); font-weight: bold; }
#lanes tr.lane-focus th.lane-name { background: #fff8c5; }
main { display: flex; align-items: flex-start; min-height: 50vh; }
nav#steps { width: 34%; max-width: 480px; min-width: 240px; border-right: 1px solid var(--line); max-height: 80vh; overflow-y: auto; }
nav#steps ol { list-style: none; margin: 0; padding: 0; }
nav#steps li a { display: flex; flex-wrap: wrap; gap: 0 6px; padding: 3px 10px; color: inherit; text-decoration: none; border-bottom: 1px solid #f0f2f4; }
nav#steps li a:hover { background: #f6f8fa; }
nav#steps li.selected a { background: var(--sel); box-shadow: inset 3px 0 0 #0969da; }
nav#steps li.failing a { color: var(--fail); }
nav#steps li.dim a { opacity: 0.45; }
nav#steps .num { color: var(--muted); min-width: 2.5em; text-align: right; }
nav#steps .step-label { word-break: break-all; flex: 1; }
nav#steps .nchg { color: var(--muted); font-size: 11px; white-space: nowrap; }
nav#steps .failmark { color: var(--fail); font-weight: bold; flex-basis: 100%; padding-left: 3.2em; word-break: break-all; }
section#state { flex: 1; padding: 8px 16px; min-width: 0; }
#toolbar { display: flex; flex-wrap: wrap; gap: 10px; align-items: center; margin-bottom: 8px; }
#step-title { font-size: 16px; margin: 0 0 6px 0; word-break: break-all; }
#step-title .failmark { color: var(--fail); }
nav#steps li.cycle { border-left: 3px solid var(--mod); }
nav#steps .loopmark { color: var(--mod); font-weight: bold; flex-basis: 100%; padding-left: 3.2em; }
.legend span { display: inline-block; padding: 0 6px; border-radius: 3px; margin-right: 4px; font-size: 12px; }
table.vals { border-collapse: collapse; margin-bottom: 14px; }
table.vals th, table.vals td { border: 1px solid var(--line); padding: 2px 8px; vertical-align: top; text-align: left; }
table.vals th { background: #f6f8fa; font-weight: 600; }
td.val { word-break: break-all; max-width: 60vw; }
#state-view td[data-path] { cursor: pointer; }
#history h3 button { margin-left: 10px; text-transform: none; }
tr.selected-step { background: var(--sel); }
.added { background: var(--add-bg); }
.modified { background: var(--mod-bg); }
.removed { background: var(--rem-bg); }
.removed .now { text-decoration: line-through; color: var(--rem); }
.old { color: var(--muted); text-decoration: line-through; margin-right: 6px; }
.delta { display: block; font-size: 11px; color: var(--mod); }
.mark { font-size: 11px; color: var(--muted); white-space: nowrap; }
.added .mark { color: var(--add); } .modified .mark { color: var(--mod); } .removed .mark { color: var(--rem); }
tr.group th { background: #eaeef2; }
.indent1 { padding-left: 22px !important; } .indent2 { padding-left: 36px !important; } .indent3 { padding-left: 50px !important; }
body.hide-unchanged tr.unchanged, body.hide-unchanged .unchanged-block { display: none; }
h3 { font-size: 13px; margin: 10px 0 4px 0; color: var(--muted); text-transform: uppercase; letter-spacing: 0.04em; }
.empty-note { color: var(--muted); font-style: italic; }
kbd { border: 1px solid var(--line); border-radius: 3px; padding: 0 4px; font-size: 11px; }
"""

_BODY = """<header>
<h1 id="title"></h1>
<div class="params" id="params"></div>
<div id="verdict"></div>
<div id="stats"></div>
</header>
<div id="lanes-wrap"><table id="lanes" aria-label="entity lanes"></table></div>
<main>
<nav id="steps" aria-label="steps"><ol id="step-list"></ol></nav>
<section id="state">
<h2 id="step-title"></h2>
<div id="toolbar">
<button type="button" id="prev" title="previous step (left or up arrow)">&#8592; prev</button>
<button type="button" id="next" title="next step (right or down arrow)">next &#8594;</button>
<label><input type="checkbox" id="hide-unchanged"> hide unchanged</label>
<input type="search" id="filter" placeholder="filter variables" aria-label="filter variables">
<select id="entity-filter" aria-label="filter by entity"><option value="">all entities</option></select>
<span class="legend"><span class="added">+ added</span><span class="modified">~ modified</span><span class="removed">&#8722; removed</span><span>= unchanged</span></span>
<span class="mark"><kbd>&#8592;</kbd><kbd>&#8594;</kbd> <kbd>Home</kbd><kbd>End</kbd> &middot; click a value for its history</span>
</div>
<div id="state-view"></div>
<div id="history" hidden></div>
</section>
</main>"""

_SCRIPT = r"""
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("trace-data").textContent);
  var steps = data.steps;
  var N = steps.length;
  var entityFields = Object.create(null);
  data.entities.forEach(function (g) { g.fields.forEach(function (f) { entityFields[f] = g; }); });
  var BARE = /^[A-Za-z_][A-Za-z0-9_.-]*$/;

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function show(v) {
    if (v === null || v === undefined) return "null";
    if (typeof v === "boolean") return v ? "true" : "false";
    if (typeof v === "string") return BARE.test(v) ? v : JSON.stringify(v);
    if (isBig(v)) return v["#bigint"];
    if (Array.isArray(v)) return "[" + v.map(show).join(", ") + "]";
    if (typeof v === "object") return "{" + Object.keys(v).map(function (k) { return k + ": " + show(v[k]); }).join(", ") + "}";
    return String(v);
  }
  // Integers beyond 2^53 arrive as {"#bigint": "digits"} (as in ITF) and are shown and compared as scalars.
  function isBig(v) { return v !== null && typeof v === "object" && !Array.isArray(v) && typeof v["#bigint"] === "string" && Object.keys(v).length === 1; }
  function isBox(v) { return v !== null && typeof v === "object" && !isBig(v); }
  function has(o, k) { return Object.prototype.hasOwnProperty.call(o, k); }
  // The same leaves as 'kafkamc trace show': objects opened, lists of lists or objects by index.
  function flatten(v, prefix, out) {
    if (isBox(v) && !Array.isArray(v) && Object.keys(v).length) {
      Object.keys(v).forEach(function (k) { flatten(v[k], prefix ? prefix + "." + k : k, out); });
    } else if (Array.isArray(v) && v.length && v.every(isBox)) {
      v.forEach(function (x, i) { flatten(x, prefix + "[" + i + "]", out); });
    } else {
      out.push([prefix || "state", v]);
    }
    return out;
  }
  function opened(path, keys) {
    for (var i = 0; i < keys.length; i++) {
      var k = keys[i];
      if (k.length > path.length && k.lastIndexOf(path, 0) === 0 && (k[path.length] === "[" || k[path.length] === ".")) return true;
    }
    return false;
  }

  // Per step: the state's variables in order, and for each non-entity variable its leaves.
  var cache = [];
  function info(n) {
    if (cache[n]) return cache[n];
    var s = steps[n].state;
    var vars = [];
    var isObj = isBox(s) && !Array.isArray(s);
    var keys = isObj ? Object.keys(s) : ["state"];
    keys.forEach(function (k) {
      var v = isObj ? s[k] : s;
      var leaves = flatten(v, isObj ? k : "", []);
      var map = Object.create(null);
      leaves.forEach(function (l) { map[l[0]] = JSON.stringify(l[1]); });
      vars.push({ name: k, value: v, leaves: leaves, map: map, json: JSON.stringify(v) });
    });
    var byName = Object.create(null);
    vars.forEach(function (v) { byName[v.name] = v; });
    return (cache[n] = { vars: vars, byName: byName });
  }

  function markOf(n, oldJson, newJson) {
    if (n === 0) return "initial";
    if (oldJson === undefined) return "added";
    if (newJson === undefined) return "removed";
    return oldJson === newJson ? "unchanged" : "modified";
  }
  var SIGN = { added: "+ added", modified: "~ modified", removed: "\u2212 removed", unchanged: "=", initial: "" };

  function changeCount(n) {
    if (n === 0) return 0;
    var a = info(n - 1), b = info(n), c = 0;
    b.vars.forEach(function (v) {
      var p = a.byName[v.name];
      if (!p) { c += 1; return; }
      if (p.json === v.json) return;
      var g = entityFields[v.name];
      if (g && Array.isArray(v.value) && Array.isArray(p.value)) {
        for (var i = 0; i < g.count; i++) if (JSON.stringify(v.value[i]) !== JSON.stringify(p.value[i])) c += 1;
      } else {
        Object.keys(v.map).forEach(function (k) { if (p.map[k] !== v.map[k] && !(p.map[k] === undefined && (v.map[k] === "[]" || v.map[k] === "{}") && opened(k, Object.keys(p.map)))) c += 1; });
        Object.keys(p.map).forEach(function (k) { if (v.map[k] === undefined && !((p.map[k] === "[]" || p.map[k] === "{}") && opened(k, Object.keys(v.map)))) c += 1; });
      }
    });
    a.vars.forEach(function (p) { if (!b.byName[p.name]) c += 1; });
    return c;
  }

  // -- header ----------------------------------------------------------------------------
  document.getElementById("title").textContent = (data.spec || "trace") + (data.violated ? ": " + data.violated + " violated" : "");
  var params = Object.keys(data.params).map(function (k) { return k + "=" + show(data.params[k]); }).join("  ");
  document.getElementById("params").textContent = params ? "parameters: " + params : "";
  var verdict = document.getElementById("verdict");
  var lasso = data.loop_start !== null && data.loop_start !== undefined;
  if (lasso) {
    verdict.appendChild(document.createTextNode("Liveness property "));
    verdict.appendChild(el("strong", "", data.violated));
    verdict.appendChild(document.createTextNode(" fails: steps " + (data.loop_start + 1) + " to " + N + " repeat forever" + (data.loop_action === null ? " (the last state stutters)" : " (" + data.loop_action + " leads back to step " + (data.loop_start + 1) + ")")));
  } else if (data.violated) {
    if (data.violated === "deadlock") {
      verdict.appendChild(el("strong", "", "Deadlock"));
      verdict.appendChild(document.createTextNode(" at step " + data.failing + " of " + N + ": the state has no successors"));
    } else {
      verdict.appendChild(document.createTextNode("Invariant "));
      verdict.appendChild(el("strong", "", data.violated));
      verdict.appendChild(document.createTextNode(" fails at step " + data.failing + " of " + N + (data.description ? ": " + data.description : "")));
    }
    var jump = el("button", "", "go to failing step");
    jump.type = "button"; jump.id = "goto-failing";
    jump.addEventListener("click", function () { select(data.failing - 1, true); });
    verdict.appendChild(jump);
  } else {
    verdict.className = "none";
    verdict.textContent = "A trace of " + N + " states (no violated invariant recorded).";
  }
  var st = [];
  if (data.engine) st.push("engine " + data.engine);
  if (data.stats.distinct_states !== undefined) st.push(Number(data.stats.distinct_states).toLocaleString("en") + " distinct states");
  if (data.stats.depth !== undefined) st.push("depth " + data.stats.depth);
  if (data.invariants.length) st.push("checked: " + data.invariants.join(", "));
  st.push(data.format === "itf" ? "read from ITF" : "kafkamc trace");
  document.getElementById("stats").textContent = st.join(" \u00b7 ");

  // -- step list ---------------------------------------------------------------------------
  var list = document.getElementById("step-list");
  var items = [];
  steps.forEach(function (s, n) {
    var li = el("li");
    li.id = "item-" + (n + 1);
    var a = el("a");
    a.href = "#step-" + (n + 1);
    a.appendChild(el("span", "num", (n + 1) + "."));
    a.appendChild(el("span", "step-label", s.action === null ? "initial state" : s.action));
    if (n > 0) { var c = changeCount(n); a.appendChild(el("span", "nchg", c + (c === 1 ? " change" : " changes"))); }
    if (data.failing === n + 1) { li.className = "failing"; a.appendChild(el("span", "failmark", "\u2716 " + data.violated)); }
    if (lasso && n >= data.loop_start) li.classList.add("cycle");
    if (lasso && n === data.loop_start) a.appendChild(el("span", "loopmark", "\u21bb the cycle starts here, and repeats"));
    li.appendChild(a);
    list.appendChild(li);
    items.push(li);
  });

  // -- lanes -------------------------------------------------------------------------------
  var lanes = document.getElementById("lanes");
  var columns = [];
  for (var c0 = 0; c0 < N; c0++) columns.push([]);
  function abbrev(label) {
    if (!label) return "init";
    var m = /^\s*([A-Za-z_][A-Za-z0-9_]*)/.exec(label);
    var name = m ? m[1] : label;
    var caps = name.replace(/[^A-Z]/g, "");
    return (caps.length >= 2 ? caps : name.slice(0, 3)).slice(0, 4);
  }
  (function buildLanes() {
    var thead = el("thead"), hr = el("tr");
    hr.appendChild(el("th", "lane-name", "step"));
    for (var n = 0; n < N; n++) {
      var th = el("th", "", n + 1);
      th.setAttribute("data-step", n + 1);
      th.title = "step " + (n + 1) + ": " + (steps[n].action === null ? "initial state" : steps[n].action);
      if (data.failing === n + 1) th.className = "col-fail";
      hr.appendChild(th);
      columns[n].push(th);
    }
    thead.appendChild(hr);
    lanes.appendChild(thead);
    var tbody = el("tbody");
    data.lanes.rows.forEach(function (row, r) {
      var tr = el("tr");
      tr.setAttribute("data-lane", row.name);
      tr.appendChild(el("th", "lane-name", row.kind === "shared" ? "shared state" : row.name));
      for (var n = 0; n < N; n++) {
        var cell = data.lanes.cells[n][r];
        var td = el("td");
        td.setAttribute("data-step", n + 1);
        if (data.failing === n + 1) td.className = "col-fail";
        var label = steps[n].action === null ? "initial state" : steps[n].action;
        if (cell) {
          var changed = cell[0], actor = cell[1];
          if (changed.length) {
            var b = el("span", "chg" + (actor ? " actor" : ""), abbrev(steps[n].action));
            td.appendChild(b);
            td.title = "step " + (n + 1) + ": " + label + "\n" + row.name + " changed: " + changed.join(", ");
          } else {
            td.appendChild(el("span", "named", "\u00b7"));
            td.title = "step " + (n + 1) + ": " + label + "\nnames " + row.name + " (no change to it)";
          }
        } else {
          td.title = "step " + (n + 1) + ": " + label;
        }
        tr.appendChild(td);
        columns[n].push(td);
      }
      tbody.appendChild(tr);
    });
    lanes.appendChild(tbody);
    lanes.addEventListener("click", function (ev) {
      var t = ev.target;
      while (t && t !== lanes && !t.getAttribute("data-step")) t = t.parentNode;
      if (t && t !== lanes) select(Number(t.getAttribute("data-step")) - 1, true);
    });
  })();

  // -- controls ----------------------------------------------------------------------------
  var hide = document.getElementById("hide-unchanged");
  var filter = document.getElementById("filter");
  var entitySel = document.getElementById("entity-filter");
  data.entities.forEach(function (g) {
    g.names.forEach(function (name, i) {
      var o = el("option", "", g.kind + " " + name);
      o.value = g.kind + "\u0000" + i;
      entitySel.appendChild(o);
    });
  });
  if (!data.entities.length) entitySel.style.display = "none";
  hide.addEventListener("change", function () { document.body.classList.toggle("hide-unchanged", hide.checked); });
  filter.addEventListener("input", function () { render(); });
  entitySel.addEventListener("change", function () { render(); focusLane(); });
  document.getElementById("prev").addEventListener("click", function () { select(current - 1, true); });
  document.getElementById("next").addEventListener("click", function () { select(current + 1, true); });

  function chosenEntity() {
    if (!entitySel.value) return null;
    var parts = entitySel.value.split("\u0000");
    var g = data.entities.filter(function (x) { return x.kind === parts[0]; })[0];
    return g ? { group: g, index: Number(parts[1]) } : null;
  }
  function focusLane() {
    var ch = chosenEntity();
    var name = ch ? ch.group.names[ch.index] : null;
    Array.prototype.forEach.call(lanes.querySelectorAll("tbody tr"), function (tr) {
      tr.classList.toggle("lane-focus", tr.getAttribute("data-lane") === name);
    });
    var r = -1;
    data.lanes.rows.forEach(function (row, i) { if (row.name === name) r = i; });
    items.forEach(function (li, n) {
      li.classList.toggle("dim", r >= 0 && !data.lanes.cells[n][r]);
    });
  }

  // -- the selected state --------------------------------------------------------------------
  var view = document.getElementById("state-view");
  // What changed inside a modified list: members of a set, records appended, a truncation.
  function delta(a, b) {
    if (!Array.isArray(a) || !Array.isArray(b)) return "";
    var scalar = function (x) { return !isBox(x); };
    var sorted = function (x) { for (var i = 1; i < x.length; i++) if (!(x[i - 1] < x[i])) return false; return true; };
    var sa = a.map(function (x) { return JSON.stringify(x); }), sb = b.map(function (x) { return JSON.stringify(x); });
    var prefix = function (p, q) { for (var i = 0; i < p.length; i++) if (p[i] !== q[i]) return false; return true; };
    if (a.every(scalar) && b.every(scalar) && sorted(a) && sorted(b)) {
      var plus = b.filter(function (x, i) { return sa.indexOf(sb[i]) < 0; }).map(function (x) { return "+" + show(x); });
      var minus = a.filter(function (x, i) { return sb.indexOf(sa[i]) < 0; }).map(function (x) { return "\u2212" + show(x); });
      return plus.concat(minus).join(" ");
    }
    if (sa.length < sb.length && prefix(sa, sb)) return "appended " + b.slice(a.length).map(show).join(", ");
    if (sb.length < sa.length && prefix(sb, sa)) return "truncated to " + b.length;
    return "";
  }
  function fill(td, mark, oldValue, newValue, hasNew) {
    if (mark === "modified") td.appendChild(el("span", "old", show(oldValue)));
    td.appendChild(el("span", "now", hasNew ? show(newValue) : show(oldValue)));
    var d = mark === "modified" ? delta(oldValue, newValue) : "";
    if (d) td.appendChild(el("span", "delta", d));
  }
  function markCell(mark) { return el("td", "mark", SIGN[mark]); }
  function matches(path, text) { return !text || path.toLowerCase().indexOf(text) >= 0; }

  function render() {
    var n = current;
    var cur = info(n), prev = n > 0 ? info(n - 1) : null;
    var text = filter.value.trim().toLowerCase();
    var ch = chosenEntity();
    view.textContent = "";
    var shown = 0;

    data.entities.forEach(function (g) {
      if (ch && ch.group !== g) return;
      // Columns: a per-entity field, or one column per key of its records.
      var cols = [];
      g.fields.forEach(function (f) {
        if (!cur.byName[f]) return;
        var keys = g.columns && has(g.columns, f) ? g.columns[f] : null;
        if (keys) keys.forEach(function (k) { cols.push({ field: f, key: k, head: g.fields.length > 1 ? f + "." + k : k }); });
        else cols.push({ field: f, key: null, head: f });
      });
      cols = cols.filter(function (c) { return matches(c.key === null ? c.field : c.field + "." + c.key, text); });
      if (!cols.length) return;
      var h3 = el("h3", "", g.kind + "s");
      view.appendChild(h3);
      var anyRow = false;
      var table = el("table", "vals entity-table");
      table.setAttribute("data-kind", g.kind);
      var hr = el("tr");
      hr.appendChild(el("th", "", g.kind));
      cols.forEach(function (c) { hr.appendChild(el("th", "", c.head)); });
      table.appendChild(hr);
      for (var i = 0; i < g.count; i++) {
        if (ch && ch.index !== i) continue;
        var tr = el("tr");
        tr.appendChild(el("th", "", g.names[i]));
        var any = false;
        cols.forEach(function (c) {
          var nv = cur.byName[c.field].value, pv = prev && prev.byName[c.field] ? prev.byName[c.field].value : undefined;
          var newItem = Array.isArray(nv) ? nv[i] : undefined;
          var oldItem = Array.isArray(pv) ? pv[i] : undefined;
          if (c.key !== null) {
            newItem = isBox(newItem) && has(newItem, c.key) ? newItem[c.key] : undefined;
            oldItem = isBox(oldItem) && has(oldItem, c.key) ? oldItem[c.key] : undefined;
          }
          var path = c.field + "[" + i + "]" + (c.key === null ? "" : "." + c.key);
          var nj = newItem === undefined ? undefined : JSON.stringify(newItem);
          var oj = oldItem === undefined ? undefined : JSON.stringify(oldItem);
          var mark = markOf(n, oj, nj);
          if (mark !== "unchanged") any = true;
          var td = el("td", "val " + mark);
          td.setAttribute("data-path", path);
          td.setAttribute("data-mark", mark);
          td.title = path + ": " + (SIGN[mark] || "initial state");
          fill(td, mark, oldItem, newItem, nj !== undefined);
          tr.appendChild(td);
          shown++;
        });
        if (!any) tr.classList.add("unchanged");
        else anyRow = true;
        table.appendChild(tr);
      }
      view.appendChild(table);
      if (!anyRow) { h3.classList.add("unchanged-block"); table.classList.add("unchanged-block"); }
    });

    var others = cur.vars.filter(function (v) { return !entityFields[v.name]; });
    var gone = prev ? prev.vars.filter(function (v) { return !cur.byName[v.name] && !entityFields[v.name]; }) : [];
    var rows = [];
    others.concat(gone).forEach(function (v) {
      var isGone = !cur.byName[v.name];
      var p = prev ? prev.byName[v.name] : undefined;
      var leaves = [];
      var curKeys = isGone ? [] : Object.keys(v.map);
      var prevKeys = p ? Object.keys(p.map) : [];
      if (!isGone) v.leaves.forEach(function (l) {
        var oj = p ? p.map[l[0]] : undefined, nj = v.map[l[0]];
        if (oj === undefined && (nj === "[]" || nj === "{}") && opened(l[0], prevKeys)) return;
        leaves.push({ path: l[0], value: l[1], old: oj === undefined ? undefined : JSON.parse(oj), mark: markOf(n, oj, nj), has: true });
      });
      if (p) p.leaves.forEach(function (l) {
        if (!isGone && v.map[l[0]] !== undefined) return;
        if ((p.map[l[0]] === "[]" || p.map[l[0]] === "{}") && opened(l[0], curKeys)) return;
        leaves.push({ path: l[0], value: undefined, old: l[1], mark: "removed", has: false });
      });
      if (!leaves.some(function (l) { return matches(l.path, text); }) && !matches(v.name, text)) return;
      var simple = leaves.length === 1 && leaves[0].path === v.name;
      if (!simple) {
        var changed = leaves.some(function (l) { return l.mark !== "unchanged"; });
        var gr = el("tr", "group" + (changed ? "" : " unchanged"));
        var th = el("th", "", v.name);
        th.colSpan = 3;
        gr.appendChild(th);
        rows.push(gr);
      }
      leaves.forEach(function (l) {
        if (!simple && !matches(l.path, text) && !matches(v.name, text)) return;
        var tr = el("tr", l.mark);
        var rel = simple ? l.path : l.path.slice(v.name.length);
        var depth = simple ? 0 : Math.min(3, 1 + (rel.match(/[\[.]/g) || []).length - 1);
        var name = el("td", "mono indent" + depth, rel || v.name);
        tr.appendChild(name);
        var td = el("td", "val");
        td.setAttribute("data-path", l.path);
        td.setAttribute("data-mark", l.mark);
        fill(td, l.mark, l.old, l.value, l.has);
        tr.appendChild(td);
        tr.appendChild(markCell(l.mark));
        rows.push(tr);
        shown++;
      });
    });
    if (rows.length) {
      var quiet = rows.every(function (r) { return r.classList.contains("unchanged"); });
      if (data.entities.length) view.appendChild(el("h3", quiet ? "unchanged-block" : "", "shared state"));
      var table = el("table", "vals tree-table" + (quiet ? " unchanged-block" : ""));
      var hr = el("tr");
      ["variable", "value", ""].forEach(function (h) { hr.appendChild(el("th", "", h)); });
      table.appendChild(hr);
      rows.forEach(function (r) { table.appendChild(r); });
      view.appendChild(table);
    }
    if (!shown) view.appendChild(el("p", "empty-note", "No variable matches the filter."));
    renderHistory();
  }

  // -- one value over the whole trace (click a value) ----------------------------------------
  var historyPath = null;
  var historyBox = document.getElementById("history");
  var ABSENT = {};
  function resolve(root, path) {
    var v = isBox(root) && !Array.isArray(root) ? root : { state: root };
    var re = /\[(\d+)\]|\.?([^.\[\]]+)/g, m;
    while ((m = re.exec(path)) !== null) {
      if (m[1] !== undefined) {
        var i = Number(m[1]);
        if (!Array.isArray(v) || i >= v.length) return ABSENT;
        v = v[i];
      } else {
        if (!isBox(v) || Array.isArray(v) || !has(v, m[2])) return ABSENT;
        v = v[m[2]];
      }
    }
    return v;
  }
  function renderHistory() {
    historyBox.textContent = "";
    historyBox.hidden = historyPath === null;
    if (historyPath === null) return;
    var head = el("h3", "", "history of " + historyPath);
    var close = el("button", "", "close");
    close.type = "button";
    close.id = "history-close";
    close.addEventListener("click", function () { historyPath = null; renderHistory(); });
    head.appendChild(close);
    historyBox.appendChild(head);
    var table = el("table", "vals history-table");
    var hr = el("tr");
    ["step", "action", "value"].forEach(function (h) { hr.appendChild(el("th", "", h)); });
    table.appendChild(hr);
    var last;
    steps.forEach(function (st, n) {
      var v = resolve(st.state, historyPath);
      var j = v === ABSENT ? "\u0000" : JSON.stringify(v);
      if (n > 0 && j === last) return;
      last = j;
      var tr = el("tr", n === current ? "selected-step" : "");
      tr.setAttribute("data-step", n + 1);
      var a = el("a", "", n + 1);
      a.href = "#step-" + (n + 1);
      var td = el("td");
      td.appendChild(a);
      tr.appendChild(td);
      tr.appendChild(el("td", "mono", st.action === null ? "initial state" : st.action));
      tr.appendChild(el("td", "val", v === ABSENT ? "(absent)" : show(v)));
      table.appendChild(tr);
    });
    historyBox.appendChild(table);
  }
  view.addEventListener("click", function (ev) {
    var t = ev.target;
    while (t && t !== view && !(t.getAttribute && t.getAttribute("data-path"))) t = t.parentNode;
    if (!t || t === view) return;
    historyPath = t.getAttribute("data-path");
    renderHistory();
  });

  // -- selection, fragments, keys ------------------------------------------------------------
  var current = -1;
  function select(n, updateHash) {
    if (isNaN(n)) return;
    n = Math.max(0, Math.min(N - 1, n));
    if (current >= 0) {
      items[current].classList.remove("selected");
      items[current].removeAttribute("aria-current");
      columns[current].forEach(function (c) { c.classList.remove("col-sel"); });
    }
    current = n;
    items[n].classList.add("selected");
    items[n].setAttribute("aria-current", "step");
    columns[n].forEach(function (c) { c.classList.add("col-sel"); });
    var title = document.getElementById("step-title");
    title.textContent = "Step " + (n + 1) + " of " + N + ": " + (steps[n].action === null ? "initial state" : steps[n].action);
    if (data.failing === n + 1) title.appendChild(el("span", "failmark", "  \u2716 " + (data.violated === "deadlock" ? "deadlock: no successors" : data.violated + " fails here")));
    document.body.setAttribute("data-step", n + 1);
    render();
    items[n].scrollIntoView({ block: "nearest" });
    columns[n][0].scrollIntoView({ block: "nearest", inline: "nearest" });
    if (updateHash && location.hash !== "#step-" + (n + 1)) {
      try { history.replaceState(null, "", "#step-" + (n + 1)); } catch (e) { location.hash = "step-" + (n + 1); }
    }
  }
  function fromHash() {
    var m = /^#step-(\d+)$/.exec(location.hash);
    return m ? Number(m[1]) - 1 : null;
  }
  window.addEventListener("hashchange", function () { var n = fromHash(); if (n !== null && n !== current) select(n, false); });
  // A step link selects at once (hashchange fires later); the URL still gets the step's fragment.
  document.addEventListener("click", function (ev) {
    var t = ev.target;
    while (t && t.nodeName !== "A") t = t.parentNode;
    if (!t || ev.button !== 0 || ev.ctrlKey || ev.metaKey || ev.shiftKey) return;
    var m = /^#step-(\d+)$/.exec(t.getAttribute("href") || "");
    if (!m) return;
    var n = Number(m[1]) - 1;
    if (n < 0 || n >= N) return;
    ev.preventDefault();
    select(n, true);
  });
  document.addEventListener("keydown", function (ev) {
    var t = ev.target, tag = t && t.tagName;
    if (tag === "INPUT" || tag === "SELECT" || tag === "TEXTAREA" || ev.altKey || ev.ctrlKey || ev.metaKey) return;
    var to = null;
    if (ev.key === "ArrowDown" || ev.key === "ArrowRight" || ev.key === "j") to = current + 1;
    else if (ev.key === "ArrowUp" || ev.key === "ArrowLeft" || ev.key === "k") to = current - 1;
    else if (ev.key === "Home") to = 0;
    else if (ev.key === "End") to = N - 1;
    if (to === null) return;
    ev.preventDefault();
    select(to, true);
  });
  var start = fromHash();
  select(start === null ? 0 : start, false);
  document.body.setAttribute("data-ready", "1");
})();
"""
