"""``kafkamc list``: the bundled specs, their parameters and invariants."""

from __future__ import annotations

import argparse
import json
from typing import Any

from kafkamc.spec.registry import bundled_names, load_spec_class

__all__ = ["register", "spec_catalogue"]

EXIT_OK = 0


def register(subparsers: Any) -> None:
    lst = subparsers.add_parser("list", help="list the bundled specs, their parameters and invariants")
    lst.add_argument("--json", action="store_true", help="print one JSON object")
    lst.set_defaults(run=_cmd_list)


def spec_catalogue() -> list[dict[str, Any]]:
    out = []
    for name in bundled_names():
        cls = load_spec_class(name)
        defaults = {p.name for p in cls.default_properties()}
        out.append({
            "name": cls.name,
            "description": cls.description,
            "parameters": [
                {"name": p.name, "type": p.type.__name__, "default": p.default, "help": p.help,
                 "allowed": list(p.choices) if p.choices is not None else None,
                 "min": p.min, "max": p.max}
                for p in cls.parameters
            ],
            "invariants": [
                {"name": pr.name, "kind": pr.kind, "description": pr.description, "default": pr.name in defaults}
                for pr in cls.properties()
            ],
            "recoverability": [
                {"name": pr.name, "description": pr.description} for pr in cls.recoverability_properties()
            ],
            "liveness": [
                {"name": pr.name, "description": pr.description, "formula": _formula(pr)}
                for pr in cls.liveness_properties()
            ],
            "fairness": {"weak": list(cls.weak_fairness), "strong": list(cls.strong_fairness)},
        })
    return out


def _cmd_list(args: argparse.Namespace) -> int:
    catalogue = spec_catalogue()
    if args.json:
        print(json.dumps({"schema": 1, "specs": catalogue}, indent=2))
        return EXIT_OK
    for spec in catalogue:
        print(f"{spec['name']}: {spec['description']}")
        print("  parameters:")
        for p in spec["parameters"]:
            allowed = "|".join(_show(a) for a in p["allowed"]) if p["allowed"] is not None else (
                f"{'' if p['min'] is None else p['min']}..{'' if p['max'] is None else p['max']}"
                if p["type"] == "int" else ("true/false" if p["type"] == "bool" else "any")
            )
            print(f"    {p['name']} ({p['type']}, default {_show(p['default'])}, allowed {allowed}): {p['help']}")
        print("  invariants (* = default):")
        for inv in spec["invariants"]:
            mark = "*" if inv["default"] else " "
            kind = " [action property]" if inv["kind"] == "action" else ""
            print(f"   {mark} {inv['name']}{kind}: {inv['description']}")
        if spec["recoverability"]:
            print("  recoverability (AG EF good; check with -r NAME):")
            for rec in spec["recoverability"]:
                print(f"     {rec['name']}: {rec['description']}")
        if spec["liveness"]:
            print("  liveness (under fairness; check with -l NAME):")
            for lp in spec["liveness"]:
                print(f"     {lp['name']}: {lp['description']} [{lp['formula']}]")
            fair = [f"WF({a})" for a in spec["fairness"]["weak"]] + [f"SF({a})" for a in spec["fairness"]["strong"]]
            print(f"  fairness: {', '.join(fair) or 'none'}")
    return EXIT_OK


def _formula(prop: Any) -> str:
    from kafkamc.invariants.temporal import formula_of

    try:
        return str(formula_of(prop))
    except Exception as exc:  # a broken property is reported by check -l; list still lists
        return f"(invalid: {exc})"


def _show(value: Any) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)
