"""``prove``: is the conjunction of some invariants inductive over the spec's domain?

(1) Every initial state satisfies each invariant; (2) for every state of the domain that satisfies
all of them (and the spec's constraint), every successor under every action satisfies each one,
each action property holds on the step, and the successor is again in the domain (``type-ok``).
Each (action, invariant) pair is its own query and verdict; the queries of one action share one
exploration of its paths (see ``query.Job``). Actions run on forked worker processes and their
results come back in declaration order (initial states first, then actions as declared, each
with the invariants in the order given, ``type-ok`` last), so the outcome does not depend on the
number of workers. The first query in that order with a counterexample gives the reported CTI.
"""

from __future__ import annotations

import multiprocessing
import signal
import time
from typing import Callable, Iterable, Sequence

from kafkamc.checker.resources import cpu_seconds
from kafkamc.checker.multicore import available_cores
from kafkamc.errors import UsageError
from kafkamc.invariants.api import Property
from kafkamc.prover.cti import search_pre_state, verify_cti
from kafkamc.prover.query import Job, RawCti, run_query
from kafkamc.prover.result import CTI_FOUND, INIT, PROVED, TYPE_OK, UNKNOWN, ProofResult, QueryResult
from kafkamc.spec.api import Spec

__all__ = ["prove", "liftable", "DEFAULT_TIMEOUT", "DEFAULT_MAX_PATHS"]

DEFAULT_TIMEOUT = 300.0  # seconds per query
DEFAULT_MAX_PATHS = 500_000  # paths per query, nested explorations included

# Set in the parent just before forking; workers read it (fork shares it without pickling).
_WORK: tuple | None = None


def liftable(cls: type[Spec]) -> tuple[str, ...]:
    return tuple(prm.name for prm in cls.parameters if prm.lift)


def _jobs(spec: Spec, props: Sequence[Property]) -> list[Job]:
    targets = tuple(pr.name for pr in props) + (TYPE_OK,)
    return [Job(INIT, targets)] + [Job(act.name, targets) for act in type(spec).actions()]


def _run(index: int) -> tuple[tuple[QueryResult, ...], tuple[RawCti, ...]]:
    spec, jobs, props, lifted, timeout, max_paths, counterexamples, skeletons = _WORK  # type: ignore[misc]
    return run_query(spec, jobs[index], props, lifted, timeout, max_paths, counterexamples=counterexamples,
                     skeletons=skeletons)


def _worker_signals() -> None:
    """A pool worker leaves Ctrl-C to the parent and dies quietly on the SIGTERM with which the pool
    is closed: the engines' stop handler it inherits would print a traceback from every worker."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGHUP, signal.SIG_DFL)



def prove(
    spec: Spec,
    invariants: Iterable[Property],
    *,
    lifted: Sequence[str] | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    max_paths: int = DEFAULT_MAX_PATHS,
    workers: int | None = None,
    search: bool = True,
    counterexamples: bool = True,
    skeletons: bool = True,
    progress: Callable[[tuple[QueryResult, ...]], None] | None = None,
) -> ProofResult:
    """Prove the conjunction of ``invariants`` inductive for ``spec``; ``lifted`` names the
    parameters treated as symbolic (default: every ``Param(lift=True)``). ``progress`` is called
    with the queries of each action as they complete, in declaration order. ``counterexamples=False``
    gives the verdicts only: a result ``cti`` then has no ``cti`` (Houdini's rounds need no more).
    ``skeletons=False`` computes every target on every successor (``skeleton.py``): the same
    result, slower (benchmarks compare the two)."""
    global _WORK
    cls = type(spec)
    props = tuple(invariants)
    if not props:
        raise UsageError("prove needs at least one invariant (-i NAME)")
    names = [pr.name for pr in props]
    for pr in props:
        if pr.kind not in ("invariant", "action"):
            raise UsageError(f"{pr.name} is a {pr.kind} property; prove takes invariants and action properties")
    if len(set(names)) != len(names):
        raise UsageError("an invariant is named twice")
    lifted = liftable(cls) if lifted is None else tuple(lifted)
    for name in lifted:
        if name not in liftable(cls):
            allowed = ", ".join(liftable(cls)) or "none"
            raise UsageError(f"parameter {name} cannot be lifted for spec {cls.name}; liftable: {allowed}")
    if cls.domain is None:
        raise UsageError(f"spec {cls.name} declares no domain(p) hook (the type of its states), which prove needs")
    started, cpu0 = time.perf_counter(), cpu_seconds()
    jobs = _jobs(spec, props)
    workers = max(1, min(workers or available_cores(), len(jobs)))
    _WORK = (spec, jobs, props, lifted, timeout, max_paths, counterexamples, skeletons)
    try:
        outcomes = []
        if workers == 1:
            for i in range(len(jobs)):
                outcomes.append(_run(i))
                if progress:
                    progress(outcomes[-1][0])
        else:
            with multiprocessing.get_context("fork").Pool(workers, initializer=_worker_signals) as pool:
                for outcome in pool.imap(_run, range(len(jobs)), chunksize=1):
                    outcomes.append(outcome)
                    if progress:
                        progress(outcome[0])
    finally:
        _WORK = None
    queries = tuple(q for qs, _ in outcomes for q in qs)
    raw = next((c for _, cs in outcomes for c in cs), None)
    cti = None
    if raw is not None:
        cti = verify_cti(spec, raw, props)
        if search:
            cti = search_pre_state(spec, cti)
        verdict = CTI_FOUND
    elif any(q.verdict == CTI_FOUND for q in queries):
        verdict = CTI_FOUND  # counterexamples=False: the verdicts only
    elif any(q.verdict == UNKNOWN for q in queries):
        verdict = UNKNOWN
    else:
        verdict = PROVED
    mins = {prm.name: (prm.min if prm.min is not None else 0) for prm in cls.parameters if prm.name in lifted}
    params = {k: v for k, v in spec.p.as_dict().items() if k not in lifted}
    return ProofResult(
        spec=cls.name, params=params, result=verdict, invariants=tuple(names), lifted=lifted, lifted_from=mins,
        seconds=round(time.perf_counter() - started, 3), cpu_seconds=round(cpu_seconds() - cpu0, 3),
        queries=queries, cti=cti,
    )

