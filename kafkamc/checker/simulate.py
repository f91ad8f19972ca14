"""Random walks through a spec whose counterexamples shrink: ``kafkamc simulate``.

Each walk starts in an initial state and repeatedly takes one enabled transition, checking the
invariants and action properties on the way, for at most ``steps`` transitions. Every choice (which
initial state, which successor at each step) is a choice drawn through hypothesis, so a failing
walk is an ordinary failing hypothesis example: hypothesis shrinks it (fewer steps, lower successor
indices) and stores it in its example database, where the next run finds it and replays it first.

A walk stops at a violation, at a deadlock (a state with no successors, which is not itself a
violation here), at a state outside the spec's ``constraint`` (checked, not expanded, as in
``explore``) or after ``steps`` transitions. A run stops after ``runs`` walks, after ``time_limit``
seconds, or at the first violation (whose shrinking is then not cut short by the time limit).

Nothing is claimed beyond the walks made: without a violation the verdict is
``no-violation-found``, never ``ok``.

hypothesis shrinks the walk's choices; deleting one shifts every later successor index, so the
shrunk walk is then tightened here (``shortcut``: jump over revisited states; ``tighten``: delete
steps the violation does not need, re-executing the rest by action label). The result is a
``Trace`` rebuilt by ``replay``, so the JSON, ITF and HTML writers of ``check`` write it
unchanged. It is short, not necessarily the shortest: breadth-first ``explore`` gives the
shortest.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import time
from dataclasses import dataclass, field
from typing import Any, Sequence

from kafkamc.checker.local import first_violation, state_key_function
from kafkamc.checker.watch import INTERRUPTED, TERMINATED, stop_reason
from kafkamc.result import DEADLOCK, INCOMPLETE, VIOLATION, CheckResult
from kafkamc.counterexamples.checked import checked_replay
from kafkamc.counterexamples.trace import replay
from kafkamc.errors import EngineError, SpecRaised, UsageError
from kafkamc.invariants.api import Property, fails
from kafkamc.spec.api import Spec, action_failure, format_label

__all__ = ["simulate", "shortcut", "tighten", "NO_VIOLATION_FOUND", "DEFAULT_DATABASE", "SimulationStats"]

NO_VIOLATION_FOUND = "no-violation-found"
# Relative to the working directory: a found failure replays first on the next run from there.
DEFAULT_DATABASE = os.path.join(".kafkamc", "hypothesis")
# hypothesis gives up on an example whose choices take more than its buffer (8,192 bytes, two to
# four a choice); a walk also stops early when the buffer is nearly full (see ``room``).
MAX_STEPS = 2000


class _Violation(Exception):
    """Raised inside the hypothesis test: the walk ``path`` breaks ``name``."""

    def __init__(self, name: str, path: list[int]) -> None:
        super().__init__(f"{name} violated after {len(path) - 1} steps")
        self.name = name
        self.path = list(path)


class _TimeUp(BaseException):
    """Ends the search when the time budget is spent (a BaseException: hypothesis does not shrink it)."""


@dataclass
class SimulationStats:
    """What the search walks (not the shrinking replays) did."""

    runs: int = 0
    steps: int = 0
    states_generated: int = 0
    longest: int = 0
    deadlocks: int = 0
    stuttering_steps: int = 0
    cut_by_constraint: int = 0
    cut_by_buffer: int = 0
    seen: set[int] = field(default_factory=set)
    coverage: dict[str, int] = field(default_factory=dict)


def _config_digest(spec: Spec, props: Sequence[Property], steps: int, deadlock: bool = False) -> str:
    """Names the database directory of one configuration, so examples never cross specs."""
    text = json.dumps(
        {"spec": type(spec).__module__ + ":" + type(spec).__qualname__, "name": spec.name,
         "params": spec.p.as_dict(), "props": [p.name for p in props], "steps": steps,
         "deadlock": deadlock},
        sort_keys=True, default=str,
    )
    return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()


def simulate(
    spec: Spec,
    properties: Sequence[Property] | None = None,
    *,
    runs: int = 1000,
    steps: int = 100,
    seed: int | None = None,
    time_limit: float | None = None,
    database: str | None = DEFAULT_DATABASE,
    deadlock: bool = False,
) -> CheckResult:
    """Random walks of at most ``steps`` transitions, at most ``runs`` of them, shrunk on failure.

    ``seed`` makes the run reproducible (a random one is chosen and reported when None).
    ``database`` is a directory for hypothesis's example database (None: no database, so nothing
    is replayed from or saved for earlier runs). ``deadlock``: a walk that reaches a state with no
    successors is a violation named ``deadlock``, as with ``check --deadlock``.
    """
    from hypothesis import HealthCheck, Phase, Verbosity, given, settings
    from hypothesis import seed as hypothesis_seed
    from hypothesis import strategies as st
    from hypothesis.database import DirectoryBasedExampleDatabase

    if not 1 <= steps <= MAX_STEPS:
        raise UsageError(f"--steps {steps} is out of range; allowed: an integer in 1..{MAX_STEPS}")
    if runs < 1:
        raise UsageError(f"--runs {runs} is out of range; allowed: a positive integer")
    props = tuple(spec.default_properties() if properties is None else properties)
    invs = [(pr.name, pr.fn) for pr in props if pr.kind == "invariant"]
    aprops = [(pr.name, pr.fn) for pr in props if pr.kind == "action"]
    p = spec.p
    actions = [(a.name, a.fn) for a in spec.actions()]
    action_names = [a.name for a in spec.actions()]
    constraint = spec.constraint
    if seed is None:
        seed = random.SystemRandom().randrange(2**32)

    inits = spec.initial()
    key, fpr = state_key_function(spec, inits[0], False)

    stats = SimulationStats(coverage={name: 0 for name in action_names})
    started = time.perf_counter()
    deadline = None if time_limit is None else started + time_limit
    # Set at the first failing walk: later calls are hypothesis shrinking (or replaying) it.
    first_failure: dict[str, Any] = {}
    shrink_walks = [0]

    def check_state(state: Any) -> str | None:
        return first_violation(p, state, invs)

    def successors(state: Any) -> list[tuple[str, Any, Any]]:
        out = []
        for aname, fn in actions:
            try:
                for label, t in fn(p, state):
                    out.append((aname, label, t))
            except Exception as exc:
                raise action_failure(aname, fn, p, state, exc) from exc
        return out

    def walk(choose, room) -> None:
        searching = not first_failure
        if not searching:
            shrink_walks[0] += 1
        path = [choose(len(inits)) if len(inits) > 1 else 0]
        state = inits[path[0]]
        if searching:
            stats.runs += 1
            fpr.check(state)
            stats.seen.add(key(state))
        bad = check_state(state)
        if bad is not None:
            _fail(bad, path, searching)
        for _ in range(steps):
            if constraint is not None and not constraint(p, state):
                if searching:
                    stats.cut_by_constraint += 1
                break
            if not room():
                if searching:
                    stats.cut_by_buffer += 1
                break
            succ = successors(state)
            if searching:
                stats.states_generated += len(succ)
            if not succ:
                if searching:
                    stats.deadlocks += 1
                if deadlock:
                    _fail(DEADLOCK, path, searching)
                break
            i = choose(len(succ)) if len(succ) > 1 else 0
            aname, label, t = succ[i]
            path.append(i)
            if searching:
                stats.steps += 1
                stats.coverage[aname] += 1
                if t == state:
                    stats.stuttering_steps += 1
                if fpr.validating:
                    fpr.check(t)
                stats.seen.add(key(t))
            if aprops:
                flabel = format_label(aname, label)
                for pname, pfn in aprops:
                    try:
                        ok = pfn(p, state, flabel, t)
                    except Exception as exc:
                        raise SpecRaised(f"action property {pname}", state, exc) from exc
                    if ok is not True and fails(ok, f"action property {pname} ({flabel})", state):
                        _fail(pname, path, searching)
            bad = check_state(t)
            if bad is not None:
                _fail(bad, path, searching)
            state = t
        if searching:
            stats.longest = max(stats.longest, len(path) - 1)
            if deadline is not None and time.perf_counter() > deadline:
                # Only after the walk's last choice, so that hypothesis sees a complete example.
                raise _TimeUp()

    def _fail(name: str, path: list[int], searching: bool) -> None:
        if searching:
            stats.longest = max(stats.longest, len(path) - 1)
            first_failure.setdefault("steps", len(path) - 1)
            first_failure.setdefault("violated", name)
        best = first_failure.get("best")
        if best is None or len(path) < len(best[1]):
            # What a Ctrl-C during shrinking still reports.
            first_failure["best"] = (name, list(path))
        raise _Violation(name, path)

    db = None
    if database is not None:
        db = DirectoryBasedExampleDatabase(os.path.join(database, _config_digest(spec, props, steps, deadlock)))

    # Outside @seed, which on its own turns the database off: the seed fixes the walks, the
    # database only adds the failing walks of earlier runs, replayed first.
    @settings(
        max_examples=runs, database=db, deadline=None, derandomize=False, print_blob=False,
        verbosity=Verbosity.quiet, report_multiple_bugs=False, suppress_health_check=list(HealthCheck),
        phases=(Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink),
    )
    @hypothesis_seed(seed)
    @given(st.data())
    def walks(data: Any) -> None:
        cdata = getattr(data, "conjecture_data", None)
        if hasattr(cdata, "length") and hasattr(cdata, "max_length"):
            # Ending the walk is better than hypothesis discarding it as too large.
            def room() -> bool:
                return cdata.length + 16 <= cdata.max_length
        else:
            def room() -> bool:
                return True
        if cdata is not None and hasattr(cdata, "draw_integer"):
            # The choice itself, without the strategy machinery around it (four times faster).
            walk(lambda n: cdata.draw_integer(0, n - 1), room)
        else:
            walk(lambda n: data.draw(st.integers(0, n - 1)), room)

    violated: str | None = None
    trace = None
    reason = "runs"
    shrunk_steps = None
    try:
        walks()
    except _Violation as v:
        violated = v.name
        shrunk_steps = len(v.path) - 1
        try:
            trace = checked_replay(spec, tighten(spec, shortcut(spec, v.path, aprops), v.name, invs, aprops), v.name,
                                   props)
        except KeyboardInterrupt as exc:
            # Stopped while the walk was made shorter still: the walk hypothesis shrank to.
            stop_reason(exc)
            trace = checked_replay(spec, v.path, v.name, props)
    except _TimeUp:
        reason = "time"
    except KeyboardInterrupt as exc:
        reason = stop_reason(exc)
        if "best" in first_failure:
            violated, path = first_failure["best"]
            shrunk_steps = len(path) - 1
            trace = checked_replay(spec, path, violated, props)
    except Exception as exc:
        if type(exc).__module__.startswith("hypothesis"):
            first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            hint = ""
            if "Flaky" in type(exc).__name__:
                hint = ("the same choices gave a different walk, so an action, init_states or invariant is "
                        "not deterministic (actions must be pure functions of (p, state)); ")
            raise EngineError(f"simulate: {hint}hypothesis reports {type(exc).__name__}: {first_line}") from exc
        raise
    seconds = time.perf_counter() - started
    extra = {
        "seed": seed,
        "runs": stats.runs,
        "steps": stats.steps,
        "max_steps": steps,
        "longest_walk": stats.longest,
        "deadlocks": stats.deadlocks,
        "stuttering_steps": stats.stuttering_steps,
        "cut_by_constraint": stats.cut_by_constraint,
        "cut_by_buffer": stats.cut_by_buffer,
        "coverage": dict(stats.coverage),
        "never_fired": [n for n in action_names if stats.coverage[n] == 0],
        "stopped_by": None if violated else reason,
    }
    if violated is not None:
        extra["found_steps"] = first_failure.get("steps")
        extra["found_violated"] = first_failure.get("violated")
        extra["shrink_walks"] = shrink_walks[0]
        extra["shrunk_steps"] = shrunk_steps
    return CheckResult(
        spec=spec.name, params=p.as_dict(), engine="simulate",
        # Cut short by Ctrl-C, SIGTERM or SIGHUP: incomplete, as for check, not "no violation found".
        result=VIOLATION if violated else INCOMPLETE if reason in (INTERRUPTED, TERMINATED) else NO_VIOLATION_FOUND,
        invariants=tuple(pr.name for pr in props) + ((DEADLOCK,) if deadlock else ()), violated=violated,
        distinct_states=len(stats.seen), states_generated=stats.states_generated,
        depth=stats.longest + 1, seconds=seconds, trace=trace,
        reason=None if violated else (reason if reason != "runs" else None), extra=extra,
    )


def shortcut(spec: Spec, path: Sequence[int], aprops: Sequence[tuple[str, Any]] = ()) -> list[int]:
    """Cut detours out of a failing walk: if a later state of the walk is an initial state, or equals
    a successor of an earlier one (itself included: a cycle), jump straight there.

    The walk's last state is kept, so the violation is the same; every state of the result was a
    state of the walk, so none before the last breaks an invariant; a jump is taken only if its
    new transition satisfies the action properties ``aprops`` ((name, fn) pairs). hypothesis
    shrinks the walk's choices, and a deleted choice shifts every later one; this pass removes
    the loops and detours that shifting cannot.
    """
    p = spec.p
    trace = replay(spec, path)
    states = [st.state for st in trace.steps]
    path = list(path)
    inits = spec.initial()
    # A later initial state: start there.
    for j in range(len(states) - 1, 0, -1):
        if states[j] in inits:
            path = [inits.index(states[j])] + path[j + 1:]
            states = states[j:]
            break
    i = 0
    while i < len(states) - 1:
        s = states[i]
        where = {}
        for k, (act, label, t) in enumerate(spec.successors(s)):
            where.setdefault(t, (k, act, label))
        for j in range(len(states) - 1, i, -1):
            hit = where.get(states[j])
            if hit is None:
                continue
            if j == i + 1 and hit[0] == path[i + 1]:
                break  # already the step taken
            k, act, label = hit
            flabel = format_label(act.name, label)
            if all(_aprop_holds(name, fn, p, s, flabel, states[j]) for name, fn in aprops):
                path = path[: i + 1] + [k] + path[j + 1:]
                states = states[: i + 1] + states[j:]
                break
        i += 1
    return path


def tighten(
    spec: Spec, path: Sequence[int], violated: str,
    invs: Sequence[tuple[str, Any]], aprops: Sequence[tuple[str, Any]],
) -> list[int]:
    """Delete steps of a failing walk while the rest, re-executed by action label, still fails.

    Removing step k and then taking the same labelled transitions as before (each label looked up
    among the successors of the new state) keeps what the later steps do, where deleting a choice
    in hypothesis's encoding shifts every later successor index. A candidate is kept when every
    label is still enabled and the first property it breaks is ``violated`` (if it breaks it
    earlier, the walk is cut there). Repeated until no single step can go.
    """
    p = spec.p
    constraint = spec.constraint
    inits = spec.initial()
    steps = replay(spec, path).steps
    labels = [st.action for st in steps[1:]]
    start = path[0]

    def run(labels: list[str]) -> list[int] | None:
        s = inits[start]
        out = [start]
        if first_violation(p, s, invs) is not None:
            return None
        for lab in labels:
            if constraint is not None and not constraint(p, s):
                return None  # a walk does not go on from a state outside the constraint
            found = None
            for k, (act, label, t) in enumerate(spec.successors(s)):
                flabel = format_label(act.name, label)
                if flabel == lab:
                    found = (k, flabel, t)
                    break
            if found is None:
                return None
            k, flabel, t = found
            out.append(k)
            broken = next((name for name, fn in aprops if not _aprop_holds(name, fn, p, s, flabel, t)), None)
            if broken is None:
                broken = first_violation(p, t, invs)
            if broken is not None:
                return out if broken == violated else None
            s = t
        if violated == DEADLOCK and next(iter(spec.successors(s)), None) is None:
            return out
        return None

    changed = True
    best = list(path)
    while changed:
        changed = False
        for k in range(len(labels)):
            attempt = run(labels[:k] + labels[k + 1:])
            if attempt is not None and len(attempt) < len(best):
                best = attempt
                labels = [st.action for st in replay(spec, best).steps[1:]]
                changed = True
                break
    return best


def _aprop_holds(name: str, fn: Any, p: Any, s: Any, label: str, t: Any) -> bool:
    r = fn(p, s, label, t)
    return r is True or not fails(r, f"action property {name} ({label})", s)
