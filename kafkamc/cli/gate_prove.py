"""Proof checks of ``kafkamc gate``: ``expect = "proved"`` and ``expect = "cti"``.

A proof check runs ``kafkamc prove`` on its spec, params and invariants (every liftable bound not
given in ``params`` is lifted, as on the command line) and compares the verdict: ``proved`` wants
every query proved (an ``unknown`` fails the check: a time limit is never a proof); ``cti`` wants a
counterexample to induction, optionally of the invariant ``violated`` and with
``reachable = true|false`` (whether the breadth-first search within the CTI's bounds reached its
pre-state: ``true`` pins a real bug, ``false`` pins that an auxiliary invariant is still missing).

``infer = true`` (with ``expect = "proved"``) runs ``prove --infer`` instead: the invariants are the
targets, the auxiliaries are mined and kept by Houdini (``prover/infer.py``), and the check passes
when the targets are proved with the inferred set. A target no subset of the candidates saves
fails the check with its counterexample to induction; a run stopped unknown fails it too.
"""

from __future__ import annotations

from typing import Any

from kafkamc.errors import UsageError
from kafkamc.prover import CTI_FOUND, PROVED, UNKNOWN, liftable, prove
from kafkamc.prover.infer import InferResult, infer, unknown_reason
from kafkamc.prover.result import ProofResult

__all__ = ["PROOF_EXPECTATIONS", "PROOF_ONLY_KEYS", "CHECK_ONLY_KEYS", "proof_options", "run_proof",
           "run_infer", "evaluate_proof", "evaluate_infer", "proof_verdict", "proof_expectation"]

PROOF_EXPECTATIONS = ("proved", "cti")
# Keys that only a proof check takes, and keys of explicit-state checks a proof check refuses.
PROOF_ONLY_KEYS = ("reachable", "timeout", "infer")
CHECK_ONLY_KEYS = (
    "recoverability", "liveness", "fair", "strong_fair", "no_fairness", "engine", "master", "partitions",
    "max_depth", "max_states", "symmetry", "deadlock", "max_trace_length", "distinct_states", "depth",
    "allow_incomplete",
)


def proof_options(merged: dict[str, Any], body: dict[str, Any], err: Any) -> tuple[bool | None, float | None]:
    """Validate the keys of a proof check (``merged`` has [defaults] applied); returns
    ``(reachable, timeout)``. ``err(message, key)`` builds the located UsageError."""
    expect = merged["expect"]
    for key in CHECK_ONLY_KEYS:
        if key in body:
            raise err(f"{key} does not apply to expect = \"{expect}\" (a proof); it is a key of "
                      "expect = \"hold\" or \"violate\"", key)
        merged.pop(key, None)  # a [defaults] value meant for the explicit-state checks
    if expect == "proved":
        for key in ("reachable", "violated"):
            if key in merged:
                raise err(f"{key} applies only to expect = \"cti\" (or \"violate\")", key)
    elif "infer" in merged:
        raise err("infer applies only to expect = \"proved\" (inference keeps what it can prove)", "infer")
    timeout = merged.get("timeout")
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float))
                                or not timeout > 0):
        raise err(f"timeout = {timeout!r} is not allowed; allowed: a positive number of seconds", "timeout")
    return merged.get("reachable"), (float(timeout) if timeout is not None else None)


def _arguments(check: Any) -> dict[str, Any]:
    cls = type(check.spec)
    lifted = tuple(name for name in liftable(cls) if name not in check.given_params)
    kwargs: dict[str, Any] = {"lifted": lifted, "workers": check.workers}
    if check.timeout is not None:
        kwargs["timeout"] = check.timeout
    if not check.properties:
        raise UsageError(f"check {check.name}: a proof needs at least one invariant")
    return kwargs


def run_proof(check: Any) -> ProofResult:
    """Run ``prove`` for a proof check (a ``gate.Check``)."""
    return prove(check.spec, check.properties, **_arguments(check))


def run_infer(check: Any) -> InferResult:
    """Run ``prove --infer`` for a proof check with ``infer = true``: its invariants are the targets."""
    return infer(check.spec, check.properties, **_arguments(check))


def evaluate_infer(check: Any, res: InferResult) -> list[str]:
    """Why an ``infer = true`` check is not met (empty: the targets are proved with the inferred set)."""
    names = ", ".join(res.targets)
    if res.result == PROVED:
        return []
    if res.result == UNKNOWN:
        return [f"expected {names} to be proved with inferred invariants, but the inference is unknown: "
                f"{unknown_reason(res)}; never read as a proof"]
    cti = res.last.cti if res.last is not None else None
    why = ""
    if cti is not None:
        where = "reachable: a real violation" if cti.reachable else "not reached within its bounds"
        why = f": {cti.action} breaks {cti.violated} ({where})"
    return [f"expected {names} to be proved with inferred invariants, but {', '.join(res.dropped_targets)} "
            f"is implied by no subset of the {res.mined} mined candidates{why}"]


def evaluate_proof(check: Any, proof: ProofResult) -> list[str]:
    """Why ``proof`` does not meet ``check``'s expectation (empty: it does)."""
    names = ", ".join(proof.invariants)
    if proof.result == UNKNOWN:
        open_pairs = ", ".join(f"{q.action}/{q.invariant}" for q in proof.open_queries[:6])
        return [f"expected {check.expect}, but the prover's answer is unknown (open: {open_pairs}); "
                "raise timeout, never read as a proof"]
    if check.expect == "proved":
        if proof.result == CTI_FOUND and proof.cti is not None:
            cti = proof.cti
            where = "reachable: a real violation" if cti.reachable else "not reached within its bounds"
            return [f"expected {names} to be proved inductive, but {cti.violated} is not: {cti.action} breaks it "
                    f"({where})"]
        return []
    problems = []
    if proof.result == PROVED:
        return [f"expected a counterexample to induction, but {names} is proved inductive: the model no "
                "longer shows it"]
    cti = proof.cti
    if cti is None:  # a CTI verdict always carries its CTI
        return ["expected a counterexample to induction, but the prover returned none"]
    if check.violated is not None and cti.violated != check.violated:
        problems.append(f"expected {check.violated} to be the invariant not inductive, but the CTI breaks "
                        f"{cti.violated}")
    if check.reachable is not None and bool(cti.reachable) != check.reachable:
        problems.append(f"expected the CTI to be {'reachable' if check.reachable else 'unreached'}, but its "
                        f"pre-state was {'reached' if cti.reachable else 'not reached'} within "
                        f"{cti.search_params or 'its bounds'}")
    return problems


def proof_verdict(proof: ProofResult) -> str:
    """The short verdict of the one-line report: ``proved``, ``cti zk-writes-fenced (reachable)``."""
    if proof.result == CTI_FOUND and proof.cti is not None:
        return f"cti {proof.cti.violated} ({'reachable' if proof.cti.reachable else 'unreached'})"
    return proof.result


def proof_expectation(check: Any) -> str:
    if check.expect == "proved":
        return "proved (infer)" if check.infer else "proved"
    text = "cti" + (f" {check.violated}" if check.violated else "")
    if check.reachable is not None:
        text += " (reachable)" if check.reachable else " (unreached)"
    return text
