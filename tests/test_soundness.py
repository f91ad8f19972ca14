"""A model checker must never print a wrong answer: checked counterexamples, properties that return
something other than a bool, action coverage (vacuous oks) and the fingerprint collision estimate."""

from __future__ import annotations

import json
import os
from collections import deque
from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import toyspecs
from kafkamc import Param, Spec, action, action_property, invariant
from kafkamc.checker.graph import check_recoverability
from kafkamc.checker.local import explore
from kafkamc.checker.multicore import explore_multicore
from kafkamc.checker.simulate import simulate
from kafkamc.cli import main
from kafkamc.errors import SpecError
from kafkamc.result import FINGERPRINT_BITS

DETERMINISM = "the spec is not deterministic: action step yields its successors in a different order on the same state"


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


# -- 1. the rebuilt counterexample is checked ------------------------------------------------


@pytest.mark.parametrize("workers", [1, 2, "graph"])
def test_nondeterministic_successors_are_a_spec_error_not_a_trace(workers):
    spec = toyspecs.Shuffled(home=os.getpid())
    with pytest.raises(SpecError) as info:
        if workers == "graph":
            check_recoverability(spec, None, [])
        else:
            explore_multicore(spec, workers=workers, fork_threshold=1)
    message = str(info.value)
    assert message.startswith(DETERMINISM) and "Pair(x=0, y=0)" in message
    assert "\n" not in message


def test_cli_prints_no_unchecked_trace(capsys):
    code, out, err = run(capsys, "check", "toyspecs:Shuffled", "-p", f"home={os.getpid()}", "--workers", "1")
    assert code == 3 and out == ""
    assert err.count("\n") == 1 and DETERMINISM in err


def test_a_deterministic_violation_still_replays_on_every_engine():
    spec = toyspecs.Counters(limit=2, decrement=True)
    props = type(spec).properties()
    for result in (explore(spec, props), explore_multicore(spec, props, workers=2, fork_threshold=1),
                   check_recoverability(spec, props, [])):
        assert result.result == "violation" and result.trace is not None
    dead = explore_multicore(toyspecs.Counters(bound=2), workers=2, fork_threshold=1, deadlock=True)
    assert dead.violated == "deadlock" and dead.trace.last == toyspecs.Pair(2, 2)


NOISY = [0]


@invariant("x-below-three-mostly", "x stays below 3, says an invariant that changes its mind")
def flaky_invariant(p, s):
    NOISY[0] += 1
    return s.x < 3 or NOISY[0] > 10**9 or p.calls_before_flip < NOISY[0]


class FlakyInvariant(toyspecs.Counters):
    name = "flaky-invariant"
    parameters = toyspecs.Counters.parameters + (Param("calls_before_flip", 0, "", min=0),)
    invariants = (flaky_invariant,)
    default_invariants = None


def test_an_invariant_that_changes_its_verdict_is_a_spec_error():
    NOISY[0] = 0
    # The search sees it fail; by the time of the replay it holds.
    with pytest.raises(SpecError, match="the spec is not deterministic: invariant x-below-three-mostly holds on the same"):
        explore(FlakyInvariant(calls_before_flip=7))


# -- 3. a property must return a bool ----------------------------------------------------------


@action_property("x-step-forgot-return", "x moves by one, but the author forgot the return")
def x_step_forgot_return(p, s, label, t):
    abs(t.x - s.x) <= 1  # noqa: B015 - the bug under test


@invariant("x-below-limit-np", "x stays below the limit, computed with numpy")
def x_below_limit_np(p, s):
    return np.int64(s.x) < p.limit


@invariant("x-below-limit-int", "x stays below the limit, as an int")
def x_below_limit_int(p, s):
    return int(s.x < p.limit)


class Returns(toyspecs.Counters):
    name = "returns"
    invariants = (x_step_forgot_return, x_below_limit_np, x_below_limit_int)
    default_invariants = None


@pytest.mark.parametrize("engine", ["local", "multicore", "graph", "simulate"])
def test_a_property_returning_none_is_a_spec_error_on_every_engine(engine):
    for spec, props, what in (
        (toyspecs.ForgotReturn(), None, "invariant x-forgot-return returned None (NoneType), not a bool, on state "
                                        "Pair(x=0, y=0)"),
        (Returns(), [Returns.property_named("x-step-forgot-return")],
         "action property x-step-forgot-return (IncX(x=1)) returned None (NoneType), not a bool, on state "
         "Pair(x=0, y=0)"),
        (Returns(), [Returns.property_named("x-below-limit-int")],
         "invariant x-below-limit-int returned 1 (int), not a bool"),
    ):
        props = props if props is not None else type(spec).properties()
        with pytest.raises(SpecError) as info:
            if engine == "local":
                explore(spec, props)
            elif engine == "multicore":
                explore_multicore(spec, props, workers=2, fork_threshold=1)
            elif engine == "graph":
                check_recoverability(spec, props, [])
            else:
                simulate(spec, props, runs=5, steps=5, seed=1, database=None)
        assert what in str(info.value)


def test_numpy_bools_are_accepted_as_bools():
    props = [Returns.property_named("x-below-limit-np")]
    assert explore(Returns(), props).result == "ok"
    bad = explore(Returns(limit=2), props)
    assert bad.violated == "x-below-limit-np" and bad.trace.last.x == 2


def test_cli_non_bool_is_exit_3(capsys):
    code, out, err = run(capsys, "check", "toyspecs:ForgotReturn")
    assert code == 3 and out == "" and "invariant x-forgot-return returned None" in err


# -- 2. coverage -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Node:
    n: int


GRAPHS: dict[int, "Labelled"] = {}


@dataclass(frozen=True)
class Labelled:
    nodes: int
    edges: tuple[tuple[int, int, int], ...]  # (action 0..2, from, to), in successor order per action
    inits: tuple[int, ...]


def _moves(which: int):
    def move(p, s):
        for a, x, y in GRAPHS[p.graph].edges:
            if a == which and x == s.n:
                yield f"M{which}({x}, {y})", Node(y)
    move.__name__ = f"move{which}"
    return move


class LabelledSpec(Spec):
    """A random graph whose edges belong to one of three actions (the last one may never fire)."""

    name = "labelled"
    parameters = (Param("graph", 0, "graph id", min=0),)

    def init_states(p):
        for n in GRAPHS[p.graph].inits:
            yield Node(n)

    move0 = action(_moves(0))
    move1 = action(_moves(1))
    move2 = action(_moves(2))


@st.composite
def labelled(draw) -> Labelled:
    nodes = draw(st.integers(1, 12))
    node = st.integers(0, nodes - 1)
    edges = tuple(draw(st.lists(st.tuples(st.integers(0, 2), node, node), max_size=30)))
    inits = tuple(draw(st.lists(node, min_size=1, max_size=3)))
    return Labelled(nodes, edges, inits)


def reference_coverage(g: Labelled) -> list[tuple[str, int, int, int]]:
    """A plain BFS in successor order (actions in declaration order, then edges in order)."""
    seen: set[int] = set()
    queue: deque[int] = deque()
    for n in g.inits:
        if n not in seen:
            seen.add(n)
            queue.append(n)
    en, gen, new = [0, 0, 0], [0, 0, 0], [0, 0, 0]
    while queue:
        x = queue.popleft()
        for a in range(3):
            succ = [y for b, f, y in g.edges if b == a and f == x]
            en[a] += bool(succ)
            gen[a] += len(succ)
            for y in succ:
                if y not in seen:
                    seen.add(y)
                    new[a] += 1
                    queue.append(y)
    return [(f"move{a}", en[a], gen[a], new[a]) for a in range(3)]


def as_rows(result):
    return [(c.action, c.enabled, c.generated, c.distinct) for c in result.coverage]


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(labelled(), st.integers(2, 3), st.sampled_from([None, 2, 3]), st.sampled_from([None, 3, 7]))
def test_coverage_matches_a_reference_and_every_worker_count(g, workers, max_depth, max_states):
    gid = len(GRAPHS)
    GRAPHS[gid] = g
    spec = LabelledSpec(graph=gid)
    full = explore(spec)
    assert as_rows(full) == reference_coverage(g)
    kw = dict(max_depth=max_depth, max_states=max_states)
    local = explore(spec, **kw)
    forked = explore_multicore(spec, workers=workers, fork_threshold=1, **kw)
    assert as_rows(forked) == as_rows(local)
    # Coverage of what was explored, bounded or not: it adds up to the run's own statistics.
    inits = len(g.inits)
    assert sum(c.generated for c in local.coverage) == local.states_generated - inits
    admitted = min(len(set(g.inits)), max_states or len(g.inits))
    assert sum(c.distinct for c in local.coverage) == local.distinct_states - admitted


def test_coverage_of_a_real_model_is_the_same_with_one_and_two_workers():
    from kafkamc.spec.registry import build_spec

    spec = build_spec("replication", {"replicas": 2, "truncation": "kip279"})
    one, two = explore(spec), explore_multicore(spec, workers=2, fork_threshold=50)
    assert one.coverage == two.coverage
    assert sum(c.distinct for c in one.coverage) == one.distinct_states - 1


def test_check_prints_coverage_and_warns_about_actions_that_never_fire(capsys):
    code, out, err = run(capsys, "check", "toyspecs:Counters", "--workers", "1")
    assert code == 0
    assert out.splitlines()[4].startswith("action coverage")
    table = out.splitlines()[5:]
    assert table[0].split() == ["action", "enabled", "generated", "distinct"]
    assert [row.split() for row in table[1:]] == [
        ["inc_x", "20", "20", "4"], ["inc_y", "20", "20", "20"], ["dec_x", "0", "0", "0"]]
    assert err.splitlines() == [
        "kafkamc: warning: action dec_x never fired in any reachable state (with these parameters it is never "
        "enabled)"]
    code, out, err = run(capsys, "check", "toyspecs:Counters", "--json", "--max-states", "3")
    doc = json.loads(out)
    assert code == 4 and doc["coverage"] == [
        {"action": "inc_x", "enabled": 2, "generated": 2, "distinct": 1},
        {"action": "inc_y", "enabled": 1, "generated": 1, "distinct": 1},
        {"action": "dec_x", "enabled": 0, "generated": 0, "distinct": 0},
    ]
    assert "action dec_x has not fired in the states explored" in err
    # A violation stops early: no warning then.
    code, _, err = run(capsys, "check", "toyspecs:Counters", "-p", "limit=2")
    assert code == 1 and "warning" not in err


def test_a_spec_without_actions_is_not_a_silent_ok(capsys):
    code, out, err = run(capsys, "check", "toyspecs:NoActions", "--json")
    doc = json.loads(out)
    assert code == 0 and doc["coverage"] == []
    assert "spec no-actions has no actions" in err
    code, out, _ = run(capsys, "check", "toyspecs:NoActions")
    assert "coverage: the spec has no actions" in out


# -- 4. the fingerprint collision estimate -------------------------------------------------------


def test_collision_probability_is_tlcs_formula_at_our_width(capsys):
    code, out, _ = run(capsys, "check", "toyspecs:Counters", "--json")
    doc = json.loads(out)
    n, g = doc["distinct_states"], doc["states_generated"]
    assert (n, g) == (25, 41)
    assert doc["fingerprint_collision_probability"] == n * (g - n) / 2**FINGERPRINT_BITS
    code, out, _ = run(capsys, "check", "toyspecs:Counters")
    assert f"fingerprint collision probability {n * (g - n) / 2**61:.1e}" in out


def test_trace_replay_of_a_forgetful_invariant_is_a_spec_error_not_reproduced(capsys, tmp_path):
    code, _, _ = run(capsys, "check", "toyspecs:Counters", "-p", "limit=2", "--out", str(tmp_path))
    assert code == 1
    (path,) = tmp_path.glob("*.trace.json")
    doc = json.loads(path.read_text())
    doc.update(spec="forgot-return", violated="x-forgot-return", spec_ref="toyspecs:ForgotReturn")
    path.write_text(json.dumps(doc))
    code, out, err = run(capsys, "trace", "replay", str(path), "--spec", "toyspecs:ForgotReturn")
    assert code == 3 and "invariant x-forgot-return returned None" in err and "reproduced" not in out
