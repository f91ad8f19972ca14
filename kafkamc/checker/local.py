"""The embedded breadth-first engine: one process, one fingerprint set, one queue (TLC's design).

Per distinct state it keeps only a fingerprint, the index of its parent and the successor index
that reached it; states themselves live only in the current and the next frontier. Levels are
explored in order and, inside a level, states in discovery order.

The rule every engine follows on a violation: the level in which it is found is completed (so the
statistics count whole levels and do not depend on how a level is split across workers), then the
first violation in breadth-first order is reported. Its path is the lexicographically smallest
shortest path to a violating state, so it is the same trace on every run and on every engine. A
level's round (expanding the states of level L) finds deadlocks of level-L states, violations of
action properties on their transitions, and invariant violations of the new level-(L+1) states;
a deadlock's trace is one state shorter and wins, otherwise the first in discovery order wins.
"""

from __future__ import annotations

import contextlib
import gc
import time
from array import array
from typing import Any, Callable, Iterator, Sequence

from kafkamc.checker.checkpoint import Boundary, Checkpointer
from kafkamc.checker.fingerprint import Fingerprinter, canonical
from kafkamc.checker.watch import PROGRESS_EVERY, Watch, stop_reason
from kafkamc.result import (
    DEADLOCK, INCOMPLETE, OK, VIOLATION, CheckResult, LevelStats, coverage_of,
)
from kafkamc.counterexamples.checked import checked_replay
from kafkamc.errors import KafkamcError, MalformedSpec, SpecRaised, UsageError
from kafkamc.invariants.api import Property, fails
from kafkamc.spec.api import Spec, format_label, malformed_successors

__all__ = ["explore", "state_key_function", "gc_paused", "first_violation", "recorded", "rollback"]

Progress = Callable[[LevelStats], None]


def state_key_function(spec: Spec, sample: Any, symmetry: bool) -> tuple[Callable[[Any], int], Fingerprinter]:
    """The function the engines fingerprint states with (a signed 64-bit int, stable everywhere)."""
    p = spec.p
    fpr = Fingerprinter(type(sample), spec.view, getattr(spec, "fingerprint", "auto"))
    view = spec.view
    sym = spec.symmetry if symmetry else None
    if symmetry and sym is None:
        raise UsageError(f"--symmetry: spec {spec.name} declares no symmetry hook; allowed only for specs that do")
    if fpr.fast:
        if view is None and sym is None:
            return hash, fpr
        if view is None:
            return (lambda s: hash(sym(p, s))), fpr
        if sym is None:
            return (lambda s: hash(view(p, s))), fpr
        return (lambda s: hash(view(p, sym(p, s)))), fpr
    if view is None and sym is None:
        return (lambda s: hash(canonical(s))), fpr
    if view is None:
        return (lambda s: hash(canonical(sym(p, s)))), fpr
    if sym is None:
        return (lambda s: hash(canonical(view(p, s)))), fpr
    return (lambda s: hash(canonical(view(p, sym(p, s))))), fpr


def first_violation(p: Any, state: Any, invs: Sequence[tuple[str, Callable[..., bool]]]) -> str | None:
    """The first invariant (name, fn) that ``state`` violates; one that raises, or returns anything
    but a bool, is reported as such."""
    for name, fn in invs:
        try:
            verdict = fn(p, state)
        except Exception as exc:
            raise SpecRaised(f"invariant {name}", state, exc) from exc
        if verdict is not True and fails(verdict, f"invariant {name}", state):
            return name
    return None


def _culprit(spec: Spec, state: Any, exc: BaseException) -> SpecRaised:
    """Find which action raised on ``state`` by re-running each (they are pure) in order; an
    action that yields something other than ``(label, next_state)`` pairs is named as malformed."""
    for act in spec.actions():
        try:
            produced = act.fn(spec.p, state)
            problem = malformed_successors(produced)
        except Exception as again:
            return SpecRaised(f"action {act.name}", state, again)
        if problem is not None:
            return SpecRaised(f"action {act.name}", state, MalformedSpec(problem))
    return SpecRaised("an action", state, exc)


def recorded(seen: dict[int, int], parent: array, idx: int, last: int | None = None) -> Callable[[int, int], bool]:
    """For ``checked_replay``: is a fingerprint the state the search recorded at that position?

    The engines keep fingerprint -> index and each index's parent, so the trace's states are the
    chain of parents of ``idx`` (the violating state, or the source of an action property's bad
    transition). ``last`` is the fingerprint of that transition's target, which may be a state
    first reached on another path.
    """
    chain = []
    while idx >= 0:
        chain.append(idx)
        idx = parent[idx]
    chain.reverse()

    def expected(j: int, fp: int) -> bool:
        if j < len(chain):
            return seen.get(fp) == chain[j]
        return fp == last

    return expected


def _path(parent: array, sidx: array, idx: int) -> list[int]:
    path = []
    while idx >= 0:
        path.append(sidx[idx])
        idx = parent[idx]
    path.reverse()
    return path


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Pause CPython's cyclic garbage collector for an exploration.

    An exploration allocates millions of acyclic tuples and dataclasses that the collector would
    rescan again and again (about 20% of the CPU time on the replication model); reference
    counting frees them all the same. A spec that builds reference cycles keeps them until the
    exploration ends.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def explore(
    spec: Spec,
    properties: Sequence[Property] | None = None,
    *,
    max_depth: int | None = None,
    max_states: int | None = None,
    symmetry: bool = False,
    deadlock: bool = False,
    progress: Progress | None = None,
    max_memory: int | None = None,
    progress_every: float = PROGRESS_EVERY,
    checkpoint: Checkpointer | None = None,
) -> CheckResult:
    """Exhaustively explore ``spec`` breadth-first, checking ``properties`` (default: the spec's).

    ``max_memory`` (bytes) stops the run as incomplete (reason ``max-memory``) when the process
    uses more; ``progress`` also gets a line within a level at least every ``progress_every``
    seconds (see ``kafkamc.checker.watch``). ``checkpoint`` saves level boundaries when due and
    the last one when the run is stopped, and resumes from its checkpoint if it has one.
    """
    with gc_paused(), Watch(progress, max_memory=max_memory, every=progress_every) as watch:
        return watch.annotate(_explore(spec, properties, max_depth=max_depth, max_states=max_states,
                                       symmetry=symmetry, deadlock=deadlock, progress=watch.progress, watch=watch,
                                       checkpoint=checkpoint))


def rollback(seen: dict[int, int], parent: array, sidx: array, n: int) -> None:
    """Forget the states visited after the first ``n`` (a level cut short), so that the visited
    arrays are again those of the level boundary (``seen`` holds its keys in index order)."""
    while len(seen) > n:
        seen.popitem()
    del parent[n:]
    del sidx[n:]


def _explore(
    spec: Spec,
    properties: Sequence[Property] | None,
    *,
    max_depth: int | None,
    max_states: int | None,
    symmetry: bool,
    deadlock: bool,
    progress: Progress | None,
    watch: Watch | None = None,
    checkpoint: Checkpointer | None = None,
) -> CheckResult:
    props = tuple(spec.default_properties() if properties is None else properties)
    invs = [(pr.name, pr.fn) for pr in props if pr.kind == "invariant"]
    aprops = [(pr.name, pr.fn) for pr in props if pr.kind == "action"]
    p = spec.p
    actions = [(ai, a.name, a.fn) for ai, a in enumerate(spec.actions())]
    # Coverage per action (TLC's -coverage): flushed once per (state, action), not per successor.
    cov_en = [0] * len(actions)
    cov_gen = [0] * len(actions)
    cov_new = [0] * len(actions)
    constraint = spec.constraint
    started = time.perf_counter()

    inits = spec.initial()
    key, fpr = state_key_function(spec, inits[0], symmetry)

    seen: dict[int, int] = {}
    parent = array("q")
    sidx = array("l")
    generated = len(inits)
    frontier: list[Any] = []
    level_start = 0  # index of the first state of the current frontier
    depth = 1
    violated: str | None = None
    bad_path: list[int] | None = None
    bad_at: tuple[int, int | None] = (-1, None)  # the index of the last recorded state; see recorded()
    reason: str | None = None

    def result(kind: str) -> CheckResult:
        trace = None
        if bad_path is not None:
            trace = checked_replay(spec, bad_path, violated, props, key=key,
                                   expected=recorded(seen, parent, *bad_at))
        return CheckResult(
            spec=spec.name, params=p.as_dict(), engine="local", result=kind,
            invariants=tuple(pr.name for pr in props) + ((DEADLOCK,) if deadlock else ()),
            violated=violated, distinct_states=len(seen), states_generated=generated, depth=depth,
            seconds=time.perf_counter() - started, trace=trace, reason=reason, symmetry=symmetry,
            coverage=coverage_of([a[1] for a in actions], cov_en, cov_gen, cov_new),
        )

    if watch is not None:
        # Read from a signal handler between two bytecodes of the loop below, which keeps no
        # bookkeeping for it: states of the next level found so far are those past the frontier.
        watch.probe = lambda: None if reason is not None else LevelStats(
            depth + 1, len(seen), generated, len(frontier), time.perf_counter() - started, within_level=True,
            new=max(0, len(seen) - level_start - len(frontier)),
        )

    resumed = checkpoint.resume() if checkpoint is not None else None
    for i, s in enumerate(inits if resumed is None else ()):
        fpr.check(s)
        k = key(s)
        if k in seen:
            continue
        if max_states is not None and len(seen) >= max_states:
            reason = "max-states"
            return result(INCOMPLETE)
        seen[k] = len(parent)
        parent.append(-1)
        sidx.append(i)
        frontier.append(s)
        if violated is None:
            bad = first_violation(p, s, invs)
            if bad is not None:
                violated, bad_path = bad, _path(parent, sidx, len(parent) - 1)
                bad_at = (len(parent) - 1, None)
    if resumed is not None:
        seen, parent, sidx, frontier, depth, level_start, generated = resumed.restore((cov_en, cov_gen, cov_new), fpr)
        started -= resumed.boundary.seconds
        if watch is not None:
            watch.resumed(generated)
    if progress:
        progress(LevelStats(depth, len(seen), generated, len(frontier), time.perf_counter() - started))
    if violated is not None:
        return result(VIOLATION)

    def boundary() -> Boundary:
        return Boundary(depth, level_start, level_start + len(frontier), generated, tuple(cov_en), tuple(cov_gen),
                        tuple(cov_new), fpr.validate_left, time.perf_counter() - started)

    # The last level boundary and its frontier, taken in one assignment (a signal comes between
    # two bytecodes): what a stopped run's checkpoint holds.
    mark = (boundary(), frontier) if checkpoint is not None else None

    try:
        while frontier:
            last_level = max_depth is not None and depth >= max_depth
            nxt: list[Any] = []
            found: tuple[str, list[int], tuple[int, int | None]] | None = None
            dead_found = False
            n = len(parent)
            for pos, s in enumerate(frontier):
                if constraint is not None and not constraint(p, s):
                    continue
                sid = level_start + pos
                # Read once per state, not per successor: check() itself stops at its quota.
                validating = fpr.validating
                i = 0
                try:
                    for ai, aname, fn in actions:
                        j = i
                        for label, t in fn(p, s):
                            if validating:
                                # Before the seen-test: a colliding value would never look new.
                                fpr.check(t)
                            k = key(t)
                            if aprops:
                                flabel = format_label(aname, label)
                                for pname, pfn in aprops:
                                    if found is None:
                                        r = pfn(p, s, flabel, t)
                                        if r is not True and fails(r, f"action property {pname} ({flabel})", s):
                                            found = (pname, _path(parent, sidx, sid) + [i], (sid, k))
                            if k not in seen:
                                if last_level or (max_states is not None and n >= max_states):
                                    reason = "max-depth" if last_level else "max-states"
                                    generated += i + 1
                                    cov_en[ai] += 1
                                    cov_gen[ai] += i + 1 - j
                                    return result(INCOMPLETE)
                                seen[k] = n
                                parent.append(sid)
                                sidx.append(i)
                                n += 1
                                nxt.append(t)
                                cov_new[ai] += 1
                                if found is None:
                                    for name, ifn in invs:
                                        r = ifn(p, t)
                                        if r is not True and fails(r, f"invariant {name}", t):
                                            found = (name, _path(parent, sidx, n - 1), (n - 1, None))
                                            break
                            i += 1
                        if i != j:
                            cov_en[ai] += 1
                            cov_gen[ai] += i - j
                except (KafkamcError, KeyboardInterrupt):
                    raise
                except Exception as exc:
                    raise _classify(spec, s, exc, invs, aprops) from exc
                generated += i
                if i == 0 and deadlock and not dead_found:
                    dead_found = True
                    # Shorter than anything else this round can find, so it wins.
                    found = (DEADLOCK, _path(parent, sidx, sid), (sid, None))
            level_start += len(frontier)
            frontier = nxt
            if frontier:
                depth += 1
            if progress:
                progress(LevelStats(depth, len(seen), generated, len(frontier), time.perf_counter() - started))
            if found is not None:
                violated, bad_path, bad_at = found
                depth = max(depth, len(bad_path))
                return result(VIOLATION)
            if checkpoint is not None and frontier:
                mark = (boundary(), frontier)
                if checkpoint.due():
                    checkpoint.save(mark[0], seen, parent, sidx, frontier=frontier)
    except KeyboardInterrupt as exc:
        reason = stop_reason(exc)
        stopped = result(INCOMPLETE)
        if checkpoint is not None and mark is not None:
            rollback(seen, parent, sidx, mark[0].distinct)
            try:
                checkpoint.save(mark[0], seen, parent, sidx, frontier=mark[1])
            except (KafkamcError, OSError) as failed:
                checkpoint.failure = str(failed)
        return stopped
    return result(OK)


def _classify(spec: Spec, state: Any, exc: BaseException, invs: list, aprops: list) -> SpecRaised:
    """Name the user's function that raised: an action on ``state``, or a property on a successor."""
    culprit = _culprit(spec, state, exc)
    if culprit.where != "an action":
        return culprit
    p = spec.p
    for aname, fn in ((a.name, a.fn) for a in spec.actions()):
        try:
            pairs = list(fn(p, state))
        except Exception as again:  # it did not raise a moment ago: the spec is not pure
            return SpecRaised(f"action {aname}", state, again)
        for label, t in pairs:
            for name, ifn in invs:
                try:
                    ifn(p, t)
                except Exception as again:
                    return SpecRaised(f"invariant {name}", t, again)
            for name, pfn in aprops:
                try:
                    pfn(p, state, format_label(aname, label), t)
                except Exception as again:
                    return SpecRaised(f"action property {name}", state, again)
    return SpecRaised("the fingerprint of a successor", state, exc)
