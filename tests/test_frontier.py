"""The single-process engine's frontier on disk, and its batches: results never depend on either.

A budget of one byte writes every level to files; a batch (``local.CHUNK``) of a few states splits
every level into many vectorised lookups. Counts, coverage, depth, verdict and trace must be those
of the plain run.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import toyspecs
from kafkamc.checker import frontier as frontier_module
from kafkamc.checker import local
from kafkamc.checker.frontier import FrontierStore, estimate_bytes
from kafkamc.checker.local import explore
from kafkamc.cli import main
from kafkamc.spec.registry import build_spec
from test_engine import Graph, graphs, spec_for
from test_multicore import same


def outcome(r):
    return (r.result, r.violated, r.reason, r.distinct_states, r.states_generated, r.depth, r.coverage,
            None if r.trace is None else r.trace.path)


@pytest.mark.parametrize("ref, params", [
    ("replication", {"truncation": "kip279", "replicas": 2}),  # violates strong-isr
    ("replication", {"model": "tla", "truncation": "kip320", "replicas": 2}),  # ok, 5,973 states
    ("controller", {"fencing": "epoch"}),  # violates zk-writes-fenced
    ("transactions", {}),
])
def test_a_tiny_budget_gives_the_results_of_no_budget(ref, params, tmp_path, monkeypatch):
    spec = build_spec(ref, params)
    plain = explore(spec)
    monkeypatch.setattr(frontier_module, "SPILL_CHUNK", 64)
    store = tmp_path / "frontier"
    spilled = explore(spec, frontier_memory=1, frontier_dir=store)
    assert outcome(spilled) == outcome(plain)
    assert list(store.iterdir()) == []  # the run's temporary directory is gone


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(graphs(), st.integers(1, 4), st.sampled_from([None, 2, 3]), st.sampled_from([None, 3, 7]), st.booleans())
def test_batches_and_spilling_do_not_change_results(monkeypatch, tmp_path, g: Graph, chunk, max_depth, max_states,
                                                    deadlock):
    spec = spec_for(g)
    kw = dict(max_depth=max_depth, max_states=max_states, deadlock=deadlock)
    plain = explore(spec, **kw)
    with monkeypatch.context() as m:
        m.setattr(local, "CHUNK", chunk)
        m.setattr(frontier_module, "SPILL_CHUNK", 2)
        small = explore(spec, frontier_memory=1, frontier_dir=tmp_path, **kw)
    same(small, plain)


def test_action_properties_and_invariants_across_batch_boundaries(monkeypatch):
    for spec, props in ((toyspecs.Counters(decrement=True, bound=6), "all"), (toyspecs.Counters(bound=8, limit=6), None)):
        chosen = type(spec).properties() if props else None
        plain = explore(spec, chosen)
        for chunk in (1, 2, 5):
            monkeypatch.setattr(local, "CHUNK", chunk)
            assert outcome(explore(spec, chosen)) == outcome(plain)


def test_a_level_within_budget_stays_in_memory(tmp_path):
    spec = build_spec("replication", {"model": "tla", "truncation": "kip320", "replicas": 2})
    with FrontierStore(1 << 30, tmp_path) as store:
        level = store.new()
        level.extend([s for s in spec.initial()] * 100)
        assert not level.on_disk and store.spilled_levels == 0
    assert list(tmp_path.iterdir()) == []


def test_the_estimate_counts_what_a_state_reaches():
    spec = build_spec("replication", {"model": "tla", "truncation": "kip320", "replicas": 2})
    assert 100 < estimate_bytes(list(spec.initial())) < 10_000
    assert estimate_bytes([]) == 0


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("argv, says", [
    (("--frontier-memory", "12Q"), "is not a size"),
    (("--frontier-memory", "0"), "below 1M"),
    (("--frontier-memory", "150%"), "percentage in (0, 100]"),
    (("--frontier-dir", "FILE"), "not a directory"),
])
def test_bad_frontier_options_are_one_line_exit_2(capsys, tmp_path, argv, says):
    afile = tmp_path / "afile"
    afile.write_text("x")
    argv = tuple(str(afile) if a == "FILE" else a for a in argv)
    code, out, err = run(capsys, "check", "toyspecs:Counters", *argv)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and says in err, err


def test_frontier_options_are_refused_where_the_whole_graph_is_built(capsys):
    code, out, err = run(capsys, "check", "controller", "--frontier-memory", "1G", "-r", "controller-can-recover")
    assert code == 2 and err.count("\n") == 1 and "--frontier-memory does not apply with -r" in err
    code, out, err = run(capsys, "check", "controller", "--frontier-dir", ".", "-l", "controller-eventually-elected")
    assert code == 2 and err.count("\n") == 1 and "--frontier-dir does not apply with -l" in err


def test_check_with_a_frontier_on_disk_prints_what_it_prints_in_memory(capsys, tmp_path, monkeypatch):
    monkeypatch.setattr(frontier_module, "SPILL_CHUNK", 4)
    spilled = []
    monkeypatch.setattr(frontier_module, "estimate_bytes", lambda states: spilled.append(1) or 1 << 20)  # 1 MiB a state
    plain = run(capsys, "check", "toyspecs:Counters", "--json", "--workers", "1")
    where = tmp_path / "d"
    disk = run(capsys, "check", "toyspecs:Counters", "--json", "--frontier-memory", "1M",
               "--frontier-dir", str(where))
    strip = lambda text: text.split('"seconds"')[0]  # noqa: E731 - the timing differs
    assert disk[0] == plain[0] == 0 and strip(disk[1]) == strip(plain[1])
    assert spilled and list(where.iterdir()) == []


def test_several_workers_with_a_frontier_on_disk_print_what_they_print_in_memory(capsys, tmp_path, monkeypatch):
    monkeypatch.setattr(frontier_module, "SPILL_CHUNK", 4)
    spilled = []
    monkeypatch.setattr(frontier_module, "estimate_bytes", lambda states: spilled.append(1) or 1 << 20)  # 1 MiB a state
    argv = ("check", "replication", "-p", "replicas=2", "-p", "truncation=kip279", "--json")
    plain = run(capsys, *argv, "--workers", "1")
    where = tmp_path / "d"
    disk = run(capsys, *argv, "--workers", "2", "--frontier-memory", "1M", "--frontier-dir", str(where))
    strip = lambda text: text.split('"seconds"')[0]  # noqa: E731 - the timing differs
    assert disk[0] == plain[0] == 1 and strip(disk[1]) == strip(plain[1])
    assert spilled and list(where.iterdir()) == []


def test_a_level_sealed_again_after_a_stop_between_close_and_forget(tmp_path):
    # A stop that lands just after the file's close: the stop handler reads the level again.
    spec = build_spec("replication", {"model": "tla", "truncation": "kip320", "replicas": 2})
    states = list(spec.initial()) * 100
    with FrontierStore(1, tmp_path) as store:
        level = store.new()
        level.extend(states)
        assert level.on_disk
        level._file.close()
        assert [s for chunk in level.chunks(7) for s in chunk] == states
