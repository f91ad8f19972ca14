"""``prove``: inductive invariants over the spec's own functions, and the symbolic executor under it."""

from __future__ import annotations

import os
import sys

import pytest
import z3

from kafkamc.checker.local import explore
from kafkamc.checker.symbolic import Budget, Explorer, SymInt
from kafkamc.errors import SymbolicUnsupported, UsageError
from kafkamc.invariants.api import Property
from kafkamc.prover import CTI_FOUND, INIT, PROVED, TYPE_OK, prove
from kafkamc.prover.query import Job, run_query
from kafkamc.spec.controller import Controller
from kafkamc.spec.domain import contains

sys.path.insert(0, os.path.dirname(__file__))
import provespecs as ps  # noqa: E402

# Whole-spec controller proofs take minutes on 2 cores: run with KAFKAMC_SLOW_TESTS=1.
slow = pytest.mark.skipif(not os.environ.get("KAFKAMC_SLOW_TESTS"), reason="slow: set KAFKAMC_SLOW_TESTS=1")

CONTROLLER_AUX = (
    "controller-epoch-zk-version-in-step", "controller-context-epoch-in-step", "controller-epochs-not-ahead",
    "controller-znode-owner-is-current", "down-brokers-forget", "bounded-events-counted",
    "requests-only-to-running-brokers", "live-controller-owns-znode", "partition-epoch-in-step",
    "elections-need-session-loss",
)
# The four fencing properties of the proof (until issue 15 they were the spec's defaults).
CONTROLLER_DEFAULTS = ("single-controller-per-epoch", "controller-epoch-monotonic", "no-stale-request-applied",
                       "zk-writes-fenced")


def _props(spec, names):
    return [spec.property_named(n) for n in names]


def _assert_cti_is_concrete(spec, result):
    """Independently of the prover's own replay: pre satisfies every invariant, the action yields
    post with the label, and post breaks the reported one."""
    cti = result.cti
    p = type(spec)(**{**spec.p.as_dict(), **cti.lifted_values}).p
    names = result.invariants
    props = {pr.name: pr for pr in type(spec).properties()}
    if cti.action == INIT:
        assert cti.post in list(type(spec).init_states(p))
    else:
        assert contains(type(spec).domain(p), cti.pre)
        for n in names:
            if props[n].kind == "invariant":
                assert props[n].fn(p, cti.pre), n
        act = next(a for a in type(spec).actions() if a.name == cti.action)
        assert any(t == cti.post and (lab == cti.label or not isinstance(lab, str)) for lab, t in act.fn(p, cti.pre))
    prop = props[cti.violated]
    if prop.kind == "invariant":
        assert not prop.fn(p, cti.post)
    else:
        assert not prop.fn(p, cti.pre, cti.label, cti.post)


# -- proofs that must fail ---------------------------------------------------------------------

def test_counter_misbehaving_at_1000_passes_check_but_not_prove():
    spec = ps.Counter1000()
    assert explore(spec, spec.properties()).result == "ok"
    result = prove(spec, spec.properties(), workers=1)
    assert result.result == CTI_FOUND and result.lifted == ("bound",)
    cti = result.cti
    assert (cti.pre.n, cti.post.n, cti.violated) == (1000, -1, "count-non-negative")
    _assert_cti_is_concrete(spec, result)
    # The counterexample is real: with bound = 1001 (the CTI's value) it is reached from n = 0.
    assert cti.reachable and len(cti.trace) == 1002
    assert cti.trace.steps[-1].state == cti.post and cti.trace.steps[-2].state == cti.pre


def test_counter_with_its_bound_concrete_is_proved():
    spec = ps.Counter1000()
    result = prove(spec, spec.properties(), lifted=(), workers=1)
    assert result.result == PROVED and result.lifted == ()
    assert {(q.action, q.invariant) for q in result.queries} == {
        (INIT, "count-non-negative"), (INIT, TYPE_OK), ("inc", "count-non-negative"),
        ("inc", "count-never-decreases"), ("inc", TYPE_OK)}


def test_not_inductive_alone_then_strengthened():
    spec = ps.Lagging()
    weak = prove(spec, _props(spec, ["y-non-negative"]), workers=1)
    assert weak.result == CTI_FOUND and weak.cti.violated == "y-non-negative"
    assert weak.cti.pre.x < 0 and weak.cti.reachable is False  # unreachable: strengthen
    _assert_cti_is_concrete(spec, weak)
    strong = prove(spec, _props(spec, ["y-non-negative", "x-non-negative"]), workers=1)
    assert strong.result == PROVED


def test_same_result_on_every_run_and_any_worker_count():
    spec = ps.Lagging()
    a = prove(spec, _props(spec, ["y-non-negative"]), workers=1)
    b = prove(spec, _props(spec, ["y-non-negative"]), workers=2)
    assert (a.cti.pre, a.cti.post, a.cti.label) == (b.cti.pre, b.cti.post, b.cti.label)
    assert [(q.action, q.invariant, q.verdict, q.paths) for q in a.queries] == \
        [(q.action, q.invariant, q.verdict, q.paths) for q in b.queries]


def test_symbolic_indices_enumerate_exactly():
    spec = ps.Indexed(n=2)
    assert prove(spec, spec.properties(), workers=1).result == PROVED


def test_a_domain_too_narrow_is_reported_not_assumed():
    class Narrow(ps.Counter1000):
        name = "narrow"

        def domain(p):
            from kafkamc.spec import domain as d
            return d.Record(ps.Count, n=d.Int(0, 3))  # misses n = 4 .. bound

    spec = Narrow(bound=5)
    result = prove(spec, _props(spec, ["count-non-negative"]), lifted=(), workers=1)
    assert result.result == CTI_FOUND and result.cti.violated == TYPE_OK and result.cti.post.n == 4


# -- what cannot run symbolically is an error naming it ------------------------------------------

@pytest.mark.parametrize("cls, construct", [
    (ps.HashSpec, "hash() of a symbolic value"),
    (ps.IntSpec, "int() of a symbolic value"),
    (ps.DictKeySpec, "hash() of a symbolic value"),
    (ps.GlobalSpec, "mutable global '_SEEN'"),
    (ps.RandomSpec, "random.randint"),
    (ps.RangeSpec, "more than 64 possible values"),
])
def test_unsupported_constructs_are_named_with_function_and_line(cls, construct):
    with pytest.raises(SymbolicUnsupported) as err:
        prove(cls(), cls.properties(), workers=1)
    message = str(err.value)
    assert construct in message and "provespecs.py:" in message
    assert SymbolicUnsupported.exit_code == 3


def test_spec_without_domain_or_bad_lift_is_refused():
    from kafkamc import Param

    class NoDomain(ps.Counter1000):
        name = "no-domain"
        domain = None

    with pytest.raises(UsageError, match="domain"):
        prove(NoDomain(), NoDomain.properties(), workers=1)
    with pytest.raises(ValueError, match="lifted"):
        Param("fencing", "on", "a string cannot be lifted", lift=True)


def test_usage_errors():
    spec = ps.Counter1000()
    with pytest.raises(UsageError):
        prove(spec, spec.properties(), lifted=("nope",))
    with pytest.raises(UsageError):
        prove(spec, [])


# -- the executor on its own -----------------------------------------------------------------

def _paths(fn, *facts):
    solver = z3.Solver()
    solver.add(*facts)
    assert solver.check() == z3.sat
    ex = Explorer(solver, solver.model(), Budget(deadline=float("inf")), formatting_allowed=True)
    return list(ex.paths(fn))


def test_branches_fork_and_infeasible_ones_are_pruned():
    x = SymInt(z3.Int("x"))
    outs = _paths(lambda: "big" if x > 10 else ("neg" if x < 0 else "small"), z3.Int("x") >= 0)
    assert sorted(v for _, v in outs) == ["big", "small"]


def test_index_enumerates_every_feasible_value_in_order():
    i = SymInt(z3.Int("i"))
    xs = ("a", "b", "c", "d")
    outs = _paths(lambda: xs[i - 1], z3.Int("i") >= 2, z3.Int("i") <= 4)
    assert [v for _, v in outs] == ["b", "c", "d"]


def test_labels_format_lazily_but_invariants_may_not_format():
    x = SymInt(z3.Int("x"))
    outs = _paths(lambda: f"Step(x={x})")
    assert len(outs) == 1 and "x=" in outs[0][1]
    solver = z3.Solver()
    solver.check()
    ex = Explorer(solver, solver.model(), Budget(deadline=float("inf")), formatting_allowed=False)
    with pytest.raises(SymbolicUnsupported, match="format"):
        list(ex.paths(lambda: str(x)))


def test_a_stop_that_ctypes_wrapped_ends_the_run_and_is_not_a_spec_error():
    """Z3 is called through ctypes, which wraps an exception raised while it converts an argument
    in ArgumentError. A SIGTERM that lands there must end the run, not be reported as the spec
    raising on a symbolic state (CI saw exit 3 instead of 4 this way)."""
    import ctypes
    import signal

    from kafkamc.checker.watch import Stopped, termination_signals

    class SignalledArg:
        @classmethod
        def from_param(cls, value):
            signal.raise_signal(signal.SIGTERM)
            return ctypes.c_int(value)

    c_abs = ctypes.CDLL(None).abs
    c_abs.argtypes = [SignalledArg]
    x = SymInt(z3.Int("x"))
    with termination_signals():
        with pytest.raises(Stopped):
            _paths(lambda: c_abs(1) if x > 0 else 0)


def test_python_floor_division_semantics():
    x = SymInt(z3.Int("x"))
    outs = _paths(lambda: bool((x // 2 == -2) and (x % 2 == 1)), z3.Int("x") == -3)
    assert [v for _, v in outs] == [True]


# -- controller ----------------------------------------------------------------------------

def test_controller_domain_contains_every_reachable_state():
    spec = Controller(crashes=1, brokers=2, elections=2)
    dom = Controller.domain(spec.p)
    prop = Property("in-domain", "every reachable state is in the domain", "invariant",
                    lambda p, s: contains(dom, s))
    assert explore(spec, [prop]).result == "ok"


def test_controller_auxiliary_invariants_hold_under_check():
    for params in ({"brokers": 2, "elections": 3, "crashes": 1}, {"fencing": "epoch", "brokers": 2}):
        spec = Controller(**params)
        assert explore(spec, _props(spec, CONTROLLER_AUX)).result == "ok", params


def test_controller_elect_needs_epochs_not_ahead():
    spec = Controller(brokers=2)
    lifted = tuple(p.name for p in Controller.parameters if p.lift)
    weak = _props(spec, ["single-controller-per-epoch"])
    queries, ctis = run_query(spec, Job("elect", ("single-controller-per-epoch",)), tuple(weak), lifted, 60, 10_000)
    assert queries[0].verdict == CTI_FOUND and ctis[0].pre.brokers[1].epoch > ctis[0].pre.controller_epoch
    strong = tuple(_props(spec, ["single-controller-per-epoch", "controller-epochs-not-ahead"]))
    queries, ctis = run_query(spec, Job("elect", ("single-controller-per-epoch",)), strong, lifted, 60, 10_000)
    assert queries[0].verdict == PROVED and not ctis


@slow
@pytest.mark.parametrize("brokers", [2, 3])
def test_controller_zkversion_defaults_proved_for_every_bound(brokers):
    spec = Controller(brokers=brokers)
    result = prove(spec, _props(spec, CONTROLLER_DEFAULTS + CONTROLLER_AUX))
    assert result.result == PROVED, [q for q in result.queries if q.verdict != PROVED]
    assert set(result.lifted) == {"elections", "expiries", "crashes", "leader_epochs", "requests"}


@slow
def test_controller_epoch_fencing_gives_reachable_zombie_cti():
    spec = Controller(fencing="epoch", brokers=2)
    result = prove(spec, _props(spec, ("zk-writes-fenced",) + CONTROLLER_AUX))
    assert result.result == CTI_FOUND and result.cti.violated == "zk-writes-fenced"
    assert result.cti.action == "elect_leader" and result.cti.reachable
    _assert_cti_is_concrete(spec, result)


# -- the command line ------------------------------------------------------------------------

def test_cli_exit_codes_and_json(capsys, tmp_path):
    import json

    from kafkamc.cli import main

    assert main(["prove", "provespecs:Lagging", "-i", "y-non-negative", "-i", "x-non-negative", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["result"] == "proved" and doc["lifted"] == ["bound"] and doc["cti"] is None
    assert {q["verdict"] for q in doc["queries"]} == {"proved"}
    assert main(["prove", "provespecs:Lagging", "-i", "y-non-negative", "--json", "--out", str(tmp_path)]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["result"] == "cti" and doc["cti"]["reachable"] is False and doc["cti"]["violated"] == "y-non-negative"
    assert doc["cti"]["pre"]["x"] < 0 and doc["cti"]["action"] == "Step"
    assert (tmp_path / "lagging.prove.json").exists()
    # A bound given with -p stays concrete: the proof is then for that value only.
    assert main(["prove", "provespecs:Counter1000", "-p", "bound=5", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["lifted"] == []
    assert main(["prove", "provespecs:IntSpec"]) == 3
    assert "int() of a symbolic value" in capsys.readouterr().err
    assert main(["prove", "provespecs:Lagging", "-i", "nope"]) == 2
    assert main(["prove", "provespecs:Lagging", "-i", "y-non-negative", "--timeout", "0.000001"]) == 4
    assert "unknown" in capsys.readouterr().out


def test_sigterm_during_symbolic_execution_ends_the_proof_as_terminated():
    """The engines' signal handler runs inside the frame it interrupts; the guard against global
    reads must not mistake it for spec code (it once reported a read of its bookkeeping)."""
    import signal
    import subprocess
    import time

    proc = subprocess.Popen(
        [sys.executable, "-m", "kafkamc", "prove", "controller", "-p", "brokers=2", "-i", "single-controller-per-epoch",
         "--workers", "1"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(4)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 4, (out, err)
    assert "cannot execute symbolically" not in err and "terminated" in err
