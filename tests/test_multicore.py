"""The multicore local engine gives exactly the sequential engine's results, for any number of workers."""

from __future__ import annotations

import multiprocessing

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import toyspecs
from toyspecs import Pair
from kafkamc.checker.local import explore
from kafkamc.checker.multicore import explore_multicore
from kafkamc.checker.watch import Stopped
from kafkamc.errors import SpecRaised
from kafkamc.invariants.api import invariant
from kafkamc.spec.api import Param, Spec, action
from kafkamc.spec.registry import build_spec, select_properties
from test_checkpoint import _checkpointer, _outcome, _stop_after
from test_engine import Graph, graphs, spec_for


def same(a, b):
    assert (a.result, a.violated, a.distinct_states, a.states_generated, a.depth, a.reason) == (
        b.result, b.violated, b.distinct_states, b.states_generated, b.depth, b.reason)
    assert a.coverage == b.coverage
    if a.trace is None:
        assert b.trace is None
    else:
        assert a.trace.path == b.trace.path
        assert a.trace.steps == b.trace.steps


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graphs(), st.integers(2, 4), st.sampled_from([None, 2, 3]), st.sampled_from([None, 3, 7]), st.booleans())
def test_forced_fork_matches_sequential(g: Graph, workers, max_depth, max_states, deadlock):
    spec = spec_for(g)
    kw = dict(max_depth=max_depth, max_states=max_states, deadlock=deadlock)
    same(explore(spec, **kw), explore_multicore(spec, workers=workers, fork_threshold=1, **kw))


def test_action_property_and_toys_match():
    spec = toyspecs.Counters(decrement=True, bound=6)
    props = type(spec).properties()
    for workers in (2, 3):
        same(explore(spec, props), explore_multicore(spec, props, workers=workers, fork_threshold=1))
    spec = toyspecs.Counters(bound=8, limit=6)
    same(explore(spec), explore_multicore(spec, workers=3, fork_threshold=1))
    spec = toyspecs.Tokens3(brokers=4, tokens=3)
    same(explore(spec, symmetry=True), explore_multicore(spec, workers=4, fork_threshold=1, symmetry=True))


# Bundled specs, violated and holding; forked from small levels on so that every worker count
# shards them (the results must not depend on it).
BUNDLED = [
    ("controller", {"fencing": "epoch"}),  # violates zk-writes-fenced
    ("controller", {"elections": 1}),  # holds
    ("replication", {"truncation": "kip279", "replicas": 2}),  # violates strong-isr
    ("replication", {"model": "tla", "truncation": "kip320", "replicas": 2}),  # holds
    ("transactions", {"version": "tv1"}),  # violates no-hanging-transaction
    ("transactions", {"partitions": 1}),  # holds
    ("group-kip848", {}),  # holds
]


@pytest.mark.parametrize("ref,params", BUNDLED, ids=[f"{r}-{'-'.join(map(str, p.values())) or 'default'}" for r, p in BUNDLED])
def test_bundled_specs_identical_for_any_worker_count(ref, params):
    spec = build_spec(ref, params)
    expected = explore(spec)
    for workers in (2, 3, 4):
        got = explore_multicore(spec, workers=workers, fork_threshold=50)
        same(expected, got)
        assert got.extra["workers"] == workers


@pytest.mark.parametrize("bound", [dict(max_states=3000), dict(max_depth=6)])
def test_a_bound_cuts_the_level_where_the_sequential_engine_does(bound):
    spec = build_spec("replication", {"truncation": "kip279", "replicas": 2, "crash": True})
    expected = explore(spec, **bound)
    assert expected.result == "incomplete"
    for workers in (2, 3, 4):
        same(expected, explore_multicore(spec, workers=workers, fork_threshold=50, **bound))


@invariant("no-boom", "raises on the states of one level whose x is at least 1")
def no_boom(p, s):
    if p.raise_in == "invariant" and s.x + s.y == 3 and s.x >= 1:
        raise ValueError(f"boom at {s.x}")
    return True


class Boom(Spec):
    """A grid where several states of one level raise: in an action or in an invariant."""

    name = "boom"
    parameters = (Param("raise_in", "action", "where to raise", choices=("action", "invariant")),)
    invariants = (no_boom,)

    def init_states(p):
        yield Pair(0, 0)

    @action
    def inc_x(p, s):
        if s.x < 6:
            yield "IncX", Pair(s.x + 1, s.y)

    @action
    def inc_y(p, s):
        if s.y < 6:
            yield "IncY", Pair(s.x, s.y + 1)

    @action
    def split(p, s):
        if p.raise_in == "action" and s.x + s.y == 3 and s.x >= 1:
            yield "Split", Pair(1 // (s.x - s.x), 0)


@pytest.mark.parametrize("raise_in", ["action", "invariant"])
def test_spec_errors_name_the_same_function_and_state_for_any_worker_count(raise_in):
    spec = Boom(raise_in=raise_in)
    with pytest.raises(SpecRaised) as seq:
        explore(spec)
    text = str(seq.value)
    assert ("action split" if raise_in == "action" else "invariant no-boom") in text
    for workers in (2, 3, 4):
        with pytest.raises(SpecRaised) as got:
            explore_multicore(spec, workers=workers, fork_threshold=1)
        assert str(got.value) == text


def test_interrupted_run_is_incomplete_and_leaves_no_worker():
    spec = build_spec("controller", {})
    levels = []

    def progress(stats):
        levels.append(stats)
        if len(levels) == 6:
            raise Stopped("terminated")

    r = explore_multicore(spec, workers=3, fork_threshold=50, progress=progress)
    assert (r.result, r.reason) == ("incomplete", "terminated")
    assert r.extra["workers"] == 3
    # The levels merged are counted; the states generated in the level cut short too.
    assert r.distinct_states == levels[-1].distinct_states
    assert r.states_generated >= levels[-1].states_generated
    assert r.trace is None
    assert not multiprocessing.active_children()


def test_a_checkpoint_resumes_on_any_number_of_workers(tmp_path):
    """Stopped with 3 workers, resumed with 4 and stopped again, resumed with 1 (and the other way
    round): the end is the uninterrupted run's (the checkpoint holds the sequential engine's state)."""
    ref, params = "replication", {"replicas": 2, "truncation": "kip279"}  # strong-isr fails after 11 steps
    spec = build_spec(ref, params)
    props = select_properties(type(spec), [])
    whole = explore(spec, props)
    for order in ((3, 4, 1), (1, 2, 3)):
        directory = tmp_path / "-".join(map(str, order))
        for k, (workers, stop) in enumerate(zip(order, (4, 8, None))):
            with _checkpointer(directory, ref, spec, props, resume=k > 0) as ckpt:
                r = explore_multicore(spec, props, workers=workers, fork_threshold=50,
                                      progress=None if stop is None else _stop_after(stop), checkpoint=ckpt)
                if stop is not None:
                    assert (r.result, r.reason) == ("incomplete", "interrupted")
                    assert ckpt.failure is None and ckpt.saved is not None and ckpt.saved.depth == stop - 1
        assert _outcome(r) == _outcome(whole)


def _many_actions(count: int) -> type:
    """A spec with ``count`` actions (more than a byte's worth): action ``a<i>`` steps x up to 2,
    setting y to i, so the second level has ``count`` states reached ``count`` times each."""

    def init_states(p):
        yield Pair(0, 0)

    body = {"name": "many-actions", "parameters": (), "init_states": init_states}
    for i in range(count):
        def step(p, s, i=i):
            if s.x < 2:
                yield (i,), Pair(s.x + 1, i)
        step.__name__ = f"a{i}"
        body[step.__name__] = action(step)
    return type("ManyActions", (Spec,), body)


def test_any_number_of_actions_for_any_worker_count():
    spec = _many_actions(300)()
    expected = explore(spec, max_states=400)
    assert expected.distinct_states == 400 and len(expected.coverage) == 300
    for workers in (2, 3):
        same(expected, explore_multicore(spec, workers=workers, fork_threshold=1, max_states=400))
    same(explore(spec), explore_multicore(spec, workers=2, fork_threshold=1))
