"""The state graph (networkx), its files, and recoverability (AG EF good) checked on it."""

from __future__ import annotations

import json
import os
from collections import deque
from dataclasses import dataclass

import networkx as nx
import pytest

from kafkamc import Param, Spec, action, invariant
from kafkamc.checker.graph import (
    GraphTooLarge, build_graph, check_recoverability, read_graph, recoverability_notes, write_graph,
)
from kafkamc.checker.local import explore
from kafkamc.cli import main
from kafkamc.invariants.api import property_of, recoverable
from kafkamc.spec.registry import build_spec


@dataclass(frozen=True, slots=True)
class Node:
    x: int
    halted: bool


@invariant("x-in-range", "x stays below size")
def x_in_range(p, s):
    return 0 <= s.x < p.size


@recoverable("back-to-zero", "from every state x can come back to 0 (not halted)")
def back_to_zero(p, s):
    return s.x == 0 and not s.halted


class Loop(Spec):
    """x counts round a ring; ``trap`` adds a way out of which the ring may be unreachable.

    deadlock: at the last position the counter may halt, and a halted counter has no successors.
    cycle: at position 2 it may halt, and then only moves between two halted states.
    livelock: at position 1 it may wait (a stuttering step), forever if it likes; every state can
    still get back to 0, so the property holds.
    """

    name = "loop"
    parameters = (
        Param("size", 4, "ring size", min=3, max=50),
        Param("trap", "none", "the way to get stuck", choices=("none", "deadlock", "cycle", "livelock")),
    )
    invariants = (x_in_range,)
    recoverability = (back_to_zero,)

    def init_states(p):
        yield Node(0, False)

    @action
    def step(p, s):
        if not s.halted:
            yield f"Step(x={(s.x + 1) % p.size})", Node((s.x + 1) % p.size, False)

    @action
    def halt(p, s):
        if p.trap == "deadlock" and not s.halted and s.x == p.size - 1:
            yield "Halt", Node(s.x, True)
        if p.trap == "cycle" and not s.halted and s.x == 2:
            yield "Halt", Node(2, True)

    @action
    def halted_move(p, s):
        if p.trap == "cycle" and s.halted:
            yield "Spin", Node(5 - s.x, True)  # 2 <-> 3, both halted

    @action
    def wait(p, s):
        if p.trap == "livelock" and s.x == 1 and not s.halted:
            yield "Wait", s


BACK = property_of(back_to_zero)


def _reaches_good(spec, start, good) -> bool:
    """Independent brute force: is a good state reachable from ``start``?"""
    seen = {start}
    queue = deque([start])
    while queue:
        s = queue.popleft()
        if good(spec.p, s):
            return True
        for _, _, t in spec.successors(s):
            if t not in seen:
                seen.add(t)
                queue.append(t)
    return False


def test_recoverable_ring_is_ok():
    r = check_recoverability(Loop(), None, [BACK])
    assert r.result == "ok" and r.violated is None and r.trace is None
    assert r.distinct_states == 4
    info = r.extra["recoverability"]["back-to-zero"]
    assert info == {"good_states": 1, "stuck_states": 0, "livelock_states": 0}
    assert r.extra["deadlocks"] == 0 and r.extra["stuttering_steps"] == 0


def test_deadlock_trap_is_a_violation_with_the_shortest_trace():
    spec = Loop(trap="deadlock", size=5)
    r = check_recoverability(spec, None, [BACK])
    assert r.result == "violation" and r.violated == "back-to-zero"
    assert [st.action for st in r.trace.steps] == [None, "Step(x=1)", "Step(x=2)", "Step(x=3)", "Step(x=4)", "Halt"]
    assert r.trace.last == Node(4, True)
    info = r.extra["recoverability"]["back-to-zero"]
    assert info["end"] == "deadlock" and info["stuck_states"] == 1
    assert not _reaches_good(spec, r.trace.last, back_to_zero)
    notes = recoverability_notes(r)
    assert notes[0] == "back-to-zero: the last state is a deadlock (no successors) and is not good"
    assert notes[1].startswith("back-to-zero: good states 1, stuck states 1 ")


def test_stuck_cycle_is_a_violation_and_not_a_deadlock():
    spec = Loop(trap="cycle")
    r = check_recoverability(spec, None, [BACK])
    assert r.result == "violation" and r.violated == "back-to-zero"
    assert r.trace.last == Node(2, True) and len(r.trace) == 4
    info = r.extra["recoverability"]["back-to-zero"]
    assert info["end"] == "stuck" and info["stuck_states"] == 2
    assert r.extra["deadlocks"] == 0


def test_livelock_is_reported_but_does_not_violate_ag_ef():
    r = check_recoverability(Loop(trap="livelock"), None, [BACK])
    assert r.result == "ok"
    assert r.extra["recoverability"]["back-to-zero"]["livelock_states"] == 1
    assert r.extra["stuttering_steps"] == 1
    assert "livelock states 1 (" in recoverability_notes(r)[0]


def test_ordinary_invariant_violation_is_reported_like_explore():
    spec = build_spec("replication", ["truncation=hw"])
    mine = check_recoverability(spec, None, [])
    theirs = explore(spec)
    assert mine.result == theirs.result == "violation"
    assert mine.violated == theirs.violated
    assert mine.trace.path == theirs.trace.path
    assert mine.distinct_states == theirs.distinct_states


def test_max_states_makes_it_incomplete_never_ok():
    r = check_recoverability(Loop(size=20), None, [BACK], max_states=5)
    assert r.result == "incomplete" and r.reason == "max-states" and r.trace is None


def test_graph_has_explores_states_and_labelled_edges():
    spec = build_spec("replication", [])
    ref = explore(spec)
    assert ref.result == "ok"
    g = build_graph(spec)
    assert g.number_of_nodes() == ref.distinct_states
    assert g.graph["depth"] == ref.depth
    assert g.graph["states_generated"] == ref.states_generated
    depths = [d["depth"] for _, d in g.nodes(data=True)]
    assert min(depths) == 1 and max(depths) == ref.depth
    labels = {d["action"].split("(")[0] for _, _, d in g.edges(data=True)}
    assert {"ControllerElectLeader", "BecomeLeader", "LeaderWrite"} <= labels
    assert all(d["strong-isr"] and d["weak-isr"] for _, d in g.nodes(data=True))


def test_graph_with_symmetry_has_one_node_per_class():
    spec = build_spec("toyspecs:Tokens3", ["brokers=4", "tokens=3"])
    for symmetry in (False, True):
        ref = explore(spec, symmetry=symmetry)
        g = build_graph(spec, symmetry=symmetry)
        assert g.number_of_nodes() == ref.distinct_states
    assert build_graph(spec, symmetry=True).number_of_nodes() < build_graph(spec).number_of_nodes()


def test_graph_refuses_above_its_limit():
    with pytest.raises(GraphTooLarge, match="more than 3 reachable states"):
        build_graph(Loop(size=10), max_states=3)


def test_graph_files_read_back_with_networkx(tmp_path):
    spec = Loop(trap="deadlock")
    g = build_graph(spec)
    assert g.number_of_nodes() == 5 and g.number_of_edges() == 5
    gm = read_graph(write_graph(g, str(tmp_path / "loop.graphml")))
    assert gm.number_of_nodes() == 5 and gm.number_of_edges() == 5
    assert sorted(d["action"] for _, _, d in gm.edges(data=True)) == sorted(
        d["action"] for _, _, d in g.edges(data=True))
    halted = [d for _, d in gm.nodes(data=True) if json.loads(d["state"])["halted"]]
    assert len(halted) == 1 and halted[0]["x-in-range"] is True and halted[0]["depth"] == 5
    gj = read_graph(write_graph(g, str(tmp_path / "loop.json")))
    assert nx.is_isomorphic(gj, g)
    assert {d["state"]["x"] for _, d in gj.nodes(data=True)} == {0, 1, 2, 3}
    dot = open(write_graph(g, str(tmp_path / "loop.dot")), encoding="utf-8").read()
    assert dot.startswith('digraph "loop" {') and dot.rstrip().endswith("}")
    assert dot.count(" -> ") == 5 and dot.count('label="Halt"') == 1
    with pytest.raises(Exception, match="allowed: .graphml, .dot, .gv, .json"):
        write_graph(g, str(tmp_path / "loop.png"))


def test_cli_check_r_reports_the_stuck_state(capsys):
    code = main(["check", "test_graph:Loop", "-p", "trap=deadlock", "-r", "back-to-zero", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 1
    assert doc["result"] == "violation" and doc["violated"] == "back-to-zero"
    assert doc["trace"][-1] == {"action": "Halt", "state": {"x": 3, "halted": True}}
    assert main(["check", "test_graph:Loop", "-r", "back-to-zero", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["result"] == "ok"


def test_cli_graph_writes_and_refuses(tmp_path, capsys):
    out = str(tmp_path / "g.graphml")
    assert main(["graph", "test_graph:Loop", "-p", "trap=cycle", "--out", out, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["states"] == 6 and doc["deadlocks"] == 0 and doc["stuttering_steps"] == 0
    assert nx.read_graphml(out).number_of_nodes() == 6
    marked = str(tmp_path / "m.json")
    assert main(["graph", "test_graph:Loop", "-p", "trap=cycle", "-r", "back-to-zero", "--out", marked, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["recoverability"]["back-to-zero"] == {"good_states": 1, "stuck_states": 2, "livelock_states": 0}
    nodes = json.load(open(marked, encoding="utf-8"))["nodes"]
    assert sorted((n["state"]["x"], n["state"]["halted"]) for n in nodes if n["stuck:back-to-zero"]) == [
        (2, True), (3, True)]
    big = str(tmp_path / "big.json")
    assert main(["graph", "test_graph:Loop", "-p", "size=30", "--out", big, "--max-states", "10"]) == 4
    assert "refused" in capsys.readouterr().err and not os.path.exists(big)
    assert main(["graph", "test_graph:Loop", "--out", str(tmp_path / "g.txt")]) == 2


def test_replication_partition_can_recover_finds_only_real_stuck_states():
    """Whatever the verdict, a reported stuck state must really be unable to reach a good one."""
    from kafkamc.invariants.recoverability import partition_can_recover

    spec = build_spec("replication", [])
    r = check_recoverability(spec, None, [property_of(partition_can_recover)])
    assert r.result in ("ok", "violation")
    if r.result == "violation":
        assert r.violated == "partition-can-recover"
        assert not _reaches_good(spec, r.trace.last, partition_can_recover)
        # The shortest: no state of a shorter trace is stuck.
        for step in r.trace.steps[:-1]:
            assert _reaches_good(spec, step.state, partition_can_recover)


@pytest.mark.parametrize("version, stuck", [("tv1", True), ("tv1-verify", False), ("tv2", False)])
def test_hanging_transaction_stops_the_lso_before_kip_890(version, stuck):
    """KAFKA-14402: under tv1 a delayed Produce delivered after its transaction's ABORT marker
    opens a transaction no marker will ever close; KIP-890 (tv1-verify, tv2) prevents it."""
    from kafkamc.invariants.recoverability import lso_can_advance

    spec = build_spec("transactions", [f"version={version}", "partitions=1", "producers=1"])
    r = check_recoverability(spec, [], [property_of(lso_can_advance)])
    assert r.result == ("violation" if stuck else "ok")
    if stuck:
        actions = [st.action for st in r.trace.steps]
        assert any(a and a.startswith("DeliverDelayed(Produce") for a in actions)
        last = r.trace.last
        assert last.partitions[0].producers[0].txn_first_offset >= 0
        assert not _reaches_good(spec, last, lso_can_advance)
        assert all(_reaches_good(spec, st.state, lso_can_advance) for st in r.trace.steps[:-1])
