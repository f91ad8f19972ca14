"""Skeleton formulas (``kafkamc.prover.skeleton``): a target's formula computed once per skeleton and
substituted must say exactly what the target says of the successor, inside the domain."""

from __future__ import annotations

import dataclasses
import os
import sys
from dataclasses import dataclass

import pytest
import z3

from kafkamc.checker.symbolic import Budget, Explorer, SymBool, SymInt, build, fixed, guarded, shapes
from kafkamc.invariants.api import Property
from kafkamc.prover import CTI_FOUND, PROVED, prove
from kafkamc.prover.query import Job, run_query, symbolic_params
from kafkamc.prover.result import TYPE_OK
from kafkamc.prover.skeleton import Skeletons, abstract
from kafkamc.spec.api import action
from kafkamc.spec.controller import Controller, Session

sys.path.insert(0, os.path.dirname(__file__))
import provespecs as ps  # noqa: E402


@dataclass(frozen=True, slots=True)
class Pair:
    a: int
    b: tuple[int, ...]
    tag: str


def test_same_structure_same_key_whatever_the_terms():
    x, y = SymInt(z3.Int("x")), SymInt(z3.Int("y"))
    k1, t1 = abstract(Pair(x, (1, y), "t"))
    k2, t2 = abstract(Pair(y + 1, (x, 3), "t"))
    assert k1 == k2 and len(t1) == len(t2) == 3
    assert [str(t) for t in t1] == ["x", "1", "y"]
    # Other constants, lengths, and the types of leaves are part of the key.
    assert abstract(Pair(x, (1, y), "u"))[0] != k1
    assert abstract(Pair(x, (1,), "t"))[0] != k1
    assert abstract(Pair(x, (True, y), "t"))[0] != k1
    assert abstract(Pair(Session.LIVE, (1, y), "t"))[0] != k1
    assert abstract(Pair(x, (1, SymBool(z3.Bool("c"))), "t"))[0] != k1


def test_shared_subtrees_are_part_of_the_key():
    t = (1, 2)
    shared = abstract(Pair(0, t, ""), Pair(0, t, ""))[0]
    copied = abstract(Pair(0, t, ""), Pair(0, tuple([1, 2]), ""))[0]
    assert shared != copied


def _equivalent_on_every_successor(spec, action_name, props, which=slice(None)):
    """For every successor on every path of the action (over the whole domain, no invariant
    assumed): in the domain, the substituted skeleton formula of each property is equivalent to
    its formula on the real successor. Returns the number of (successor, property) pairs asked."""
    cls = type(spec)
    lifted = tuple(prm.name for prm in cls.parameters if prm.lift)
    p, facts, _ = symbolic_params(spec, lifted)
    solver = z3.Solver()
    solver.add(facts)
    assert solver.check() == z3.sat
    budget = Budget(deadline=float("inf"), max_paths=10**7)
    ex = Explorer(solver, solver.model(), budget, formatting_allowed=True)
    dom = cls.domain(p)
    skeletons = Skeletons(p, facts, dom)
    act = next(a for a in cls.actions() if a.name == action_name)
    asked = 0
    for shape in shapes(dom)[which]:
        shape_facts: list = []
        pre = build(dom, "s", fixed(shape), shape_facts)
        solver.push()
        solver.add(shape_facts)
        ex.model = ex.model_of(z3.BoolVal(True))
        ex.rebase()

        def body():
            nonlocal asked
            for label, post in act.fn(p, pre):
                if not ex.fresh():
                    continue
                sk = skeletons.of(pre, post)
                assert sk is not None
                inside = sk.instantiate(sk.in_domain)
                for prop in props:
                    over_template = sk.formula(prop.fn, prop.kind, budget)
                    assert over_template is not None, prop.name
                    mine = sk.instantiate(over_template)
                    args = (p, post) if prop.kind == "invariant" else (p, pre, "", post)
                    direct = ex.formula(prop.fn, *args)
                    assert ex.model_of(z3.And(inside, z3.Xor(mine, direct))) is None, (prop.name, label)
                    asked += 1

        with guarded():
            for _ in ex.paths(body):
                pass
        solver.pop()
    return asked


# Shapes of brokers=2: 3 ISR subsets x bag lengths 0, 1, 2; the last ones have requests in flight.
@pytest.mark.parametrize("action_name, which", [("elect", slice(0, 4)), ("crash", slice(0, 4)),
                                                ("handle_request", slice(-1, None)),
                                                ("send_leader_and_isr", slice(-2, -1))])
def test_controller_skeleton_formulas_equal_the_direct_ones(action_name, which):
    spec = Controller(brokers=2)
    props = [pr for pr in Controller.properties() if pr.kind in ("invariant", "action")]
    assert _equivalent_on_every_successor(spec, action_name, props, which) > 0


def test_indexed_spec_skeleton_formulas_equal_the_direct_ones():
    spec = ps.Indexed(n=3)
    assert _equivalent_on_every_successor(spec, "claim", spec.properties()) > 0


def _verdicts(spec, action, names, skeletons):
    props = tuple(spec.property_named(n) for n in names)
    lifted = tuple(prm.name for prm in type(spec).parameters if prm.lift)
    queries, ctis = run_query(spec, Job(action, tuple(names) + (TYPE_OK,)), props, lifted, 600, 10**6,
                              skeletons=skeletons)
    # Paths are not compared: a formula over a template may take other paths than on the successor.
    return [(q.invariant, q.verdict) for q in queries], [(c.target, c.pre, c.post) for c in ctis]


@pytest.mark.parametrize("action, names", [
    ("elect", ("single-controller-per-epoch",)),  # a CTI: epochs ahead of /controller_epoch
    ("elect", ("single-controller-per-epoch", "controller-epochs-not-ahead", "controller-epoch-monotonic")),
    ("expire", ("live-controller-owns-znode", "down-brokers-forget", "bounded-events-counted")),
])
def test_same_verdicts_and_counterexamples_with_and_without_skeletons(action, names):
    spec = Controller(brokers=2)
    assert _verdicts(spec, action, names, True) == _verdicts(spec, action, names, False)


def _elect_without_bump(p, s):
    """``elect`` broken: the new controller takes the current epoch instead of a new one."""
    for label, t in Controller.elect(p, s):
        i = t.controller
        nb = dataclasses.replace(t.brokers[i - 1], epoch=s.controller_epoch,
                                 epoch_zk_version=s.controller_epoch_zk_version)
        yield label, dataclasses.replace(t, controller_epoch=s.controller_epoch,
                                         controller_epoch_zk_version=s.controller_epoch_zk_version,
                                         brokers=t.brokers[:i - 1] + (nb,) + t.brokers[i:])


class ElectWithoutBump(Controller):
    name = "controller-elect-without-bump"
    elect = action(_elect_without_bump)


def test_a_broken_action_still_gives_a_counterexample():
    spec = ElectWithoutBump(brokers=2)
    names = ("single-controller-per-epoch", "controller-epochs-not-ahead", "controller-znode-owner-is-current",
             "live-controller-owns-znode", "down-brokers-forget", "controller-context-epoch-in-step",
             "controller-epoch-zk-version-in-step", "elections-need-session-loss")
    with_skeletons = _verdicts(spec, "elect", names, True)
    assert with_skeletons == _verdicts(spec, "elect", names, False)
    broken = {n for n, v in with_skeletons[0] if v == CTI_FOUND}
    assert "single-controller-per-epoch" in broken


def test_a_false_invariant_still_gives_a_counterexample():
    spec = Controller(brokers=2)
    false = Property("at-most-one-election", "false: the epoch stays below 2", "invariant",
                     lambda p, s: s.controller_epoch <= 1)
    props = [pr for pr in Controller.properties() if pr.kind in ("invariant", "action")] + [false]
    lifted = tuple(prm.name for prm in Controller.parameters if prm.lift)
    queries, ctis = run_query(spec, Job("elect", tuple(pr.name for pr in props) + (TYPE_OK,)), tuple(props),
                              lifted, 600, 10**6)
    verdicts = {q.invariant: q.verdict for q in queries}
    assert verdicts["at-most-one-election"] == CTI_FOUND and ctis[0].post.controller_epoch == 2
    assert {v for n, v in verdicts.items() if n != "at-most-one-election"} == {PROVED}


def test_prove_lagging_unchanged():
    spec = ps.Lagging()
    assert prove(spec, spec.properties(), workers=1).result == PROVED
