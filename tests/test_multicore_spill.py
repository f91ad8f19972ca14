"""The multicore engine with its frontier and its pending successors on disk gives the sequential
engine's results, for any number of workers.

A budget of one byte makes every worker write every level (the frontier it expands and the
successors it holds until their owners decide) to its files, in chunks of two states; a fork
threshold of one rebalances the frontier (``take``/``give``) whenever it is uneven.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkamc.checker import frontier as frontier_module
from kafkamc.checker import multicore, shard
from kafkamc.checker.local import explore
from kafkamc.checker.multicore import explore_multicore
from kafkamc.spec.registry import build_spec
from test_engine import Graph, graphs, spec_for
from test_multicore import same


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(graphs(), st.integers(2, 3), st.integers(1, 4), st.sampled_from([None, 2, 3]), st.sampled_from([None, 3, 7]),
       st.booleans())
def test_spilled_workers_match_sequential(monkeypatch, tmp_path, g: Graph, workers, chunk, max_depth, max_states,
                                          deadlock):
    spec = spec_for(g)
    kw = dict(max_depth=max_depth, max_states=max_states, deadlock=deadlock)
    plain = explore(spec, **kw)
    with monkeypatch.context() as m:
        m.setattr(frontier_module, "SPILL_CHUNK", 2)
        m.setattr(shard, "CHUNK", chunk)
        m.setattr(shard, "_PART", chunk)  # an owner's merge in parts of a few candidates
        m.setattr(multicore, "FORK_THRESHOLD", 1)
        spilled = explore_multicore(spec, workers=workers, fork_threshold=1, frontier_memory=1,
                                    frontier_dir=tmp_path / "f", **kw)
    same(spilled, plain)
    assert not (tmp_path / "f").exists() or list((tmp_path / "f").iterdir()) == []


@pytest.mark.parametrize("ref, params", [
    ("replication", {"truncation": "kip279", "replicas": 2}),  # violates strong-isr
    ("replication", {"model": "tla", "truncation": "kip320", "replicas": 2}),  # ok, 5,973 states
    ("controller", {"fencing": "epoch"}),  # violates zk-writes-fenced
])
def test_a_tiny_budget_per_worker_gives_the_results_of_no_budget(ref, params, tmp_path, monkeypatch):
    spec = build_spec(ref, params)
    plain = explore(spec)
    monkeypatch.setattr(frontier_module, "SPILL_CHUNK", 64)
    monkeypatch.setattr(multicore, "FORK_THRESHOLD", 1)  # rebalance spilled frontiers too
    where = tmp_path / "frontier"
    for workers in (2, 3):
        spilled = explore_multicore(spec, workers=workers, fork_threshold=50, frontier_memory=1, frontier_dir=where)
        same(spilled, plain)
        assert spilled.extra["workers"] == workers
        assert spilled.extra["frontier_bytes_written"] > 0  # the workers did write their levels
        assert list(where.iterdir()) == []  # the run's temporary directory is gone


def test_a_budget_that_fits_writes_nothing(tmp_path):
    spec = build_spec("replication", {"model": "tla", "truncation": "kip320", "replicas": 2})
    r = explore_multicore(spec, workers=2, fork_threshold=50, frontier_memory=1 << 30, frontier_dir=tmp_path / "f")
    same(r, explore(spec))
    assert r.extra["frontier_bytes_written"] == 0
    assert not (tmp_path / "f").exists() or list((tmp_path / "f").iterdir()) == []


@pytest.mark.parametrize("workers", [2, 3])
def test_without_a_budget_candidates_still_pass_through_files_merged_in_parts(workers, tmp_path, monkeypatch):
    """The workers leave each owner its candidates in a file in the run's directory, budget or
    not; the directory is removed at the end, and an owner's merge in parts of three candidates
    gives the sequential engine's results."""
    spec = build_spec("replication", {"model": "tla", "truncation": "kip320", "replicas": 2})
    monkeypatch.setattr(shard, "_PART", 3)
    where = tmp_path / "f"
    r = explore_multicore(spec, workers=workers, fork_threshold=50, frontier_dir=where)
    same(r, explore(spec))
    assert r.extra["workers"] == workers
    assert where.exists() and list(where.iterdir()) == []
