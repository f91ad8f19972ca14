"""Rendering a ``prove`` result: its ``--json`` object (schema 1) and the text a person reads.

A counterexample to induction is shown like a trace: the full trace from an initial state when its
pre-state was reached, else two states (the pre-state in full, then the step and what it changed).
``cti_check_result`` wraps it as a ``CheckResult`` so that the JSON, ITF and HTML writers of
``check`` write its files unchanged.
"""

from __future__ import annotations

from typing import Any

from kafkamc.counterexamples.render import SCHEMA, render_trace, state_to_json, trace_to_json
from kafkamc.counterexamples.trace import Trace, TraceStep
from kafkamc.prover.result import CTI_FOUND, INIT, PROVED, ProofResult
from kafkamc.result import VIOLATION, CheckResult

__all__ = ["proof_to_json", "render_proof", "cti_trace", "cti_check_result"]


def cti_trace(result: ProofResult) -> Trace | None:
    """The trace that shows the CTI: the reaching trace, or (pre-state, post-state)."""
    cti = result.cti
    if cti is None:
        return None
    if cti.trace is not None:
        return cti.trace
    if cti.pre is None:
        return Trace((TraceStep(None, cti.post),), ())
    return Trace((TraceStep(None, cti.pre), TraceStep(cti.label, cti.post)), ())


def cti_check_result(result: ProofResult) -> CheckResult | None:
    """The CTI as a violation result, for the counterexample file writers."""
    cti = result.cti
    trace = cti_trace(result)
    if cti is None or trace is None:
        return None
    return CheckResult(
        spec=result.spec, params={**result.params, **cti.search_params}, engine="prove", result=VIOLATION,
        invariants=result.invariants, violated=cti.violated, distinct_states=cti.search_states,
        states_generated=0, depth=len(trace), seconds=result.seconds, trace=trace,
        extra={"cti_reachable": bool(cti.reachable)},
    )


def proof_to_json(result: ProofResult) -> dict[str, Any]:
    out: dict[str, Any] = {
        "schema": SCHEMA,
        "spec": result.spec,
        "params": result.params,
        "result": result.result,
        "invariants": list(result.invariants),
        "lifted": list(result.lifted),
        "lifted_from": result.lifted_from,
        "seconds": result.seconds,
        "cpu_seconds": result.cpu_seconds,
        "queries": [
            {"action": q.action, "invariant": q.invariant, "verdict": q.verdict, "paths": q.paths,
             "solver_seconds": q.solver_seconds, "shared_solver_seconds": q.shared_solver_seconds,
             "seconds": q.seconds, "checks": q.checks, **({"reason": q.reason} if q.reason else {})}
            for q in result.queries
        ],
        "cti": None,
    }
    cti = result.cti
    if cti is not None:
        out["cti"] = {
            "pre": None if cti.pre is None else state_to_json(cti.pre),
            "action": None if cti.action == INIT else cti.label,
            "post": state_to_json(cti.post),
            "violated": cti.violated,
            "reachable": bool(cti.reachable),
            "trace": trace_to_json(cti.trace),
            "lifted_values": cti.lifted_values,
            "search_params": cti.search_params,
            "search_note": cti.search_note,
        }
    return out


def _lifted(result: ProofResult) -> str:
    return ", ".join(f"{n} >= {result.lifted_from[n]}" for n in result.lifted)


def render_proof(result: ProofResult, entities: dict[str, tuple[str, ...]] | None = None) -> str:
    params = " ".join(f"{k}={('true' if v else 'false') if isinstance(v, bool) else v}"
                      for k, v in result.params.items())
    head = f"{result.spec} [{params}]" + (f" lifted: {_lifted(result)}" if result.lifted else "")
    names = ", ".join(result.invariants)
    paths = sum(q.paths for q in result.queries if q.invariant == result.queries[0].invariant) if result.queries else 0
    stats = (f"{len(result.queries)} queries ({len({q.action for q in result.queries})} actions incl. init), "
             f"{paths:,} action paths, {result.seconds:.1f} s wall, {result.cpu_seconds:.1f} s CPU")
    lines = [head]
    if result.result == PROVED:
        scope = f"for every {_lifted(result)}" if result.lifted else "for these parameter values"
        lines.append(f"proved: {names} (with type-ok) inductive {scope}")
        lines.append(stats)
        return "\n".join(lines)
    if result.result != CTI_FOUND:
        open_ = ", ".join(f"{q.action}/{q.invariant}" for q in result.open_queries)
        lines.append(f"unknown: no counterexample found, but these queries were not decided: {open_}")
        reasons = sorted({q.reason for q in result.open_queries if q.reason})
        if reasons:
            lines.append("reason: " + "; ".join(reasons))
        lines.append(stats)
        return "\n".join(lines)
    cti = result.cti
    assert cti is not None
    if cti.action == INIT:
        lines.append(f"cti: an initial state breaks {cti.violated}")
    else:
        lines.append(f"cti: {cti.violated} is not inductive: {cti.action} breaks it from a state that satisfies "
                     f"all {len(result.invariants)} invariants")
        lifted = ", ".join(f"{k}={v}" for k, v in sorted(cti.lifted_values.items()))
        if lifted:
            lines.append(f"the counterexample has {lifted}")
        if cti.reachable:
            lines.append(f"reachable: the pre-state is reached from an initial state with {cti.search_note}: "
                         "a real violation (trace below)")
        else:
            lines.append(f"not reached within these bounds ({cti.search_note}; {cti.search_states:,} states): "
                         "strengthen the invariants with one that excludes the pre-state")
    lines.append(stats)
    trace = cti_trace(result)
    if trace is not None:
        text = render_trace(trace, entities=entities)
        if cti.trace is None and cti.pre is not None:
            text = text.replace("initial state", "CTI pre-state (satisfies every invariant)", 1)
        lines.extend(["", text])
    return "\n".join(lines)
