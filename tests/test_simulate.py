"""kafkamc simulate: hypothesis-driven random walks, shrinking, reproducibility, coverage, the CLI."""

from __future__ import annotations

import itertools
import json
import os
from dataclasses import dataclass

import pytest

from kafkamc import Spec, action, invariant
from kafkamc.errors import EngineError

from kafkamc.checker.local import explore
from kafkamc.checker.simulate import simulate
from kafkamc.cli import main
from kafkamc.counterexamples.trace import replay
from kafkamc.spec.registry import build_spec

# A Kafka variant with a known violation: before KIP-101 a follower truncates to its high
# watermark, and the ISR can lose a committed record (weak-isr).
VARIANT = ["truncation=hw"]
SEED = 3
# The search stops at the first violation (a few hundred walks at most seeds); room to spare when
# a new hypothesis release draws the walks differently.
RUNS = 3000


@pytest.fixture(scope="module")
def found():
    spec = build_spec("replication", VARIANT)
    return spec, simulate(spec, runs=RUNS, steps=30, seed=SEED, database=None)


def test_finds_the_known_violation_and_shrinks_it_near_the_bfs_shortest(found):
    spec, r = found
    bfs = explore(spec)
    assert bfs.result == "violation"
    assert r.result == "violation" and r.violated == bfs.violated
    # A real counterexample: it replays, and only its last state breaks the invariant.
    again = replay(spec, r.trace.path)
    fn = spec.property_named(r.violated).fn
    assert again.steps == r.trace.steps
    assert not fn(spec.p, again.last)
    assert all(fn(spec.p, st.state) for st in again.steps[:-1])
    # Shrunk: no longer than the walk hypothesis first found, and a small multiple of the shortest.
    assert len(r.trace) - 1 <= r.extra["found_steps"]
    assert len(bfs.trace) <= len(r.trace) <= 2 * len(bfs.trace)
    assert r.extra["runs"] >= 1 and r.extra["steps"] >= len(r.trace) - 1
    assert r.distinct_states >= len(r.trace) - 1


def test_same_seed_same_walks_same_shrunk_trace(found):
    spec, first = found
    second = simulate(spec, runs=RUNS, steps=30, seed=SEED, database=None)
    assert second.trace.path == first.trace.path
    assert (second.extra["runs"], second.extra["steps"], second.distinct_states) == (
        first.extra["runs"], first.extra["steps"], first.distinct_states)
    assert second.extra["coverage"] == first.extra["coverage"]


def test_coverage_counts_actions_and_lists_those_that_never_fired():
    spec = build_spec("toyspecs:Counters", [])
    r = simulate(spec, runs=40, steps=12, seed=1, database=None)
    assert r.result == "no-violation-found" and r.trace is None and r.violated is None
    cov = r.extra["coverage"]
    assert set(cov) == {"inc_x", "inc_y", "dec_x"}
    assert cov["inc_x"] > 0 and cov["inc_y"] > 0 and cov["dec_x"] == 0
    assert r.extra["never_fired"] == ["dec_x"]
    assert sum(cov.values()) == r.extra["steps"]
    assert r.extra["runs"] == 40
    # 25 states exist (bound 4), every walk of 8 steps ends in the deadlock (4, 4).
    assert r.distinct_states <= 25
    assert r.extra["deadlocks"] == r.extra["runs"] and r.extra["longest_walk"] == 8


def test_long_walks_fit_in_hypothesis_buffer():
    spec = build_spec("toyspecs:Tokens3", [])
    r = simulate(spec, runs=3, steps=2000, seed=1, database=None)
    assert r.result == "no-violation-found"
    assert r.extra["runs"] == 3 and r.extra["steps"] == 6000 and r.extra["longest_walk"] == 2000
    assert r.extra["cut_by_buffer"] == 0


def test_time_limit_stops_the_search():
    spec = build_spec("toyspecs:Counters", ["bound=50"])
    r = simulate(spec, runs=10**6, steps=100, seed=1, time_limit=0.3, database=None)
    assert r.result == "no-violation-found"
    assert r.extra["stopped_by"] == "time" and r.reason == "time"
    assert r.extra["runs"] < 10**6


def test_database_replays_a_found_failure_first(tmp_path):
    spec = build_spec("toyspecs:Counters", ["limit=3", "bound=10"])
    db = str(tmp_path / "db")
    first = simulate(spec, runs=200, steps=20, seed=5, database=db)
    assert first.result == "violation" and os.listdir(db)
    # Another seed: the stored (shrunk) walk is the first one tried, so the first walk fails.
    second = simulate(spec, runs=200, steps=20, seed=6, database=db)
    assert second.result == "violation" and second.extra["runs"] == 1
    assert second.trace.path == first.trace.path


def test_cli_simulate_ok_says_simulated_not_exhaustive(capsys):
    code = main(["simulate", "toyspecs:Counters", "--runs", "20", "--steps", "10", "--seed", "2", "--no-database"])
    out = capsys.readouterr().out
    assert code == 0
    assert "ok (simulated)" in out and "not exhaustive" in out
    assert "never fired: dec_x" in out
    code = main(["simulate", "toyspecs:Counters", "--runs", "20", "--steps", "10", "--seed", "2",
                 "--no-database", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0 and doc["result"] == "no-violation-found" and doc["engine"] == "simulate"
    assert doc["runs"] == 20 and doc["seed"] == 2 and doc["never_fired"] == ["dec_x"]


def test_cli_simulate_violation_exit_1_json_and_files(tmp_path, capsys):
    out_dir = str(tmp_path / "out")
    code = main(["simulate", "toyspecs:Counters", "-p", "limit=2", "--seed", "4", "--no-database",
                 "--json", "--out", out_dir])
    doc = json.loads(capsys.readouterr().out)
    assert code == 1
    check_keys = {"schema", "spec", "params", "engine", "result", "invariants", "violated",
                  "distinct_states", "states_generated", "depth", "seconds", "trace", "path"}
    assert check_keys | {"runs", "steps", "coverage", "never_fired", "seed", "found_steps", "shrunk_steps"} <= set(doc)
    assert doc["schema"] == 1 and doc["result"] == "violation" and doc["violated"] == "x-below-limit"
    # Shrunk to the shortest possible here: two increments of x.
    assert [s["action"] for s in doc["trace"]] == [None, "IncX(x=1)", "IncX(x=2)"]
    assert sorted(os.listdir(out_dir)) == ["counters-x-below-limit.itf.json", "counters-x-below-limit.trace.json"]
    assert main(["trace", "replay", os.path.join(out_dir, "counters-x-below-limit.trace.json"),
                 "--spec", "toyspecs:Counters"]) == 0


def test_cli_simulate_spec_that_raises_exits_3(capsys):
    assert main(["simulate", "toyspecs:Raising", "--seed", "1", "--runs", "20", "--no-database"]) == 3
    assert "action step raised ZeroDivisionError" in capsys.readouterr().err


def test_cli_simulate_rejects_bad_bounds(capsys):
    assert main(["simulate", "toyspecs:Counters", "--steps", "0"]) == 2
    assert main(["simulate", "toyspecs:Counters", "--steps", "999999", "--no-database"]) == 2
    assert main(["simulate", "toyspecs:Counters", "--time", "-1"]) == 2
    capsys.readouterr()


def test_tighten_deletes_steps_the_violation_does_not_need():
    from kafkamc.checker.simulate import tighten

    spec = build_spec("toyspecs:Counters", ["limit=2"])
    # IncY, IncY, IncX, IncX: x reaches the limit, the two IncY are irrelevant.
    path = [0, 1, 1, 0, 0]
    assert replay(spec, path).last.x == 2
    invs = [(pr.name, pr.fn) for pr in spec.default_properties()]
    short = tighten(spec, path, "x-below-limit", invs, [])
    assert [st.action for st in replay(spec, short).steps] == [None, "IncX(x=1)", "IncX(x=2)"]


def test_shortcut_cuts_a_walk_that_returns_to_a_state_it_visited():
    from kafkamc.checker.simulate import shortcut

    spec = build_spec("toyspecs:Counters", ["limit=2", "decrement=true"])
    path = [0, 0, 2, 0, 0]  # IncX, DecX (back to the initial state), IncX, IncX
    assert [st.action for st in replay(spec, path).steps][2] == "DecX"
    assert shortcut(spec, path) == [0, 0, 0]


_CALLS = itertools.count()


@dataclass(frozen=True, slots=True)
class _X:
    x: int


@invariant("x-small", "x stays below 3")
def _x_small(p, s):
    return s.x < 3


class _Impure(Spec):
    """An action whose successors depend on a global counter: not a function of (p, state)."""

    name = "impure"
    invariants = (_x_small,)

    def init_states(p):
        yield _X(0)

    @action
    def go(p, s):
        for i in range(next(_CALLS) % 3 + 1):
            yield f"Go{i}", _X(s.x + i % 2)


def test_a_nondeterministic_spec_is_an_engine_error_naming_the_cause():
    with pytest.raises(EngineError, match="not deterministic"):
        simulate(_Impure(), runs=200, steps=10, seed=1, database=None)


def test_deadlock_option_reports_a_walk_to_a_state_without_successors():
    spec = build_spec("toyspecs:Counters", ["bound=2"])
    r = simulate(spec, runs=50, steps=20, seed=1, database=None, deadlock=True)
    assert r.result == "violation" and r.violated == "deadlock"
    assert r.trace.last == type(r.trace.last)(2, 2) and len(r.trace) - 1 == 4
    assert "deadlock" in r.invariants
    assert simulate(spec, runs=50, steps=20, seed=1, database=None).result == "no-violation-found"


def test_a_stop_while_the_walk_is_tightened_reports_hypothesis_shrunk_walk(monkeypatch):
    import kafkamc.checker.simulate as simulate_module
    from kafkamc.checker.watch import Stopped

    def stopped(*args, **kwargs):
        raise Stopped("terminated")

    monkeypatch.setattr(simulate_module, "tighten", stopped)
    spec = build_spec("replication", VARIANT)
    try:
        r = simulate(spec, runs=RUNS, steps=30, seed=SEED, database=None)
    except Stopped:
        pytest.fail("the violation found was lost with the stop")
    assert r.result == "violation" and r.trace is not None
    assert len(r.trace) - 1 == r.extra["shrunk_steps"]
