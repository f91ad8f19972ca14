"""Liveness under fairness: verdicts of toy specs, the lasso's shape, an independent brute-force
check on random graphs, the command line, trace files, replay and the gate."""

from __future__ import annotations

import itertools
import json

import networkx as nx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkamc import Param, Spec, action
from kafkamc.checker.liveness import (
    Fairness, build_liveness_graph, check_liveness, judge_lasso, resolve_fairness,
    strongly_connected_components,
)
from kafkamc.cli.main import main
from kafkamc.counterexamples.itf import result_to_itf
from kafkamc.counterexamples.render import LOOP_MARK, render_trace, result_to_json
from kafkamc.errors import UsageError
from kafkamc.invariants.temporal import always_eventually, eventually, eventually_always, leads_to
from livenesstoys import Flicker, Spinner


def check(spec, name, **fairness):
    fair = resolve_fairness(type(spec), **fairness)
    return check_liveness(spec, (), [type(spec).liveness_named(name)], fair)


def actions_of(trace):
    return [s.action for s in trace.steps]


# -- toy verdicts ----------------------------------------------------------------------------------


def test_spinner_finishes_only_if_finish_is_fair():
    spec = Spinner(size=3)
    assert check(spec, "finishes").result == "ok"  # declared: WF(spin), WF(finish)
    assert check(spec, "finishes", no_fairness=True, fair=["finish"]).result == "ok"
    # Without fairness the behaviour may stop at once: a lasso of one stuttering state.
    r = check(spec, "finishes", no_fairness=True)
    assert r.result == "violation" and r.violated == "finishes"
    assert len(r.trace) == 1 and r.trace.loop_start == 0 and r.trace.loop_action is None
    # With spin fair but finish not, it spins forever: the cycle 0 -> 1 -> 2 -> 0.
    r = check(spec, "finishes", no_fairness=True, fair=["spin"])
    assert r.result == "violation"
    assert actions_of(r.trace) == [None, "Spin(x=1)", "Spin(x=2)"]
    assert r.trace.loop_start == 0 and r.trace.loop_action == "Spin(x=0)"
    assert r.extra["liveness"]["finishes"]["end"] == "cycle"


def test_the_four_forms_on_the_spinner():
    spec = Spinner(size=2)
    assert check(spec, "zero-leads-to-done").result == "ok"
    assert check(spec, "done-for-good").result == "ok"
    # []<>(x = 1) fails: finishing at x = 0 stops x there; the run then stutters (nothing is enabled).
    r = check(spec, "one-again-and-again")
    assert r.result == "violation"
    assert actions_of(r.trace) == [None, "Finish"] and r.trace.loop_start == 1 and r.trace.loop_action is None
    r = check(spec, "zero-leads-to-done", no_fairness=True, fair=["spin"])
    assert r.result == "violation" and r.trace.loop_action == "Spin(x=0)"
    r = check(spec, "done-for-good", no_fairness=True, fair=["spin"])
    assert r.result == "violation" and r.trace.loop_start == 0


def test_strong_fairness_is_needed_when_an_action_is_enabled_only_now_and_then():
    spec = Flicker()
    assert check(spec, "lamp-finishes").result == "ok"  # WF(toggle), SF(finish)
    # WF(finish) is not enough: finish is disabled whenever the lamp is off, so the toggling cycle is
    # weakly fair to it.
    r = check(spec, "lamp-finishes", no_fairness=True, fair=["toggle", "finish"])
    assert r.result == "violation"
    assert actions_of(r.trace) == [None, "Toggle"] and r.trace.loop_start == 0 and r.trace.loop_action == "Toggle"
    # SF(finish) alone: the lamp may stay off forever (toggle is not fair, finish is disabled there).
    r = check(spec, "lamp-finishes", no_fairness=True, strong=["finish"])
    assert r.result == "violation" and len(r.trace) == 1 and r.trace.loop_action is None


def test_fairness_resolution_and_bad_names():
    assert resolve_fairness(Flicker) == Fairness(("toggle",), ("finish",))
    assert resolve_fairness(Flicker, fair=["finish"], no_fairness=True) == Fairness(("finish",), ())
    # An action both weakly and strongly fair is strongly fair.
    assert resolve_fairness(Spinner, strong=["spin"]) == Fairness(("finish",), ("spin",))
    with pytest.raises(UsageError, match="not an action of spec flicker; allowed: toggle, finish"):
        resolve_fairness(Flicker, fair=["nope"])


def test_text_json_and_itf_of_a_lasso():
    r = check(Spinner(size=3), "finishes", no_fairness=True, fair=["spin"])
    text = render_trace(r.trace)
    assert text.splitlines()[0] == LOOP_MARK
    assert text.splitlines()[-1] == "-- Spin(x=0) leads back to state 1, and the cycle repeats forever --"
    doc = result_to_json(r)
    assert doc["loop_start"] == 0 and doc["loop_action"] == "Spin(x=0)"
    assert doc["fairness"] == {"weak": ["spin"], "strong": []}
    itf = result_to_itf(r)
    assert itf["loop"] == 0 and itf["#meta"]["loop_action"] == "Spin(x=0)"
    assert len(itf["states"]) == len(r.trace)
    # A safety counterexample has none of these fields.
    from kafkamc.checker.local import explore
    from toyspecs import Counters

    safe = result_to_json(explore(Counters(limit=2)))
    assert "loop_start" not in safe and "loop" not in result_to_itf(explore(Counters(limit=2)))


def test_the_lasso_is_judged_independently():
    spec = Spinner(size=3)
    r = check(spec, "finishes", no_fairness=True, fair=["spin"])
    states = [s.state for s in r.trace.steps]
    formula = Spinner.liveness_named("finishes").fn()
    assert judge_lasso(spec, formula, Fairness(("spin",)), states, ["spin", "spin"], 0, "spin") == []
    problems = judge_lasso(spec, formula, Fairness(("spin", "finish")), states, ["spin", "spin"], 0, "spin")
    assert problems == ["the cycle is not weakly fair to finish: it is enabled in every state of the cycle and "
                        "never taken"]


# -- an independent check on random graphs ---------------------------------------------------------


def _members(text: str) -> frozenset[int]:
    return frozenset(int(x) for x in text.split(",") if x)


def in_p(p, s):
    return s in _members(p.p_set)


def in_q(p, s):
    return s in _members(p.q_set)


class RandomGraph(Spec):
    """States 0..n-1; ``edges`` is 'u>v:a;...' with a in {a, b, c} (one action each)."""

    name = "random-graph"
    parameters = (Param("edges", "", "u>v:a;..."), Param("p_set", "", "P states"),
                  Param("q_set", "", "Q states"), Param("inits", "0", "initial states"))

    def init_states(p):
        yield from sorted(_members(p.inits))

    @staticmethod
    def _moves(p, s, name):
        for item in p.edges.split(";"):
            if item:
                uv, a = item.split(":")
                u, v = uv.split(">")
                if int(u) == s and a == name:
                    yield f"{name}({u}>{v})", int(v)

    @action
    def a(p, s):
        yield from RandomGraph._moves(p, s, "a")

    @action
    def b(p, s):
        yield from RandomGraph._moves(p, s, "b")

    @action
    def c(p, s):
        yield from RandomGraph._moves(p, s, "c")


def brute_force_violated(n, n_edges, inits, P, Q, form, weak, strong) -> bool:
    """Is there a fair behaviour violating the formula? By enumerating every set of states that the
    behaviour could visit infinitely often (no SCC refinement, no lasso construction)."""
    g = nx.MultiDiGraph()
    g.add_nodes_from(range(n))
    for u, v, a in n_edges:
        g.add_edge(u, v, action=a)
    reach = set()
    for i in inits:
        reach |= {i} | nx.descendants(g, i)
    nodes = reach
    enabled = {u: {d["action"] for _, v, d in g.out_edges(u, data=True) if v != u} for u in nodes}
    stay = {"eventually": lambda s: s not in P, "leads_to": lambda s: s not in Q,
            "always_eventually": lambda s: s not in P, "eventually_always": lambda s: True}[form]
    if form == "eventually":
        sub = g.subgraph([s for s in nodes if stay(s)])
        starts = {i for i in inits if stay(i)}
        entries = set()
        for i in starts:
            entries |= {i} | nx.descendants(sub, i)
    elif form == "leads_to":
        sub = g.subgraph([s for s in nodes if stay(s)])
        entries = set()
        for s in nodes:
            if s in P and s not in Q:
                entries |= {s} | nx.descendants(sub, s)
    else:
        entries = {s for s in nodes if stay(s)}
    candidates = [s for s in nodes if stay(s)]
    for k in range(1, len(candidates) + 1):
        for cset in itertools.combinations(candidates, k):
            C = set(cset)
            if not C & entries:
                continue
            if form == "eventually_always" and not C - P:
                continue
            inner = [(u, v, d["action"]) for u, v, d in g.edges(data=True) if u in C and v in C and u != v]
            if len(C) > 1:
                h = nx.DiGraph()
                h.add_nodes_from(C)
                h.add_edges_from((u, v) for u, v, _ in inner)
                if not nx.is_strongly_connected(h):
                    continue
            taken = {a for _, _, a in inner}
            ok = all(a in taken or any(a not in enabled[u] for u in C) for a in weak)
            ok = ok and all(a in taken or all(a not in enabled[u] for u in C) for a in strong)
            if ok:
                return True
    return False


graphs = st.integers(1, 5).flatmap(lambda n: st.tuples(
    st.just(n),
    st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1), st.sampled_from("abc")), max_size=9),
    st.sets(st.integers(0, n - 1), min_size=1, max_size=2),
    st.sets(st.integers(0, n - 1)),
    st.sets(st.integers(0, n - 1)),
    st.sampled_from(["eventually", "leads_to", "always_eventually", "eventually_always"]),
    st.lists(st.sampled_from(["none", "weak", "strong"]), min_size=3, max_size=3),
))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graphs)
def test_verdicts_match_a_brute_force_search_and_every_lasso_is_a_fair_counterexample(case):
    n, edges, inits, P, Q, form, kinds = case
    edges = sorted(set(edges))
    spec = RandomGraph(edges=";".join(f"{u}>{v}:{a}" for u, v, a in edges), p_set=",".join(map(str, P)),
                       q_set=",".join(map(str, Q)), inits=",".join(map(str, sorted(inits))))
    weak = tuple(a for a, k in zip("abc", kinds) if k == "weak")
    strong = tuple(a for a, k in zip("abc", kinds) if k == "strong")
    formula = {"eventually": eventually(in_p), "leads_to": leads_to(in_p, in_q),
               "always_eventually": always_eventually(in_p), "eventually_always": eventually_always(in_p)}[form]

    from kafkamc.invariants.temporal import liveness

    prop_fn = liveness("random-property", "a random formula")(lambda: formula)
    from kafkamc.invariants.api import property_of

    r = check_liveness(spec, (), [property_of(prop_fn)], Fairness(weak, strong))
    expected = brute_force_violated(n, edges, inits, P, Q, form, weak, strong)
    assert (r.result == "violation") == expected, (r.result, r.trace)
    if r.result == "violation":
        trace = r.trace
        states = [s.state for s in trace.steps]
        names = [s.action.split("(")[0] for s in trace.steps[1:]]
        closing = trace.loop_action.split("(")[0] if trace.loop_action else None
        for (s, t, a) in zip(states, states[1:], names):
            assert (s, t, a) in edges
        if closing is not None:
            assert (states[-1], states[trace.loop_start], closing) in edges
        assert judge_lasso(spec, formula, Fairness(weak, strong), states, names, trace.loop_start, closing) == []


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 7).flatmap(lambda n: st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1),
                                                              st.sampled_from("abc")), max_size=14)))
def test_components_match_networkx(edges):
    edges = sorted(set(edges))
    spec = RandomGraph(edges=";".join(f"{u}>{v}:{a}" for u, v, a in edges), inits="0,1,2,3,4,5,6")
    g = build_liveness_graph(spec, [], max_states=100)
    ours = {frozenset(c) for c in strongly_connected_components(g, bytearray(b"\x01") * g.nodes)}
    h = nx.DiGraph()
    h.add_nodes_from(range(g.nodes))
    h.add_edges_from((u, g.dst[e]) for u in range(g.nodes) for e in g.edges(u))
    assert ours == {frozenset(c) for c in nx.strongly_connected_components(h)}


# -- command line, files, replay, gate ------------------------------------------------------------


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_exit_codes(capsys):
    code, out, _ = run(capsys, "check", "livenesstoys:Spinner", "-l", "finishes")
    assert code == 0 and "fairness: WF(spin), WF(finish)" in out and "holds on every fair behaviour" in out
    code, out, _ = run(capsys, "check", "livenesstoys:Spinner", "-l", "all", "--no-fairness", "--fair", "spin")
    assert code == 1 and LOOP_MARK in out
    assert ("violation: finishes fails on a fair behaviour: 0 steps to a cycle of 2 transitions that repeats "
            "forever (a lasso of 2 states)") in out
    code, out, _ = run(capsys, "check", "livenesstoys:Flicker", "-l", "all", "--json")
    assert code == 0 and json.loads(out)["result"] == "ok"


@pytest.mark.parametrize("argv, message", [
    (["-l", "all", "--symmetry"], "--symmetry cannot be combined with -l: a symmetry reduction can hide liveness"),
    (["-l", "nope"], "unknown liveness property 'nope' for spec spinner; allowed: finishes"),
    (["-l", "all", "--fair", "nope"], "--fair 'nope' is not an action of spec spinner; allowed: spin, finish"),
    (["--fair", "spin"], "--fair applies only with -l NAME"),
    (["-l", "all", "--engine", "spark"], "local engine only"),
    (["-l", "all", "--max-depth", "3"], "--max-depth does not apply with -l"),
])
def test_cli_refuses_bad_liveness_invocations(capsys, argv, message):
    code, out, err = run(capsys, "check", "livenesstoys:Spinner", *argv)
    assert code == 2 and out == ""
    assert message in err and len(err.strip().splitlines()) == 1


def test_a_bounded_graph_is_incomplete(capsys):
    code, out, _ = run(capsys, "check", "livenesstoys:Spinner", "-p", "size=5", "-l", "all", "--max-states", "3")
    assert code == 4 and "incomplete" in out


def test_invariants_named_with_i_are_checked_first(capsys):
    code, out, _ = run(capsys, "check", "toyspecs:Counters", "-p", "limit=2", "-i", "x-below-limit",
                       "-l", "all")
    assert code == 2  # Counters declares no liveness properties
    code, out, _ = run(capsys, "check", "livenesstoys:Spinner", "-l", "all", "-i", "all")
    assert code == 1  # Spinner has no invariants, one-again-and-again fails


def test_written_lassos_replay(capsys, tmp_path):
    code, _, _ = run(capsys, "check", "livenesstoys:Flicker", "-l", "lamp-finishes", "--no-fairness",
                     "--fair", "toggle", "--fair", "finish", "--out", str(tmp_path))
    assert code == 1
    for name in ("flicker-lamp-finishes.trace.json", "flicker-lamp-finishes.itf.json"):
        code, out, _ = run(capsys, "trace", "replay", "--trust", str(tmp_path / name))
        assert code == 0 and out.splitlines()[-1] == "reproduced", out
        code, out, _ = run(capsys, "trace", "show", str(tmp_path / name))
        assert code == 0 and LOOP_MARK in out and "Toggle leads back to state 1" in out
    path = tmp_path / "flicker-lamp-finishes.trace.json"
    doc = json.loads(path.read_text())
    # Under strong fairness of finish the cycle is not fair: not reproduced.
    doc["fairness"] = {"weak": ["toggle"], "strong": ["finish"]}
    path.write_text(json.dumps(doc))
    code, out, _ = run(capsys, "trace", "replay", "--trust", str(path))
    assert code == 1 and "not strongly fair to finish" in out
    # A cycle that does not close: not reproduced.
    doc["fairness"] = {"weak": ["toggle"], "strong": []}
    doc["loop_action"] = "Toggle"
    doc["trace"] = doc["trace"][:1]
    doc["path"] = doc["path"][:1]
    path.write_text(json.dumps(doc))
    code, out, _ = run(capsys, "trace", "replay", "--trust", str(path))
    assert code == 1 and "no longer leads back to state 1" in out
    # A stuttering lasso whose last state has a fair action enabled: not reproduced.
    doc["loop_action"] = None
    path.write_text(json.dumps(doc))
    code, out, _ = run(capsys, "trace", "replay", "--trust", str(path))
    assert code == 1 and "not weakly fair to toggle" in out
    # A bad loop_start is a usage error.
    doc["loop_start"] = 7
    path.write_text(json.dumps(doc))
    code, _, err = run(capsys, "trace", "replay", "--trust", str(path))
    assert code == 2 and "loop_start" in err


def test_gate_liveness_checks(capsys, tmp_path):
    config = tmp_path / "kafkamc.toml"
    config.write_text(
        '[checks.fair]\nspec = "livenesstoys:Flicker"\nliveness = ["lamp-finishes"]\nexpect = "hold"\n\n'
        '[checks.weak-only]\nspec = "livenesstoys:Flicker"\nliveness = "all"\nno_fairness = true\n'
        'fair = ["toggle", "finish"]\nexpect = "violate"\nviolated = "lamp-finishes"\nmax_trace_length = 2\n'
    )
    code, out, _ = run(capsys, "gate", "--config", str(config))
    assert code == 0, out
    config.write_text('[checks.x]\nspec = "livenesstoys:Flicker"\nliveness = ["lamp-finishes"]\nsymmetry = true\n'
                      'expect = "hold"\n')
    code, _, err = run(capsys, "gate", "--config", str(config))
    assert code == 2 and "cannot be combined with liveness" in err
    config.write_text('[checks.x]\nspec = "livenesstoys:Flicker"\nliveness = ["lamp-finishes"]\nfair = ["nope"]\n'
                      'expect = "hold"\n')
    code, _, err = run(capsys, "gate", "--config", str(config))
    assert code == 2 and "'nope' is not an action" in err


def test_the_viewer_knows_the_cycle():
    from kafkamc.counterexamples.html import page_data, render_html

    r = check(Spinner(size=3), "finishes", no_fairness=True, fair=["spin"])
    data = page_data(result_to_json(r))
    assert data["loop_start"] == 0 and data["loop_action"] == "Spin(x=0)" and data["failing"] is None
    assert "the cycle starts here" in render_html(result_to_json(r))


def test_list_shows_liveness_properties(capsys):
    from kafkamc.cli.speclist import spec_catalogue

    controller = next(s for s in spec_catalogue() if s["name"] == "controller")
    assert "liveness" in controller and "fairness" in controller


def test_a_predicate_that_raises_is_exit_3(capsys):
    code, _, err = run(capsys, "check", "livenesstoys:BrokenLamp", "-l", "all")
    assert code == 3 and "predicate explodes raised ZeroDivisionError: boom" in err


# -- Kafka -----------------------------------------------------------------------------------------


def test_replication_follower_catches_up_only_under_fairness():
    from kafkamc.spec.replication import Replication

    spec = Replication(truncation="kip320")
    assert check(spec, "follower-catches-up").result == "ok"
    r = check(spec, "follower-catches-up", no_fairness=True)
    assert r.result == "violation" and r.trace.loop_action is None and r.trace.loop_start == len(r.trace) - 1
    # The model's follower never learns the last high watermark: it fetches only missing records.
    r = check(spec, "follower-learns-high-watermark")
    assert r.result == "violation" and r.trace.steps[-1].action.startswith("LeaderIncHighWatermark")


def test_controller_lasso_with_a_view_replays(capsys, tmp_path):
    # The controller fingerprints a view, so a lasso is rebuilt from concrete states.
    code, out, _ = run(capsys, "check", "controller", "-p", "brokers=2", "-p", "crashes=2", "-p", "expiries=0",
                       "-l", "controller-eventually-elected", "--no-fairness", "--fair", "elect",
                       "--fair", "controller_change", "--fair", "expire", "--fair", "handle_request",
                       "--out", str(tmp_path))
    assert code == 1 and "Crash(b1)" in out and "Crash(b2)" in out
    code, out, _ = run(capsys, "trace", "replay", str(tmp_path / "controller-controller-eventually-elected.itf.json"))
    assert code == 0 and out.splitlines()[-1] == "reproduced"
    code, out, _ = run(capsys, "check", "controller", "-p", "brokers=2", "-p", "crashes=2", "-p", "expiries=0",
                       "-l", "all")
    assert code == 0


def test_a_lasso_is_rebuilt_from_the_states_reached_under_a_view(capsys, tmp_path):
    from livenesstoys import Shuffled

    r = check(Shuffled(), "seven-leads-to-nine")
    assert r.result == "violation"
    xs = [s.state.x for s in r.trace.steps]
    assert xs == [0, 7, 1, 0] and r.trace.loop_start == 1 and r.trace.loop_action == "Alt"
    # Every step is a transition of the state actually reached: x = 1 is reached as (1, 1), which
    # lists Sink before Back, while the graph kept the successor indices of (1, 0).
    assert [s.action for s in r.trace.steps] == [None, "Alt", "Alt", "Back"]
    assert r.trace.steps[2].state == type(r.trace.steps[2].state)(1, 1) and r.trace.path == (0, 1, 0, 1)
    code, _, _ = run(capsys, "check", "livenesstoys:Shuffled", "-l", "all", "--out", str(tmp_path))
    assert code == 1
    code, out, _ = run(capsys, "trace", "replay", "--trust", str(tmp_path / "shuffled-seven-leads-to-nine.trace.json"))
    assert code == 0, out


def test_an_interrupted_search_is_incomplete(monkeypatch):
    import kafkamc.checker.liveness as lv

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(lv, "_find_lasso", interrupted)
    r = check(Spinner(), "finishes")
    assert r.result == "incomplete" and r.reason == "interrupted"


def test_gate_says_fair_behaviour_when_a_liveness_bug_is_no_longer_found(capsys, tmp_path):
    config = tmp_path / "kafkamc.toml"
    config.write_text('[checks.x]\nspec = "livenesstoys:Flicker"\nliveness = ["lamp-finishes"]\nexpect = "violate"\n')
    code, out, _ = run(capsys, "gate", "--config", str(config))
    assert code == 1 and "every fair behaviour satisfies lamp-finishes" in out


@pytest.mark.parametrize("where", ["_fair_parts", "_enabled_masks"])
def test_a_stop_is_reported_with_its_reason_and_taken(monkeypatch, where):
    # SIGTERM was reported as "interrupted", and the stop, never taken, came again half a second
    # after the result was returned.
    import kafkamc.checker.liveness as liveness
    from kafkamc.checker import watch

    def stopped(*args, **kwargs):
        stop = watch.Stopped("terminated")
        watch._unhonoured[:] = [stop]
        raise stop

    monkeypatch.setattr(liveness, where, stopped)
    r = check(Spinner(size=3), "finishes")
    assert r.result == "incomplete" and r.reason == "terminated"
    assert watch._unhonoured == []
