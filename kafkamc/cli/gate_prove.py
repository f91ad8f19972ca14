"""Proof checks of ``kafkamc gate``: ``expect = "proved"`` and ``expect = "cti"``.

A proof check runs ``kafkamc prove`` on its spec, params and invariants (every liftable bound not
given in ``params`` is lifted, as on the command line) and compares the verdict: ``proved`` wants
every query proved (an ``unknown`` fails the check: a time limit is never a proof); ``cti`` wants a
counterexample to induction, optionally of the invariant ``violated`` and with
``reachable = true|false`` (whether the breadth-first search within the CTI's bounds reached its
pre-state: ``true`` pins a real bug, ``false`` pins that an auxiliary invariant is still missing).
"""

from __future__ import annotations

from typing import Any

from kafkamc.errors import UsageError
from kafkamc.prover import CTI_FOUND, PROVED, UNKNOWN, liftable, prove
from kafkamc.prover.result import ProofResult

__all__ = ["PROOF_EXPECTATIONS", "PROOF_ONLY_KEYS", "CHECK_ONLY_KEYS", "proof_options", "run_proof",
           "evaluate_proof", "proof_verdict", "proof_expectation"]

PROOF_EXPECTATIONS = ("proved", "cti")
# Keys that only a proof check takes, and keys of explicit-state checks a proof check refuses.
PROOF_ONLY_KEYS = ("reachable", "timeout")
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
    timeout = merged.get("timeout")
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float))
                                or not timeout > 0):
        raise err(f"timeout = {timeout!r} is not allowed; allowed: a positive number of seconds", "timeout")
    return merged.get("reachable"), (float(timeout) if timeout is not None else None)


def run_proof(check: Any) -> ProofResult:
    """Run ``prove`` for a proof check (a ``gate.Check``)."""
    cls = type(check.spec)
    lifted = tuple(name for name in liftable(cls) if name not in check.given_params)
    kwargs: dict[str, Any] = {"lifted": lifted, "workers": check.workers}
    if check.timeout is not None:
        kwargs["timeout"] = check.timeout
    if not check.properties:
        raise UsageError(f"check {check.name}: a proof needs at least one invariant")
    return prove(check.spec, check.properties, **kwargs)


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
        return "proved"
    text = "cti" + (f" {check.violated}" if check.violated else "")
    if check.reachable is not None:
        text += " (reachable)" if check.reachable else " (unreached)"
    return text
