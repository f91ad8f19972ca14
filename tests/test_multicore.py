"""The multicore local engine gives exactly the sequential engine's results."""

from __future__ import annotations

import dataclasses

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import toyspecs
from kafkamc.checker.local import explore
from kafkamc.checker.multicore import explore_multicore
from kafkamc.spec.registry import build_spec
from test_engine import Graph, graphs, spec_for


def same(a, b):
    assert (a.result, a.violated, a.distinct_states, a.states_generated, a.depth, a.reason) == (
        b.result, b.violated, b.distinct_states, b.states_generated, b.depth, b.reason)
    assert a.coverage == b.coverage
    if a.trace is None:
        assert b.trace is None
    else:
        assert a.trace.path == b.trace.path


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graphs(), st.integers(2, 3), st.sampled_from([None, 2, 3]), st.sampled_from([None, 3, 7]), st.booleans())
def test_forced_fork_matches_sequential(g: Graph, workers, max_depth, max_states, deadlock):
    spec = spec_for(g)
    kw = dict(max_depth=max_depth, max_states=max_states, deadlock=deadlock)
    same(explore(spec, **kw), explore_multicore(spec, workers=workers, fork_threshold=1, **kw))


def test_action_property_and_toys_match():
    spec = toyspecs.Counters(decrement=True, bound=6)
    props = type(spec).properties()
    same(explore(spec, props), explore_multicore(spec, props, workers=2, fork_threshold=1))
    spec = toyspecs.Counters(bound=8, limit=6)
    same(explore(spec), explore_multicore(spec, workers=2, fork_threshold=1))
    spec = toyspecs.Tokens3(brokers=4, tokens=3)
    same(explore(spec, symmetry=True), explore_multicore(spec, workers=2, fork_threshold=1, symmetry=True))


def test_replication_parity_configuration_matches():
    for truncation in ("kip279", "kip101"):
        spec = build_spec("replication", {"truncation": truncation, "replicas": 2})
        same(explore(spec), explore_multicore(spec, workers=2, fork_threshold=50))
