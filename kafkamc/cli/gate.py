"""``kafkamc gate``: run the checks a config file lists and compare each verdict with its expectation.

A team pins, in ``kafkamc.toml`` (or ``[tool.kafkamc]`` in ``pyproject.toml``), which invariants
must hold for which models and which known-bad variants must keep failing; a model that stops
finding a known bug has lost its teeth, and CI should say so. See docs/ci-gate.md for the format.

Exit codes: 0 every expectation is met; 1 at least one is not (including a check whose spec or
engine raised, and a run interrupted with Ctrl-C); 2 the config is bad (unknown key, spec,
parameter or invariant, a value of the wrong type), reported as ``FILE:LINE: message``.
"""

from __future__ import annotations

import argparse
import dataclasses
import fnmatch
import json
import os
import re
import socket
import sys
import time
import tomllib
import traceback
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Sequence

from kafkamc.checker.watch import STOPS, is_stop, raise_pending_stop, stop_reason, stops_taken
from kafkamc.result import DEADLOCK, INCOMPLETE, OK, VIOLATION, CheckResult
from kafkamc.counterexamples.proof import cti_check_result, proof_to_json, render_proof
from kafkamc.counterexamples.render import render_summary, render_trace, result_to_json
from kafkamc.cli.gate_prove import (
    PROOF_EXPECTATIONS, PROOF_ONLY_KEYS, evaluate_infer, evaluate_proof, proof_expectation, proof_options,
    proof_verdict, run_infer, run_proof,
)
from kafkamc.prover.infer import InferResult, counts, python_source, summary, unknown_reason
from kafkamc.prover.result import CTI_FOUND, PROVED, UNKNOWN, ProofResult
from kafkamc.errors import EngineError, KafkamcError, SpecLoadError, UsageError
from kafkamc.invariants.api import Property
from kafkamc.spec.api import Spec
from kafkamc.safewrite import check_output_dir, check_output_file, write_file
from kafkamc.spec.registry import build_spec, load_spec_class
from kafkamc.terminal import printable

__all__ = [
    "register", "run_gate", "load_config", "GateConfig", "Check", "Outcome", "evaluate", "junit_xml",
    "CONFIG_FILE", "EXPECTATIONS",
]

CONFIG_FILE = "kafkamc.toml"
PYPROJECT = "pyproject.toml"
EXPECTATIONS = ("hold", "violate", "proved", "cti")
ENGINES = ("local", "spark")
JSON_SCHEMA = 1

# Keys of a check, with their TOML types. "spec" and "expect" are required.
_CHECK_KEYS: dict[str, tuple[type, ...]] = {
    "spec": (str,),
    "description": (str,),
    "params": (dict,),
    "invariants": (list, str),
    "recoverability": (list, str),
    "liveness": (list, str),
    "fair": (list, str),
    "strong_fair": (list, str),
    "no_fairness": (bool,),
    "engine": (str,),
    "master": (str,),
    "partitions": (int,),
    "workers": (int,),
    "max_depth": (int,),
    "max_states": (int,),
    "symmetry": (bool,),
    "deadlock": (bool,),
    "expect": (str,),
    "violated": (str,),
    "max_trace_length": (int,),
    "distinct_states": (int,),
    "depth": (int,),
    "allow_incomplete": (bool,),
    "reachable": (bool,),  # expect = "cti" only
    "timeout": (int, float),  # seconds per action's queries, proof checks only
    "infer": (bool,),  # expect = "proved" only: prove --infer, the invariants are the targets
}
# Keys a [defaults] table may set for every check (a check's own value wins).
_DEFAULT_KEYS = (
    "engine", "master", "partitions", "workers", "max_depth", "max_states", "symmetry", "deadlock",
    "allow_incomplete",
)
_POSITIVE = ("partitions", "workers", "max_depth", "max_states", "max_trace_length", "depth")
_NON_NEGATIVE = ("distinct_states",)
_TOP_KEYS = ("checks", "defaults")
MAX_CONFIG_BYTES = 16 * 1024 * 1024
_MAX_INT = 2**63 - 1  # every count and bound fits a signed 64-bit integer
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


# -- locating keys in the file (tomllib reports no positions) -------------------------------------

_BARE = r"[A-Za-z0-9_-]+"
_QUOTED = r"\"(?:[^\"\\]|\\.)*\"|'[^']*'"
_KEY = rf"(?:{_BARE}|{_QUOTED})"
_DOTTED = re.compile(rf"\s*({_KEY}(?:\s*\.\s*{_KEY})*)\s*")
_PART = re.compile(rf"\s*({_KEY})\s*(?:\.|$)")


def _split_key(text: str) -> tuple[str, ...] | None:
    parts = []
    pos = 0
    text = text.strip()
    while pos < len(text):
        m = _PART.match(text, pos)
        if m is None:
            return None
        part = m.group(1)
        if part[0] in "\"'":
            part = part[1:-1]
        parts.append(part)
        pos = m.end()
    return tuple(parts) if parts else None


class _Lines:
    """Line numbers of the keys of a TOML text, found by scanning it (tables, dotted keys, one
    level of inline tables). Good enough to point a person at the right line; never authoritative."""

    def __init__(self, text: str) -> None:
        self.lines = text.splitlines()
        self.index: dict[tuple[str, ...], int] = {}
        table: tuple[str, ...] = ()
        for n, raw in enumerate(self.lines, start=1):
            s = raw.strip()
            if not s or s.startswith("#"):
                continue
            if s.startswith("["):
                inner = s[2:s.find("]]")] if s.startswith("[[") else s[1:s.find("]")]
                keys = _split_key(inner)
                if keys is not None:
                    table = keys
                    self.index.setdefault(table, n)
                continue
            eq = _assignment(s)
            if eq is None:
                continue
            keys = _split_key(s[:eq])
            if keys is None:
                continue
            path = table + keys
            self.index.setdefault(path, n)
            rest = s[eq + 1:].lstrip()
            if rest.startswith("{"):
                for m in re.finditer(rf"[{{,]\s*({_KEY}(?:\s*\.\s*{_KEY})*)\s*=", rest):
                    sub = _split_key(m.group(1))
                    if sub is not None:
                        self.index.setdefault(path + sub, n)

    def line(self, path: Sequence[str]) -> int | None:
        """The line of ``path``, or of its nearest enclosing key that the scan found."""
        path = tuple(path)
        if path in self.index:
            return self.index[path]
        # A table only named through its subtables ([checks.x] names "checks"): its first line.
        below = [n for key, n in self.index.items() if key[:len(path)] == path]
        if path and below:
            return min(below)
        while path:
            if path in self.index:
                return self.index[path]
            path = path[:-1]
        return None

    def value_line(self, path: Sequence[str], value: str) -> int | None:
        """The line, at or after ``path``'s, where the string ``value`` is written (arrays)."""
        start = self.line(path)
        if start is None:
            return None
        quoted = (f'"{value}"', f"'{value}'")
        for n in range(start, min(start + 200, len(self.lines)) + 1):
            if any(q in self.lines[n - 1] for q in quoted):
                return n
        return start


def _assignment(s: str) -> int | None:
    """Index of the ``=`` of a ``key = value`` line (outside quoted keys), or None."""
    m = _DOTTED.match(s)
    if m is None or m.end() >= len(s) or s[m.end()] != "=":
        return None
    return m.end()


# -- the config ----------------------------------------------------------------------------------


@dataclass
class Check:
    """One named check, resolved and validated: ready to run."""

    name: str
    spec_ref: str
    spec: Spec | None  # None when the spec could not be loaded (see load_error)
    properties: tuple[Property, ...]
    expect: str
    line: int | None = None
    load_error: str | None = None  # the user's spec module failed to import or validate_params raised
    recoverability: tuple[Property, ...] = ()
    liveness: tuple[Property, ...] = ()
    fairness: Any = None  # kafkamc.checker.liveness.Fairness, for a check with liveness
    description: str = ""
    engine: str = "local"
    master: str | None = None
    partitions: int | None = None
    workers: int | None = None
    max_depth: int | None = None
    max_states: int | None = None
    symmetry: bool = False
    deadlock: bool = False
    violated: str | None = None
    max_trace_length: int | None = None
    distinct_states: int | None = None
    depth: int | None = None
    allow_incomplete: bool = False
    reachable: bool | None = None  # expect = "cti"
    timeout: float | None = None  # proof checks
    infer: bool = False  # expect = "proved": the auxiliaries are inferred (prove --infer)
    given_params: tuple[str, ...] = ()  # the params set in the config (a proof lifts the other bounds)

    @property
    def is_proof(self) -> bool:
        return self.expect in PROOF_EXPECTATIONS

    @property
    def expectation_short(self) -> str:
        """``hold`` or ``violate [invariant]``: what the one-line report shows."""
        if self.is_proof:
            return proof_expectation(self)
        return "hold" if self.expect == "hold" else "violate" + (f" {self.violated}" if self.violated else "")

    @property
    def expectation(self) -> str:
        """Short text of what is expected, e.g. ``violate strong-isr, trace<=9``."""
        if self.is_proof:
            return proof_expectation(self)
        if self.expect == "hold":
            text = "hold" + (" (bounded ok)" if self.allow_incomplete else "")
        else:
            text = "violate" + (f" {self.violated}" if self.violated else "")
            if self.max_trace_length is not None:
                text += f", trace<={self.max_trace_length}"
        if self.distinct_states is not None:
            text += f", states={self.distinct_states:,}"
        if self.depth is not None:
            text += f", depth={self.depth}"
        return text


@dataclass
class GateConfig:
    path: str
    checks: list[Check]


class _Source:
    """The parsed file plus what is needed to name a line in an error."""

    def __init__(self, path: str, text: str, root: tuple[str, ...]) -> None:
        self.path = path
        self.root = root
        self.lines = _Lines(text)

    def where(self, *path: str, value: str | None = None) -> str:
        full = self.root + tuple(path)
        n = self.lines.value_line(full, value) if value is not None else self.lines.line(full)
        return f"{self.path}:{n}" if n is not None else self.path

    def error(self, message: str, *path: str, value: str | None = None) -> UsageError:
        return UsageError(f"{self.where(*path, value=value)}: {message}")


def find_config(path: str | None) -> str:
    """The config file: ``path`` if given, else ./kafkamc.toml, else ./pyproject.toml with [tool.kafkamc]."""
    if path is not None:
        if not os.path.exists(path):
            raise UsageError(f"config file {path!r} does not exist")
        if not os.path.isfile(path):
            raise UsageError(f"config file {path!r} is not a regular file")
        return path
    if os.path.isfile(CONFIG_FILE):
        return CONFIG_FILE
    if os.path.isfile(PYPROJECT):
        try:
            with open(PYPROJECT, "rb") as fh:
                data = tomllib.loads(fh.read(MAX_CONFIG_BYTES).decode("utf-8"))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, ValueError, RecursionError):
            data = {}
        if isinstance(data.get("tool"), dict) and "kafkamc" in data["tool"]:
            return PYPROJECT
    raise UsageError(
        f"no {CONFIG_FILE} here and no [tool.kafkamc] in {PYPROJECT}; write one (see docs/ci-gate.md) "
        "or pass --config FILE"
    )


def load_config(path: str) -> GateConfig:
    """Parse and validate the whole config; every mistake is a UsageError naming FILE:LINE."""
    try:
        with open(path, "rb") as fh:
            raw = fh.read(MAX_CONFIG_BYTES + 1)
    except OSError as exc:
        raise UsageError(f"cannot read config file {path!r}: {exc.strerror}") from None
    if len(raw) > MAX_CONFIG_BYTES:
        raise UsageError(f"{path}: larger than {MAX_CONFIG_BYTES >> 20} MiB; not a config file")
    try:
        text = raw.decode("utf-8")
        data = tomllib.loads(text)
    except UnicodeDecodeError:
        raise UsageError(f"{path}: not UTF-8 text") from None
    except tomllib.TOMLDecodeError as exc:
        m = re.search(r"\(at line (\d+), column \d+\)", str(exc))
        where = f"{path}:{m.group(1)}" if m else path
        raise UsageError(f"{where}: invalid TOML: {exc}") from None
    except ValueError:  # tomllib lets CPython's int() refuse an integer of over 4,300 digits
        raise UsageError(f"{path}: invalid TOML: an integer of more than 4,300 digits") from None
    except RecursionError:
        raise UsageError(f"{path}: invalid TOML: arrays or tables nested too deeply") from None

    root: tuple[str, ...] = ()
    if os.path.basename(path) == PYPROJECT:
        tool = data.get("tool")
        if not isinstance(tool, dict) or "kafkamc" not in tool:
            raise UsageError(f"{path}: has no [tool.kafkamc] table")
        data = tool["kafkamc"]
        root = ("tool", "kafkamc")
        if not isinstance(data, dict):
            raise UsageError(f"{_Source(path, text, ()).where('tool', 'kafkamc')}: tool.kafkamc must be a table")
    src = _Source(path, text, root)

    for key in data:
        if key not in _TOP_KEYS:
            raise src.error(f"unknown key {key!r}; allowed: {', '.join(_TOP_KEYS)}", key)
    defaults = data.get("defaults", {})
    if not isinstance(defaults, dict):
        raise src.error("'defaults' must be a table", "defaults")
    for key, value in defaults.items():
        if key not in _DEFAULT_KEYS:
            raise src.error(f"unknown key {key!r} in [defaults]; allowed: {', '.join(_DEFAULT_KEYS)}",
                            "defaults", key)
        _check_type(src, ("defaults", key), key, value)
    checks_table = data.get("checks")
    if checks_table is None or checks_table == {}:
        raise src.error("defines no checks; add a table [checks.NAME] with spec and expect")
    if not isinstance(checks_table, dict):
        raise src.error("'checks' must be a table of named checks, e.g. [checks.my-check]", "checks")

    checks = []
    config_dir = os.path.dirname(os.path.abspath(path))
    for name, body in checks_table.items():
        if not _NAME.match(name):
            raise src.error(
                f"check name {name!r} is not allowed; use letters, digits, '.', '_' and '-'", "checks", name
            )
        if not isinstance(body, dict):
            raise src.error(f"check {name!r} must be a table", "checks", name)
        checks.append(_load_check(src, name, body, defaults, config_dir))
    return GateConfig(path=path, checks=checks)


def _check_type(src: _Source, path: tuple[str, ...], key: str, value: Any) -> None:
    types = _CHECK_KEYS[key]
    ok = isinstance(value, types) and not (isinstance(value, bool) and bool not in types)
    if not ok:
        names = " or ".join({"str": "a string", "int": "an integer", "bool": "true or false",
                             "dict": "a table", "list": "an array", "float": "a number"}[t.__name__] for t in types)
        raise src.error(f"{key} = {value!r} has the wrong type; allowed: {names}", *path)
    if isinstance(value, int) and not isinstance(value, bool) and value > _MAX_INT:
        raise src.error(f"{key} is too large; allowed: at most {_MAX_INT:,}", *path)
    if key in _POSITIVE and value < 1:
        raise src.error(f"{key} = {value} is not allowed; allowed: a positive integer", *path)
    if key in _NON_NEGATIVE and value < 0:
        raise src.error(f"{key} = {value} is not allowed; allowed: a non-negative integer", *path)


def _load_check(src: _Source, name: str, body: dict[str, Any], defaults: dict[str, Any], config_dir: str) -> Check:
    here = ("checks", name)
    origin: dict[str, tuple[str, ...]] = {}
    merged: dict[str, Any] = {}
    for key, value in defaults.items():
        merged[key] = value
        origin[key] = ("defaults", key)
    for key, value in body.items():
        if key not in _CHECK_KEYS:
            raise src.error(
                f"unknown key {key!r} in check {name!r}; allowed: {', '.join(_CHECK_KEYS)}", *here, key
            )
        _check_type(src, here + (key,), key, value)
        merged[key] = value
        origin[key] = here + (key,)

    def err(message: str, key: str | None = None, value: str | None = None) -> UsageError:
        return src.error(f"check {name!r}: {message}", *(origin.get(key, here) if key else here), value=value)

    for required in ("spec", "expect"):
        if required not in merged:
            raise err(f"missing key {required!r}")
    expect = merged["expect"]
    if expect not in EXPECTATIONS:
        raise err(f"expect = {expect!r} is not allowed; allowed: {', '.join(EXPECTATIONS)}", "expect")
    reachable, timeout = None, None
    if expect in PROOF_EXPECTATIONS:
        reachable, timeout = proof_options(merged, body, err)
    else:
        for key in PROOF_ONLY_KEYS:
            if key in body:
                raise err(f"{key} applies only to expect = \"proved\" or \"cti\" (a proof)", key)
            merged.pop(key, None)
    if expect == "hold":
        for key in ("violated", "max_trace_length"):
            if key in merged:
                raise err(f"{key} applies only to expect = \"violate\"", key)
    elif "allow_incomplete" in body:
        raise err("allow_incomplete applies only to expect = \"hold\" (an incomplete run never violates)",
                  "allow_incomplete")

    # A module:Class spec is also looked up next to the config file (last, so that it never
    # shadows an installed module).
    if config_dir not in sys.path:
        sys.path.append(config_dir)
    ref = merged["spec"]

    def broken(exc: SpecLoadError, key: str) -> Check:
        # Not a typo in the config but a broken spec: this check is an error, the others still run.
        return Check(name=name, spec_ref=ref, spec=None, properties=(), expect=expect,
                     line=src.lines.line(src.root + here), violated=merged.get("violated"),
                     load_error=str(err(str(exc), key)))

    try:
        cls = load_spec_class(ref)
    except SpecLoadError as exc:
        return broken(exc, "spec")
    except UsageError as exc:
        raise err(str(exc), "spec") from None

    params = dict(merged.get("params", {}))
    known = {prm.name: prm for prm in cls.parameters}
    for pname, value in params.items():
        ploc = origin["params"] + (pname,)
        if pname not in known:
            allowed = ", ".join(known) or "none"
            raise src.error(f"check {name!r}: unknown parameter {pname!r} for spec {cls.name}; allowed: {allowed}",
                            *ploc)
        prm = known[pname]
        if prm.type is str and isinstance(value, int) and not isinstance(value, bool):
            value = params[pname] = str(value)  # acks = 1 means acks = "1"
        if isinstance(value, (dict, list)):
            raise src.error(f"check {name!r}: parameter {pname} must be a single value; allowed: {prm.allowed()}",
                            *ploc)
        try:
            prm.validate(value)
        except UsageError as exc:
            raise src.error(f"check {name!r}: {exc}", *ploc) from None
    try:
        spec = build_spec(ref, params)
    except SpecLoadError as exc:
        return broken(exc, "params" if "params" in merged else "spec")
    except UsageError as exc:
        raise err(str(exc), "params" if "params" in merged else "spec") from None

    inv = merged.get("invariants")
    if inv is None and merged.get("liveness"):
        props = ()  # as with check -l: invariants are checked only when named
    elif inv is None:
        props = tuple(cls.default_properties())
    else:
        names = [inv] if isinstance(inv, str) else inv
        if not names and not merged.get("recoverability") and not merged.get("liveness"):
            raise err("invariants is empty; omit it for the spec's defaults, or use \"all\" "
                      "(an empty list is for checks of recoverability only)", "invariants")
        chosen: list[Property] = []
        for iname in names:
            if not isinstance(iname, str):
                raise err(f"invariants must be names (strings); got {iname!r}", "invariants")
            if iname == "all":
                chosen.extend(p for p in cls.properties() if p not in chosen)
                continue
            try:
                prop = cls.property_named(iname)
            except UsageError as exc:
                raise src.error(f"check {name!r}: {exc}", *origin["invariants"], value=iname) from None
            if prop not in chosen:
                chosen.append(prop)
        props = tuple(chosen)

    recs: list[Property] = []
    rec_names = merged.get("recoverability", [])
    for rname in [rec_names] if isinstance(rec_names, str) else rec_names:
        if not isinstance(rname, str):
            raise err(f"recoverability must be names (strings); got {rname!r}", "recoverability")
        try:
            rec = cls.recoverability_named(rname)
        except UsageError as exc:
            raise src.error(f"check {name!r}: {exc}", *origin["recoverability"], value=rname) from None
        if rec not in recs:
            recs.append(rec)
    if recs:
        # The state graph is built by one process and bounded by max_states only (kafkamc check -r).
        for key in ("max_depth", "deadlock", "workers"):
            if key in body:
                raise err(f"{key} cannot be combined with recoverability (the state graph is built by one "
                          "process and bounded by max_states only)", key)
            merged.pop(key, None)
        if merged.get("engine", "local") != "local":
            raise err("recoverability is checked on the state graph by the local engine only", "recoverability")

    lives, fairness = _load_liveness(src, name, cls, merged, body, origin, err)
    deadlock = merged.get("deadlock", False)
    violated = merged.get("violated")
    if violated is not None:
        checked = [p.name for p in props] + [r.name for r in recs] + [lp.name for lp in lives] + \
            ([DEADLOCK] if deadlock else [])
        if violated not in checked:
            raise err(f"violated = {violated!r} is not among the properties this check checks; "
                      f"allowed: {', '.join(checked)}", "violated")

    engine = merged.get("engine", "local")
    if engine not in ENGINES:
        raise err(f"engine = {engine!r} is not allowed; allowed: {', '.join(ENGINES)}", "engine")
    # [defaults] may carry settings of both engines; a check's own key must fit its engine.
    for key in ("master", "partitions") if engine != "spark" else ("workers",):
        if key in body:
            other = "spark" if engine != "spark" else "local"
            raise err(f"{key} applies only to engine = \"{other}\"", key)
        merged.pop(key, None)
    symmetry = merged.get("symmetry", False)
    if symmetry and cls.symmetry is None:
        raise err(f"symmetry = true: spec {cls.name} declares no symmetry hook", "symmetry")

    return Check(
        name=name, spec_ref=ref, spec=spec, properties=props, recoverability=tuple(recs), expect=expect,
        liveness=lives, fairness=fairness,
        line=src.lines.line(src.root + here),
        description=merged.get("description", ""), engine=engine, master=merged.get("master"),
        partitions=merged.get("partitions"), workers=merged.get("workers"), max_depth=merged.get("max_depth"),
        max_states=merged.get("max_states"), symmetry=symmetry, deadlock=deadlock, violated=violated,
        max_trace_length=merged.get("max_trace_length"), distinct_states=merged.get("distinct_states"),
        depth=merged.get("depth"), allow_incomplete=merged.get("allow_incomplete", False),
        reachable=reachable, timeout=timeout, infer=bool(merged.get("infer", False)), given_params=tuple(params),
    )


def _load_liveness(src: _Source, name: str, cls: type[Spec], merged: dict[str, Any], body: dict[str, Any],
                   origin: dict[str, tuple[str, ...]], err: Any) -> tuple[tuple[Property, ...], Any]:
    """The ``liveness`` properties of a check and the fairness it assumes (``fair``, ``strong_fair``,
    ``no_fairness`` override the spec's declaration, as the options of ``check -l`` do)."""
    names = merged.get("liveness", [])
    names = [names] if isinstance(names, str) else names
    if not names:
        for key in ("fair", "strong_fair", "no_fairness"):
            if key in merged:
                raise err(f"{key} applies only to a check with liveness", key)
        return (), None
    chosen: list[Property] = []
    for lname in names:
        if not isinstance(lname, str):
            raise err(f"liveness must be names (strings); got {lname!r}", "liveness")
        try:
            found = cls.liveness_properties() if lname == "all" else (cls.liveness_named(lname),)
        except UsageError as exc:
            raise src.error(f"check {name!r}: {exc}", *origin["liveness"], value=lname) from None
        chosen.extend(lp for lp in found if lp not in chosen)
    if merged.get("recoverability"):
        raise err("liveness and recoverability cannot be combined in one check", "liveness")
    if merged.get("symmetry"):
        raise err("symmetry = true cannot be combined with liveness: a symmetry reduction can hide liveness "
                  "violations", "symmetry")
    for key in ("max_depth", "deadlock", "workers"):
        if key in body:
            raise err(f"{key} cannot be combined with liveness (the state graph is built by one process and "
                      "bounded by max_states only)", key)
        merged.pop(key, None)
    if merged.get("engine", "local") != "local":
        raise err("liveness is checked on the state graph by the local engine only", "liveness")
    from kafkamc.checker.liveness import resolve_fairness

    lists = {}
    for key in ("fair", "strong_fair"):
        value = merged.get(key, [])
        lists[key] = [value] if isinstance(value, str) else value
        if not all(isinstance(a, str) for a in lists[key]):
            raise err(f"{key} must be action names (strings)", key)
    try:
        fairness = resolve_fairness(cls, lists["fair"], lists["strong_fair"], merged.get("no_fairness", False))
    except UsageError as exc:
        raise err(str(exc), "fair" if "fair" in merged else "strong_fair" if "strong_fair" in merged else
                  "liveness") from None
    return tuple(chosen), fairness


def select_checks(checks: list[Check], only: Sequence[str] | None) -> list[Check]:
    """The checks named by ``--only`` (exact names or shell patterns), in config order."""
    if not only:
        return list(checks)
    names = [c.name for c in checks]
    wanted: set[str] = set()
    for pattern in only:
        matched = fnmatch.filter(names, pattern)
        if not matched:
            raise UsageError(f"--only {pattern!r} matches no check; allowed: {', '.join(names)}")
        wanted.update(matched)
    return [c for c in checks if c.name in wanted]


# -- running and judging -----------------------------------------------------------------------

PASS, FAIL, ERROR, SKIPPED = "pass", "fail", "error", "skipped"


@dataclass
class Outcome:
    check: Check
    status: str  # pass | fail | error | skipped
    result: CheckResult | None
    seconds: float
    problems: list[str] = field(default_factory=list)
    error: str | None = None
    files: list[str] = field(default_factory=list)
    proof: ProofResult | None = None  # a proof check's result (``result`` is then its CTI as a violation, if any)
    inferred: InferResult | None = None  # an infer = true check's run (``proof`` is its last proof)

    @property
    def met(self) -> bool:
        return self.status == PASS

    @property
    def verdict(self) -> str:
        """What the engine said, short: ``ok``, ``violation strong-isr (9 states)``, ``incomplete``."""
        if self.status == SKIPPED:
            return "skipped"
        if self.inferred is not None and self.inferred.result != CTI_FOUND:
            # A Houdini round that stopped unknown has verdicts only: its own result is no answer.
            res = self.inferred
            return f"proved ({len(res.inferred)} inferred)" if res.result == PROVED else res.result
        if self.proof is not None:
            return proof_verdict(self.proof)
        if self.result is None:
            return "error"
        r = self.result
        if r.result == VIOLATION:
            length = len(r.trace) if r.trace is not None else 0
            return f"violation {r.violated} ({length} states)"
        if r.result == INCOMPLETE:
            return f"incomplete ({r.reason or 'bounded'})"
        return r.result

    @property
    def message(self) -> str:
        if self.error is not None:
            return self.error
        return "; ".join(self.problems)


def evaluate(check: Check, result: CheckResult) -> list[str]:
    """Why ``result`` does not meet ``check``'s expectation (empty: it does)."""
    problems = []
    checked = ", ".join(result.invariants) or "no invariants"
    if check.expect == "hold":
        if result.result == VIOLATION:
            length = len(result.trace) if result.trace is not None else 0
            problems.append(f"expected {checked} to hold, but {result.violated} is violated "
                            f"(counterexample of {length} states)")
        elif result.result == INCOMPLETE and not check.allow_incomplete:
            problems.append(f"expected {checked} to hold, but the run is incomplete "
                            f"({result.reason or 'a bound was reached'}) after {result.distinct_states:,} "
                            "distinct states; raise the bound, or set allow_incomplete = true")
    else:
        if result.result == OK:
            problems.append(f"expected a violation{' of ' + check.violated if check.violated else ''}, "
                            f"but every {_judged(result)} satisfies {checked}: the model no longer finds the bug")
        elif result.result == INCOMPLETE:
            problems.append(f"expected a violation{' of ' + check.violated if check.violated else ''}, "
                            f"but none was found before the run stopped ({result.reason or 'a bound was reached'})")
        else:
            length = len(result.trace) if result.trace is not None else 0
            if check.violated is not None and result.violated != check.violated:
                problems.append(f"expected {check.violated} to be violated, but the first violation found is "
                                f"{result.violated}")
            if check.max_trace_length is not None and length > check.max_trace_length:
                problems.append(f"expected a counterexample of at most {check.max_trace_length} states, "
                                f"got {length}")
    if check.distinct_states is not None and result.distinct_states != check.distinct_states:
        problems.append(f"expected exactly {check.distinct_states:,} distinct states, got {result.distinct_states:,}")
    if check.depth is not None and result.depth != check.depth:
        problems.append(f"expected depth {check.depth}, got {result.depth}")
    return problems


def _judged(result: CheckResult) -> str:
    """What an ok result speaks of: states for invariants, fair behaviours for liveness."""
    return "fair behaviour" if (result.extra or {}).get("checker") == "liveness" else "reachable state"


def _explore(check: Check) -> CheckResult:
    kwargs = dict(max_depth=check.max_depth, max_states=check.max_states, symmetry=check.symmetry,
                  deadlock=check.deadlock)
    if check.engine == "spark":
        try:
            from kafkamc.checker.spark import explore_spark

            return explore_spark(check.spec, check.properties, master=check.master, partitions=check.partitions,
                                 **kwargs)
        except ImportError as exc:  # pyspark (or the engine) is not installed here
            raise EngineError(f"engine spark is not available: {exc}") from None
    if check.liveness:
        from kafkamc.checker.liveness import check_liveness

        return check_liveness(check.spec, check.properties, check.liveness, check.fairness,
                              max_states=check.max_states)
    if check.recoverability:
        try:
            from kafkamc.checker.graph import check_recoverability
        except ImportError as exc:
            raise EngineError(f"recoverability checking is not available: {exc}") from None
        return check_recoverability(check.spec, check.properties, check.recoverability,
                                    max_states=check.max_states, symmetry=check.symmetry)
    try:
        from kafkamc.checker.multicore import available_cores, explore_multicore
    except ImportError:
        from kafkamc.checker.local import explore

        return explore(check.spec, check.properties, **kwargs)
    # The same results as the sequential engine, whatever the number of workers.
    workers = check.workers if check.workers is not None else available_cores()
    return explore_multicore(check.spec, check.properties, workers=workers, **kwargs)


def run_check(check: Check) -> Outcome:
    """Run one check. A spec or engine that raises makes the check an error (the gate fails), not
    the gate: the other checks still run and are reported."""
    started = time.perf_counter()
    if check.load_error is not None:
        return Outcome(check, ERROR, None, 0.0, error=check.load_error)
    if check.is_proof:
        return _run_proof_check(check, started)
    try:
        result = _explore(check)
    except KafkamcError as exc:
        return Outcome(check, ERROR, None, time.perf_counter() - started,
                       error=f"{type(exc).__name__}: {printable(str(exc))}")
    except Exception as exc:  # a bug in an engine or spec: report it and go on with the others
        raise_pending_stop(exc)
        tb = traceback.format_exc(limit=-3)
        return Outcome(check, ERROR, None, time.perf_counter() - started,
                       error=f"{type(exc).__name__}: {exc}\n{tb}")
    seconds = time.perf_counter() - started
    if ":" in check.spec_ref:
        # Where a user's spec class lives, so that `trace replay --trust` finds it.
        result = dataclasses.replace(result, extra={**result.extra, "spec_ref": check.spec_ref})
    problems = evaluate(check, result)
    if result.result == INCOMPLETE and result.reason in ("interrupted", "terminated"):
        problems.insert(0, "interrupted (Ctrl-C)" if result.reason == "interrupted" else "terminated (SIGTERM or SIGHUP)")
    return Outcome(check, FAIL if problems else PASS, result, seconds, problems=problems)


def _run_proof_check(check: Check, started: float) -> Outcome:
    inferred = None
    try:
        if check.infer:
            inferred = run_infer(check)
            proof = inferred.last
        else:
            proof = run_proof(check)
    except KafkamcError as exc:  # a construct the executor refuses, a soundness error: an error, never a verdict
        return Outcome(check, ERROR, None, time.perf_counter() - started,
                       error=f"{type(exc).__name__}: {printable(str(exc))}")
    except Exception as exc:
        raise_pending_stop(exc)
        tb = traceback.format_exc(limit=-3)
        return Outcome(check, ERROR, None, time.perf_counter() - started,
                       error=f"{type(exc).__name__}: {exc}\n{tb}")
    problems = evaluate_infer(check, inferred) if inferred is not None else evaluate_proof(check, proof)
    cti = cti_check_result(proof) if proof is not None else None
    return Outcome(check, FAIL if problems else PASS, cti, time.perf_counter() - started,
                   problems=problems, proof=proof, inferred=inferred)


def write_counterexamples(outcome: Outcome, out_dir: str) -> list[str]:
    """JSON (always), ITF and HTML (when those writers are installed) into ``out_dir/<check>/``."""
    result = outcome.result
    if result is None or result.trace is None or result.violated is None:
        return []
    from kafkamc.cli.output import write_trace_file

    where = os.path.join(out_dir, outcome.check.name)
    files = []
    path = write_trace_file(result, where)
    if path:
        files.append(path)
    stem = os.path.join(where, f"{_file_part(result.spec)}-{result.violated}")
    for module, fn_name, target in (
        ("kafkamc.counterexamples.itf", "write_itf", where),
        ("kafkamc.counterexamples.html", "write_html", stem + ".html"),
    ):
        try:
            writer = getattr(__import__(module, fromlist=[fn_name]), fn_name)
        except (ImportError, AttributeError):
            continue  # that format is not part of this installation
        try:
            written = writer(result, target)
        except Exception as exc:  # an artifact writer must not turn a verdict into a crash
            print(f"kafkamc gate: warning: {fn_name} failed for check {outcome.check.name}: {exc}", file=sys.stderr)
            continue
        if isinstance(written, str):
            files.append(written)
        elif written is None and fn_name == "write_html" and os.path.exists(target):
            files.append(target)
    return files


def _file_part(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in text)


# -- reporting -----------------------------------------------------------------------------------


def _line(outcome: Outcome, width: int, ewidth: int) -> str:
    vwidth = max(ewidth + 14, 30)
    c = outcome.check
    label = {PASS: "PASS", FAIL: "FAIL", ERROR: "ERROR", SKIPPED: "SKIP"}[outcome.status]
    states = f"{outcome.result.distinct_states:>9,}" if outcome.result is not None else f"{'-':>9}"
    if outcome.proof is not None:
        states = f"{len(outcome.proof.queries):>9,}"
        return (f"{label:<5} {c.name:<{width}}  {c.expectation_short:<{ewidth}} -> {outcome.verdict:<{vwidth}} "
                f"{states} queries {outcome.seconds:5.1f} s")
    return (f"{label:<5} {c.name:<{width}}  {c.expectation_short:<{ewidth}} -> {outcome.verdict:<{vwidth}} "
            f"{states} states {outcome.seconds:6.1f} s")


def _recoverability_notes(result: CheckResult) -> list[str]:
    if not (result.extra or {}).get("recoverability"):
        return []
    from kafkamc.checker.graph import recoverability_notes

    return recoverability_notes(result)


def _details(outcome: Outcome) -> str:
    """Readable text for JUnit's system-out: the engine's summary and any counterexample."""
    parts = []
    c = outcome.check
    parts.append(f"check {c.name}: spec {c.spec_ref}, expect {c.expectation}")
    if c.description:
        parts.append(c.description)
    if outcome.inferred is not None:
        res = outcome.inferred
        parts.append("infer: " + counts(res))
        if res.result == UNKNOWN:
            parts.append("unknown: " + unknown_reason(res))
        elif res.last is not None:
            parts.append(render_proof(res.last, entities=getattr(type(c.spec), "entities", None)))
        if res.inferred:
            parts.append("inferred invariants:\n" + python_source(res).rstrip())
    elif outcome.proof is not None:
        parts.append(render_proof(outcome.proof, entities=getattr(type(c.spec), "entities", None)))
    elif outcome.result is not None:
        parts.append(render_summary(outcome.result))
        notes = _recoverability_notes(outcome.result)
        if (outcome.result.extra or {}).get("checker") == "liveness":
            from kafkamc.checker.liveness import liveness_notes

            notes = liveness_notes(outcome.result)
        if notes:
            parts.append("\n".join(notes))
        if outcome.result.trace is not None:
            parts.append("counterexample:\n" + render_trace(outcome.result))
    if outcome.files:
        parts.append("written: " + ", ".join(outcome.files))
    return "\n\n".join(parts) + "\n"


_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _xml(text: str) -> str:
    """``text`` without the characters XML 1.0 cannot carry (a spec's labels may hold anything)."""
    return _NOT_XML.sub("\ufffd", text)


def junit_xml(outcomes: list[Outcome], config_path: str, seconds: float) -> ET.ElementTree:
    """One <testsuite> with a <testcase> per check: <failure> for an expectation not met, <error>
    for a check whose spec or engine raised, <skipped> for checks not run after Ctrl-C."""
    failures = sum(o.status == FAIL for o in outcomes)
    errors = sum(o.status == ERROR for o in outcomes)
    skipped = sum(o.status == SKIPPED for o in outcomes)
    counts = {"tests": str(len(outcomes)), "failures": str(failures), "errors": str(errors),
              "skipped": str(skipped), "time": f"{seconds:.3f}"}
    suites = ET.Element("testsuites", {"name": "kafkamc gate", **counts})
    suite = ET.SubElement(suites, "testsuite", {
        "name": f"kafkamc gate ({os.path.basename(config_path)})", **counts,
        "timestamp": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S"),
        "hostname": socket.gethostname(),
    })
    props = ET.SubElement(suite, "properties")
    ET.SubElement(props, "property", {"name": "config", "value": config_path})
    for o in outcomes:
        c = o.check
        case = ET.SubElement(suite, "testcase", {
            "classname": f"kafkamc.gate.{_file_part(c.spec.name if c.spec is not None else c.spec_ref)}",
            "name": c.name, "time": f"{o.seconds:.3f}",
            "file": config_path, **({"line": str(c.line)} if c.line is not None else {}),
        })
        if o.status == FAIL:
            el = ET.SubElement(case, "failure", {"message": _xml(o.message), "type": "ExpectationNotMet"})
            el.text = _xml("\n".join(o.problems) + "\n")
        elif o.status == ERROR:
            first = (o.error or "").splitlines()[0] if o.error else "error"
            kind = "SpecLoadError" if c.load_error is not None else "SpecOrEngineError"
            el = ET.SubElement(case, "error", {"message": _xml(first), "type": kind})
            el.text = _xml((o.error or "") + "\n")
        elif o.status == SKIPPED:
            ET.SubElement(case, "skipped", {"message": "not run: the gate was interrupted"})
        out = ET.SubElement(case, "system-out")
        out.text = _xml(_details(o))
    ET.indent(suites)
    return ET.ElementTree(suites)


def _result_json(result: CheckResult | None) -> dict[str, Any] | None:
    if result is None:
        return None
    out = result_to_json(result)
    if (result.extra or {}).get("recoverability"):
        out["recoverability"] = result.extra["recoverability"]  # good, stuck, livelock states per property
    return out


def _outcome_json(o: Outcome) -> dict[str, Any]:
    c = o.check
    return {
        "name": c.name,
        "spec": c.spec_ref,
        "params": c.spec.p.as_dict() if c.spec is not None else None,
        "invariants": [p.name for p in c.properties],
        "recoverability": [r.name for r in c.recoverability],
        "liveness": [lp.name for lp in c.liveness],
        "fairness": c.fairness.as_json() if c.fairness is not None else None,
        "engine": c.engine,
        "expect": c.expect,
        "violated": c.violated,
        "max_trace_length": c.max_trace_length,
        "distinct_states": c.distinct_states,
        "depth": c.depth,
        "allow_incomplete": c.allow_incomplete,
        "status": o.status,
        "met": o.met,
        "message": o.message or None,
        "seconds": round(o.seconds, 3),
        "result": proof_to_json(o.proof) if o.proof is not None else _result_json(o.result),
        **({"reachable": c.reachable, "timeout": c.timeout, "infer": c.infer} if c.is_proof else {}),
        **({"inferred": summary(o.inferred)} if o.inferred is not None else {}),
        "files": o.files,
    }


def run_gate(config: GateConfig, checks: list[Check], *, out_dir: str | None = None, junit: str | None = None,
             as_json: bool = False, stream=None) -> int:
    """Run ``checks`` and report; returns the exit code (0 all met, 1 otherwise)."""
    stream = stream or sys.stdout
    width = max([len(c.name) for c in checks] + [4])
    ewidth = max([len(c.expectation_short) for c in checks] + [4])
    started = time.perf_counter()
    outcomes: list[Outcome] = []
    interrupted = False
    for check in checks:
        if interrupted:
            outcome = Outcome(check, SKIPPED, None, 0.0, error="not run: the gate was interrupted")
        else:
            taken = len(stops_taken())
            try:
                outcome = run_check(check)
            except STOPS as exc:
                if not is_stop(exc):
                    raise
                stop_reason(exc)  # taken here: the gate stops (see termination_signals)
                outcome = Outcome(check, ERROR, None, 0.0, error="interrupted (Ctrl-C)")
            # Also a Ctrl-C or SIGTERM that a check took and still gave its answer (found before).
            if (outcome.result is not None and outcome.result.reason in ("interrupted", "terminated")) or (
                outcome.error == "interrupted (Ctrl-C)"
            ) or any(r in ("interrupted", "terminated") for r in stops_taken()[taken:]):
                interrupted = True
            if out_dir is not None:
                outcome.files = write_counterexamples(outcome, out_dir)
        outcomes.append(outcome)
        if not as_json:
            print(printable(_line(outcome, width, ewidth)), file=stream, flush=True)
            if outcome.status in (FAIL, ERROR):
                for text in (outcome.problems or [outcome.error or ""]):
                    for line in text.rstrip().split("\n"):
                        print(f"      {printable(line)}", file=stream)
                for path in outcome.files:
                    print(f"      counterexample: {printable(path)}", file=stream)
                stream.flush()
    seconds = time.perf_counter() - started
    passed = sum(o.status == PASS for o in outcomes)
    bad = [o.check.name for o in outcomes if o.status != PASS]
    if junit:
        tree = junit_xml(outcomes, config.path, seconds)
        write_file(junit, lambda fh: tree.write(fh, encoding="utf-8", xml_declaration=True))
    if as_json:
        print(json.dumps({
            "schema": JSON_SCHEMA,
            "config": config.path,
            "passed": not bad,
            "checks": [_outcome_json(o) for o in outcomes],
            "summary": {"checks": len(outcomes), "passed": passed, "failed": len(bad), "seconds": round(seconds, 3)},
        }), file=stream)
    else:
        verdict = "all expectations met" if not bad else f"{len(bad)} not met: {', '.join(bad)}"
        print(printable(f"gate: {len(outcomes)} checks, {passed} passed, {verdict} ({seconds:.1f} s)"), file=stream)
        if out_dir is not None and any(o.files for o in outcomes):
            print(f"counterexamples written under {out_dir}", file=stream)
    if any(o.check.load_error is not None for o in outcomes):
        return 2  # bad input, as for kafkamc check; the rows above say which check and why
    return 0 if not bad else 1


# -- the subcommand --------------------------------------------------------------------------------


def register(subparsers: Any) -> None:
    gate = subparsers.add_parser(
        "gate", help="run the checks of kafkamc.toml and compare each verdict with its expectation (for CI)",
        description="Run every check of the config (kafkamc.toml, or [tool.kafkamc] in pyproject.toml) and "
                    "exit 0 when every expectation is met, 1 when any is not, 2 for a bad config.",
    )
    gate.add_argument("--config", metavar="FILE", default=None,
                      help="config file (default: ./kafkamc.toml, else [tool.kafkamc] in ./pyproject.toml)")
    gate.add_argument("--only", metavar="NAME", action="append", default=[],
                      help="run only this check (repeatable; shell patterns such as 'replication-*' allowed)")
    gate.add_argument("--junit", metavar="FILE", default=None, help="write JUnit XML to FILE")
    gate.add_argument("--json", action="store_true", help="print exactly one JSON object on stdout")
    gate.add_argument("--out", metavar="DIR", default=None,
                      help="write each counterexample (JSON, and ITF/HTML where available) to DIR/<check>/")
    gate.set_defaults(run=_cmd_gate)


def _cmd_gate(args: argparse.Namespace) -> int:
    config = load_config(find_config(args.config))
    checks = select_checks(config.checks, args.only)
    spark = [c.name for c in checks if c.engine == "spark"]
    if spark:
        from kafkamc.cli.check import spark_missing

        missing = spark_missing()
        if missing:
            raise UsageError(f"check {spark[0]} uses engine = \"spark\", which {missing}")
    if args.out is not None:
        check_output_dir(args.out, "--out")
    if args.junit is not None:
        check_output_file(args.junit, "--junit")
    code = run_gate(config, checks, out_dir=args.out, junit=args.junit, as_json=args.json)
    for check in checks:
        if check.load_error is not None:
            print(f"kafkamc: error: {printable(check.load_error)}", file=sys.stderr)
    return code
