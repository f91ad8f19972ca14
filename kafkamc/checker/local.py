"""The embedded breadth-first engine: one process, one fingerprint set, one queue (TLC's design).

Per distinct state it keeps only a fingerprint, the index of its parent and the successor index
that reached it, in numpy (``fptable``, ``lineage``: 22 to 32 bytes a state); states themselves
live only in the current and the next frontier, which go to disk past a memory budget
(``frontier``). Levels are explored in order and, inside a level, states in discovery order, a
batch of ``CHUNK`` states at a time: their successors' fingerprints are looked up in the table
together, and every decision is then taken in the order of the one-by-one search.

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
import os
import time
from array import array
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from kafkamc.checker.checkpoint import Boundary, Checkpointer
from kafkamc.checker.fingerprint import Fingerprinter, canonical
from kafkamc.checker.fptable import FingerprintTable
from kafkamc.checker.frontier import FrontierStore
from kafkamc.checker.lineage import MAX_SUCCESSORS, Lineage
from kafkamc.checker.watch import PROGRESS_EVERY, Watch, stop_reason
from kafkamc.result import (
    DEADLOCK, INCOMPLETE, OK, VIOLATION, CheckResult, LevelStats, coverage_of,
)
from kafkamc.counterexamples.checked import checked_replay
from kafkamc.errors import KafkamcError, MalformedSpec, SpecRaised, UsageError
from kafkamc.invariants.api import Property, fails
from kafkamc.spec.api import Spec, format_label, malformed_successors

__all__ = [
    "explore", "state_key_function", "gc_paused", "first_violation", "violated_action_property", "recorded", "tally",
    "insert_initial", "CHUNK",
]

Progress = Callable[[LevelStats], None]

# Frontier states expanded per batch: their successors' fingerprints go to the table together.
CHUNK = 1024


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


def violated_action_property(p: Any, aprops: Sequence[tuple[str, Callable[..., Any]]], s: Any, aname: str,
                             label: Any, t: Any) -> str | None:
    """The first action property (name, fn) that the transition ``s --label--> t`` of action
    ``aname`` violates; one that returns anything but a bool is reported as such."""
    flabel = format_label(aname, label)
    for pname, pfn in aprops:
        r = pfn(p, s, flabel, t)
        if r is not True and fails(r, f"action property {pname} ({flabel})", s):
            return pname
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


def recorded(table: FingerprintTable, lineage: Lineage, idx: int, last: int | None = None) -> Callable[[int, int], bool]:
    """For ``checked_replay``: is a fingerprint the state the search recorded at that position?

    The engines keep fingerprint -> index and each index's parent, so the trace's states are the
    chain of parents of ``idx`` (the violating state, or the source of an action property's bad
    transition). ``last`` is the fingerprint of that transition's target, which may be a state
    first reached on another path.
    """
    chain = lineage.chain(idx)

    def expected(j: int, fp: int) -> bool:
        if j < len(chain):
            return table.fingerprint(chain[j]) == fp
        return fp == last

    return expected


def insert_initial(spec: Spec, inits: list[Any], key: Callable[[Any], int], fpr: Fingerprinter,
                   table: FingerprintTable) -> list[int]:
    """Insert the initial states' fingerprints; the positions in ``inits`` of the new ones, in order
    (an initial state's successor index is its position: at most MAX_SUCCESSORS of them)."""
    if len(inits) > MAX_SUCCESSORS:
        raise UsageError(f"spec {spec.name}: {len(inits)} initial states; at most {MAX_SUCCESSORS} are supported")
    keys = []
    for s in inits:
        fpr.check(s)
        keys.append(key(s))
    return np.flatnonzero(table.insert(np.array(keys, dtype=np.int64))).tolist()


def tally(p: Any, actions: Sequence[tuple[int, str, Callable[..., Any]]], constraint: Callable[..., bool] | None,
          states: Sequence[Any], upto: int) -> tuple[list[int], list[int]]:
    """Coverage (enabled, generated per action) of expanding ``states`` in order up to and including
    their successor number ``upto`` (0-based): the counts of a level a bound cut short there."""
    en = [0] * len(actions)
    gen = [0] * len(actions)
    left = upto + 1
    for s in states:
        if constraint is not None and not constraint(p, s):
            continue
        for ai, _, fn in actions:
            c = 0
            for _ in fn(p, s):
                c += 1
                if c == left:
                    break
            if c:
                en[ai] += 1
                gen[ai] += c
                left -= c
                if not left:
                    return en, gen
    return en, gen


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
    frontier_memory: int | None = None,
    frontier_dir: str | os.PathLike[str] | None = None,
    checkpoint: Checkpointer | None = None,
) -> CheckResult:
    """Exhaustively explore ``spec`` breadth-first, checking ``properties`` (default: the spec's).

    ``max_memory`` (bytes) stops the run as incomplete (reason ``max-memory``) when the process
    uses more; ``progress`` also gets a line within a level at least every ``progress_every``
    seconds (see ``kafkamc.checker.watch``). A level's states past ``frontier_memory`` bytes
    (None: no limit) go to files in ``frontier_dir`` (default: a temporary directory), removed
    at the end (see ``kafkamc.checker.frontier``). ``checkpoint`` saves level boundaries when due
    and the last one when the run is stopped, and resumes from its checkpoint if it has one.
    """
    with gc_paused(), Watch(progress, max_memory=max_memory, every=progress_every) as watch, \
            FrontierStore(frontier_memory, frontier_dir) as store:
        return watch.annotate(_explore(spec, properties, max_depth=max_depth, max_states=max_states,
                                       symmetry=symmetry, deadlock=deadlock, progress=watch.progress, watch=watch,
                                       store=store, checkpoint=checkpoint))


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
    store: FrontierStore | None = None,
    checkpoint: Checkpointer | None = None,
) -> CheckResult:
    props = tuple(spec.default_properties() if properties is None else properties)
    invs = [(pr.name, pr.fn) for pr in props if pr.kind == "invariant"]
    aprops = [(pr.name, pr.fn) for pr in props if pr.kind == "action"]
    p = spec.p
    store = store if store is not None else FrontierStore(None)
    actions = [(ai, a.name, a.fn) for ai, a in enumerate(spec.actions())]
    # Coverage per action (TLC's -coverage): flushed once per (state, action), not per successor.
    cov_en = [0] * len(actions)
    cov_gen = [0] * len(actions)
    cov_new = [0] * len(actions)
    constraint = spec.constraint
    started = time.perf_counter()

    inits = spec.initial()
    key, fpr = state_key_function(spec, inits[0], symmetry)

    table = FingerprintTable()
    lineage = Lineage()
    n = 0  # distinct states (a level cut short by a bound leaves more fingerprints in the table)
    generated = len(inits)
    frontier = store.new()
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
                                   expected=recorded(table, lineage, *bad_at))
        return CheckResult(
            spec=spec.name, params=p.as_dict(), engine="local", result=kind,
            invariants=tuple(pr.name for pr in props) + ((DEADLOCK,) if deadlock else ()),
            violated=violated, distinct_states=n, states_generated=generated,
            depth=depth if bad_path is None else max(depth, len(bad_path)),
            seconds=time.perf_counter() - started, trace=trace, reason=reason, symmetry=symmetry,
            coverage=coverage_of([a[1] for a in actions], cov_en, cov_gen, cov_new),
            # For benchmarks/bench.py: the visited set's bytes, and what went to disk.
            extra={"visited_bytes": table.nbytes + lineage.nbytes, "frontier_levels_on_disk": store.spilled_levels,
                   "frontier_bytes_written": store.bytes_written},
        )

    if watch is not None:
        # Read from a signal handler between two bytecodes of the loop below, which keeps no
        # bookkeeping for it: states of the next level found so far are those past the frontier.
        watch.probe = lambda: None if reason is not None else LevelStats(
            depth + 1, n, generated, len(frontier), time.perf_counter() - started, within_level=True,
            new=max(0, n - level_start - len(frontier)),
        )

    resumed = checkpoint.resume() if checkpoint is not None else None
    for i in insert_initial(spec, inits if resumed is None else [], key, fpr, table):
        if max_states is not None and n >= max_states:
            if violated is not None:
                break  # found among the first ones: the answer
            reason = "max-states"
            return result(INCOMPLETE)
        lineage.append(-1, i)
        n += 1
        frontier.extend([inits[i]])
        if violated is None:
            bad = first_violation(p, inits[i], invs)
            if bad is not None:
                violated, bad_path, bad_at = bad, lineage.path(n - 1), (n - 1, None)
    if resumed is not None:
        table, lineage, n, depth, level_start, generated = resumed.restore(
            (cov_en, cov_gen, cov_new), fpr, frontier, watch)
        started -= resumed.boundary.seconds
    if progress:
        progress(LevelStats(depth, n, generated, len(frontier), time.perf_counter() - started))
    if violated is not None:
        return result(VIOLATION)

    def boundary() -> Boundary:
        return Boundary(depth, level_start, n, generated, tuple(cov_en), tuple(cov_gen), tuple(cov_new),
                        fpr.validate_left, time.perf_counter() - started)

    # The last level boundary and its frontier, taken in one assignment (a signal comes between
    # two bytecodes): what a stopped run's checkpoint holds. The fingerprint table and lineage
    # need no undoing: their first `distinct` entries are the boundary's whatever came after.
    mark = (boundary(), frontier) if checkpoint is not None else None

    try:
        while frontier:
            last_level = max_depth is not None and depth >= max_depth
            nxt = store.new()
            # (name, path, bad_at) of the first finding of the level, in breadth-first order.
            found: tuple[str, list[int], tuple[int, int | None]] | None = None
            dead_found = False
            base = level_start  # the index of the chunk's first state
            for chunk in frontier.chunks(CHUNK):
                # Every successor of the chunk in order, the state and its action, and per state
                # how many it has; then their fingerprints (one C loop), and which are new, for all
                # at once.
                cands: list[Any] = []
                cact = array("B" if len(actions) <= 256 else "H")
                counts = array("l")
                capp, aapp = cands.append, cact.append
                gen0, en0, g0 = generated, cov_en[:], cov_gen[:]
                aprop: tuple[int, str, list[int], tuple[int, int | None]] | None = None  # ordinal first
                dead = -1
                for pos, s in enumerate(chunk):
                    if constraint is not None and not constraint(p, s):
                        counts.append(0)
                        continue
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
                                if aprops and aprop is None and found is None:
                                    pname = violated_action_property(p, aprops, s, aname, label, t)
                                    if pname is not None:
                                        aprop = (len(cands), pname, lineage.path(base + pos) + [i],
                                                 (base + pos, key(t)))
                                capp(t)
                                aapp(ai)
                                i += 1
                            if i != j:
                                cov_en[ai] += 1
                                cov_gen[ai] += i - j
                    except (KafkamcError, KeyboardInterrupt):
                        raise
                    except Exception as exc:
                        raise _classify(spec, s, exc, invs, aprops) from exc
                    if i > MAX_SUCCESSORS:
                        raise UsageError(f"spec {spec.name}: a state has {i} successors; at most {MAX_SUCCESSORS} are supported")
                    counts.append(i)
                    generated += i
                    if i == 0 and deadlock and dead < 0:
                        dead = pos
                new = np.flatnonzero(table.insert(_fingerprints(spec, key, cands, chunk, counts, invs, aprops)))
                cut = len(new) if not last_level and (max_states is None or n + len(new) <= max_states) else (
                    0 if last_level else max_states - n)
                if cut < len(new):
                    # A bound stops the run at the successor that would be one state too many:
                    # the statistics count the chunk up to it, as when states are added one by one.
                    reason = "max-depth" if last_level else "max-states"
                    upto = int(new[cut])
                    generated = gen0 + upto + 1
                    en, gen = tally(p, actions, constraint, chunk, upto)
                    for ai in range(len(actions)):
                        cov_en[ai], cov_gen[ai] = en0[ai] + en[ai], g0[ai] + gen[ai]
                    _count(cov_new, cact, new[:cut])
                    n += cut
                    return result(INCOMPLETE)
                if len(new):
                    ends = np.cumsum(np.frombuffer(counts, dtype=np.dtype(counts.typecode)))
                    owner = np.searchsorted(ends, new, side="right")
                    lineage.extend(base + owner, new - (ends[owner] - np.asarray(counts)[owner]))
                    born = list(map(cands.__getitem__, new.tolist()))
                    nxt.extend(born)
                    _count(cov_new, cact, new)
                    if found is None and invs:
                        r, name = _first_bad(spec, invs, born, chunk, owner, aprops)
                        # An action property of the same transition was checked first.
                        if name is not None and (aprop is None or int(new[r]) < aprop[0]):
                            aprop = (int(new[r]), name, lineage.path(n + r), (n + r, None))
                    n += len(new)
                if dead >= 0 and not dead_found:
                    dead_found = True
                    # Shorter than anything else this round can find, so it wins.
                    found = (DEADLOCK, lineage.path(base + dead), (base + dead, None))
                elif found is None and aprop is not None:
                    found = aprop[1:]
                base += len(chunk)
            level_start += len(frontier)
            done, frontier = frontier, nxt
            if frontier:
                depth += 1
            # Before the level's line: a stop while it is printed must find the violation.
            if found is not None:
                violated, bad_path, bad_at = found
            if progress:
                progress(LevelStats(depth, n, generated, len(frontier), time.perf_counter() - started))
            if found is not None:
                return result(VIOLATION)
            if checkpoint is not None and frontier:
                mark = (boundary(), frontier)
                if checkpoint.due():
                    checkpoint.save(mark[0], table, lineage, frontier=frontier.chunks(CHUNK))
            if mark is None or mark[1] is not done:
                done.discard()
    except KeyboardInterrupt as exc:
        reason = stop_reason(exc)
        if violated is not None:
            # Stopped while the trace of a violation found was replayed: replayed again (a walk
            # of its length), the run's answer is the violation.
            reason = None
            return result(VIOLATION)
        stopped = result(INCOMPLETE)
        if checkpoint is not None and mark is not None:
            try:
                checkpoint.save(mark[0], table, lineage, frontier=mark[1].chunks(CHUNK))
            except (KafkamcError, OSError) as failed:
                checkpoint.failure = str(failed)
        return stopped
    return result(OK)


def _first_bad(spec: Spec, invs: list, born: list[Any], chunk: list[Any], owner: np.ndarray,
               aprops: list) -> tuple[int, str | None]:
    """The first of the new states ``born`` that violates an invariant, and which one. One that
    raises is named by ``_classify`` from the state it is a successor of (``chunk[owner[r]]``)."""
    p = spec.p
    r = 0
    try:
        for r, t in enumerate(born):
            for name, ifn in invs:
                v = ifn(p, t)
                if v is not True and fails(v, f"invariant {name}", t):
                    return r, name
    except (KafkamcError, KeyboardInterrupt):
        raise
    except Exception as exc:
        raise _classify(spec, chunk[int(owner[r])], exc, invs, aprops) from exc
    return r, None


def _fingerprints(spec: Spec, key: Callable[[Any], int], cands: list[Any], chunk: list[Any], counts: array,
                  invs: list, aprops: list) -> np.ndarray:
    """The fingerprints of ``cands`` (int64). One that cannot be computed is named by
    ``_classify`` from the state ``cands[j]`` is a successor of."""
    try:
        return np.fromiter(map(key, cands), dtype=np.int64, count=len(cands))
    except (KafkamcError, KeyboardInterrupt):
        raise
    except Exception as exc:
        ends = np.cumsum(np.frombuffer(counts, dtype=np.dtype(counts.typecode)))
        for j, t in enumerate(cands):
            try:
                key(t)
            except Exception:
                raise _classify(spec, chunk[int(np.searchsorted(ends, j, side="right"))], exc, invs, aprops) from exc
        raise


def _count(into: list[int], actions: array, chosen: np.ndarray) -> None:
    """Add to ``into`` (per action) how many of the ``chosen`` successors each action yielded."""
    if len(chosen):
        per = np.bincount(np.frombuffer(actions, dtype=np.dtype(actions.typecode))[chosen], minlength=len(into))
        for ai, c in enumerate(per.tolist()):
            into[ai] += c


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
