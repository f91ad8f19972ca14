"""Properties of the local engine against a plain reference search on random graph-shaped specs."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections import deque
from dataclasses import dataclass

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import toyspecs
from kafkamc import Spec, action, invariant
from kafkamc.checker.fingerprint import Fingerprinter
from kafkamc.checker.local import explore
from kafkamc.counterexamples.trace import replay
from kafkamc.errors import SpecRaised, UsageError


@dataclass(frozen=True, slots=True)
class Node:
    n: int


@invariant("not-bad", "the walk never reaches a bad node")
def not_bad(p, s):
    return s.n not in type_graph(p).bad


GRAPHS: dict[int, "Graph"] = {}


@dataclass(frozen=True)
class Graph:
    nodes: int
    edges: tuple[tuple[int, int], ...]  # successor order: the order of this tuple
    inits: tuple[int, ...]
    bad: frozenset[int]


def type_graph(p) -> Graph:
    return GRAPHS[p.graph]


class GraphSpec(Spec):
    """A spec whose transition relation is an explicit random graph (looked up by id)."""

    name = "graph"
    invariants = (not_bad,)
    from kafkamc.spec.api import Param

    parameters = (Param("graph", 0, "graph id", min=0),)

    def init_states(p):
        for n in type_graph(p).inits:
            yield Node(n)

    @action
    def move(p, s):
        for a, b in type_graph(p).edges:
            if a == s.n:
                yield f"Move({a}, {b})", Node(b)


@st.composite
def graphs(draw) -> Graph:
    nodes = draw(st.integers(1, 14))
    node = st.integers(0, nodes - 1)
    edges = tuple(draw(st.lists(st.tuples(node, node), max_size=40)))
    inits = tuple(draw(st.lists(node, min_size=1, max_size=3)))
    bad = frozenset(draw(st.sets(node, max_size=3)))
    return Graph(nodes, edges, inits, bad)


def reference(g: Graph):
    """Plain BFS: distances from the initial states and the successor count per node."""
    dist: dict[int, int] = {}
    queue = deque()
    for n in g.inits:
        if n not in dist:
            dist[n] = 1
            queue.append(n)
    while queue:
        a = queue.popleft()
        for x, b in g.edges:
            if x == a and b not in dist:
                dist[b] = dist[a] + 1
                queue.append(b)
    return dist


def spec_for(g: Graph) -> GraphSpec:
    gid = len(GRAPHS)
    GRAPHS[gid] = g
    return GraphSpec(graph=gid)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graphs())
def test_engine_reaches_exactly_the_reachable_set(g: Graph):
    spec = spec_for(Graph(g.nodes, g.edges, g.inits, frozenset()))
    result = explore(spec)
    dist = reference(g)
    assert result.result == "ok"
    assert result.distinct_states == len(dist)
    assert result.depth == max(dist.values())
    out_degree = {a: sum(1 for x, _ in g.edges if x == a) for a in range(g.nodes)}
    assert result.states_generated == len(g.inits) + sum(out_degree[n] for n in dist)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graphs())
def test_counterexamples_are_shortest_and_replay(g: Graph):
    spec = spec_for(g)
    result = explore(spec)
    dist = reference(g)
    reachable_bad = [n for n in g.bad if n in dist]
    if not reachable_bad:
        assert result.result == "ok"
        return
    assert result.result == "violation" and result.violated == "not-bad"
    shortest = min(dist[n] for n in reachable_bad)
    assert len(result.trace) == shortest
    steps = result.trace.steps
    assert steps[0].action is None and steps[0].state.n in g.inits
    assert steps[-1].state.n in g.bad
    for prev, cur in zip(steps, steps[1:]):
        assert (prev.state.n, cur.state.n) in g.edges
        assert cur.action == f"Move({prev.state.n}, {cur.state.n})"
    again = replay(spec, result.trace.path)
    assert [s.state for s in again.steps] == [s.state for s in steps]
    # Same trace on a second run: traces are deterministic.
    assert explore(spec).trace.path == result.trace.path


@settings(max_examples=100, deadline=None)
@given(graphs(), st.integers(1, 6))
def test_bounds_make_the_result_incomplete_never_ok(g: Graph, bound: int):
    spec = spec_for(Graph(g.nodes, g.edges, g.inits, frozenset()))
    dist = reference(g)
    by_depth = explore(spec, max_depth=bound)
    deeper = any(d > bound for d in dist.values())
    assert by_depth.result == ("incomplete" if deeper else "ok")
    assert by_depth.distinct_states == sum(1 for d in dist.values() if d <= bound)
    by_states = explore(spec, max_states=bound)
    assert by_states.result == ("incomplete" if len(dist) > bound else "ok")
    assert by_states.distinct_states <= bound


def test_counters_defaults_and_counts():
    result = explore(toyspecs.Counters())
    assert (result.result, result.distinct_states, result.depth) == ("ok", 25, 9)
    assert result.states_generated == 1 + 2 * 20


def test_violation_completes_the_level_and_picks_the_first_in_bfs_order():
    result = explore(toyspecs.Counters(limit=2))
    assert result.violated == "x-below-limit"
    assert [s.action for s in result.trace.steps] == [None, "IncX(x=1)", "IncX(x=2)"]
    # Levels 1..3 of the 5x5 grid are complete: 1 + 2 + 3 states.
    assert result.distinct_states == 6 and result.depth == 3


def test_action_property_checked_on_every_transition():
    spec = toyspecs.Counters(decrement=True)
    props = [type(spec).property_named("x-never-decreases")]
    result = explore(spec, props)
    assert result.violated == "x-never-decreases"
    assert [s.action for s in result.trace.steps] == [None, "IncX(x=1)", "DecX"]


def test_deadlock_only_when_asked():
    spec = toyspecs.Counters(bound=2)
    assert explore(spec).result == "ok"
    result = explore(spec, deadlock=True)
    assert result.violated == "deadlock"
    assert result.trace.last == toyspecs.Pair(2, 2)
    assert len(result.trace) == 5


def test_spec_that_raises_names_the_action_and_state():
    with pytest.raises(SpecRaised) as info:
        explore(toyspecs.Raising())
    assert "action step" in str(info.value)
    assert "Pair(x=1, y=0)" in str(info.value)


def test_string_states_use_the_canonical_path_and_agree_across_processes():
    spec = toyspecs.Election()
    fpr = Fingerprinter(toyspecs.Named)
    assert not fpr.fast
    assert Fingerprinter(toyspecs.Pair).fast
    result = explore(spec)
    assert result.violated == "at-most-two-votes" and len(result.trace) == 4
    state = toyspecs.Named("b1", frozenset({"b1", "b2"}))
    code = textwrap.dedent(
        """
        import toyspecs
        from kafkamc.checker.fingerprint import Fingerprinter
        s = toyspecs.Named("b1", frozenset({"b1", "b2"}))
        p = toyspecs.Pair(3, 4)
        print(Fingerprinter(toyspecs.Named)(s), Fingerprinter(toyspecs.Pair)(p))
        """
    )
    here = f"{Fingerprinter(toyspecs.Named)(state)} {Fingerprinter(toyspecs.Pair)(toyspecs.Pair(3, 4))}"
    import os

    for seed in ("1", "2"):
        env = dict(os.environ, PYTHONHASHSEED=seed, PYTHONPATH=os.path.dirname(toyspecs.__file__))
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
        assert out.stdout.strip() == here


def test_fast_path_rejects_a_value_that_breaks_its_annotation():
    @dataclass(frozen=True, slots=True)
    class Liar:
        n: int

    class LiarSpec(Spec):
        name = "liar"

        def init_states(p):
            yield Liar("not an int")

        @action
        def nothing(p, s):
            return iter(())

    with pytest.raises(UsageError, match="state field state.n"):
        explore(LiarSpec())


def test_symmetry_reduces_and_keeps_the_verdict():
    plain = explore(toyspecs.Tokens3())
    reduced = explore(toyspecs.Tokens3(), symmetry=True)
    assert plain.result == reduced.result == "ok"
    # Distributions of 2 tokens over 3 brokers: 6 in all, 2 up to permutation.
    assert (plain.distinct_states, reduced.distinct_states) == (6, 2)


def test_symmetry_needs_a_hook():
    with pytest.raises(UsageError, match="symmetry"):
        explore(toyspecs.Counters(), symmetry=True)


def test_no_initial_states_is_an_input_error():
    class Empty(Spec):
        name = "empty"

        def init_states(p):
            return []

    with pytest.raises(UsageError, match="no initial states"):
        explore(Empty())


def test_ints_where_cpython_hash_collides_are_kept_apart():
    """hash(-1) == hash(-2) in CPython: the fast path must refuse such values, canonical must separate them."""
    from kafkamc.checker.fingerprint import canonical

    assert hash(canonical(toyspecs.Pair(-1, 0))) != hash(canonical(toyspecs.Pair(-2, 0)))
    assert hash(canonical((2**61 - 1,))) != hash(canonical((0,)))

    class Balance(Spec):
        name = "balance"

        def init_states(p):
            yield toyspecs.Pair(0, 0)

        @action
        def withdraw(p, s):
            if s.x > -3:
                yield "Withdraw", toyspecs.Pair(s.x - 1, 0)

    with pytest.raises(UsageError, match="hash\\(-1\\) == hash\\(-2\\)"):
        explore(Balance())

    class CanonicalBalance(Balance):
        name = "canonical-balance"
        fingerprint = "canonical"

    result = explore(CanonicalBalance())
    assert result.result == "ok" and result.distinct_states == 4
