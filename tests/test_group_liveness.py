"""group-eventually-stable under fairness: KAFKA-12890's stuck CompletingRebalance and its fix."""

from __future__ import annotations

import json

from kafkamc.checker.graph import check_recoverability
from kafkamc.checker.liveness import check_liveness, judge_lasso, resolve_fairness
from kafkamc.checker.local import explore
from kafkamc.cli.main import main
from kafkamc.invariants.api import invariant, property_of
from kafkamc.invariants.group import group_settled, rebalance_in_progress
from kafkamc.invariants.recoverability import group_can_stabilise
from kafkamc.invariants.temporal import formula_of
from kafkamc.spec.group import ClientState, Group, GroupState

SMALL = dict(records=0, max_generation=2, sync_hangs=True)
NAME = "group-eventually-stable"


@invariant("nobody-hangs", "no consumer is hung before SyncGroup")
def nobody_hangs(p, s) -> bool:
    return not any(c.hung for c in s.clients)


def check(spec, **fairness):
    fair = resolve_fairness(Group, **fairness)
    return check_liveness(spec, (), [Group.liveness_named(NAME)], fair)


def states_of(r):
    return [s.state for s in r.trace.steps]


def test_defaults_are_kafka_with_the_fix_and_no_hangs():
    spec = Group()
    assert spec.p.pending_sync_timeout is True and spec.p.sync_hangs is False
    helps = {p.name: p.help for p in Group.parameters}
    assert "KAFKA-12890" in helps["pending_sync_timeout"] and "KAFKA-12890" in helps["sync_hangs"]
    assert "KAFKA-12890" in Group.pending_sync_expiry.__doc__
    assert "KAFKA-12890" in Group.hang_before_sync.__doc__
    # Without sync_hangs no consumer ever hangs; with it, some do.
    assert explore(Group(records=0, max_generation=2), [property_of(nobody_hangs)]).result == "ok"
    assert explore(Group(**SMALL), [property_of(nobody_hangs)]).result == "violation"


def test_the_fair_actions_are_actions_of_the_spec():
    names = {a.name for a in Group.actions()}
    assert set(Group.weak_fairness) <= names
    # Failures and the application's own pace are never forced.
    for unfair in ("leave_group", "stall", "hang_before_sync", "delete_group", "process", "offset_commit"):
        assert unfair not in Group.weak_fairness and unfair not in Group.strong_fairness


def test_with_the_fix_the_group_eventually_settles():
    spec = Group(**SMALL)
    r = check(spec)
    assert r.result == "ok", r.trace
    # The liveness graph holds every reachable state: as many as a safety run of the same model.
    assert r.distinct_states == explore(spec, ()).distinct_states


def test_kafka_12890_without_the_fix_the_group_stays_in_completing_rebalance():
    spec = Group(pending_sync_timeout=False, **SMALL)
    r = check(spec)
    assert r.result == "violation" and r.violated == NAME
    states = states_of(r)
    cycle = states[r.trace.loop_start:]
    # The behaviour stops in CompletingRebalance: the leader never syncs, its heartbeats keep it.
    assert r.trace.loop_action is None and len(cycle) == 1
    stuck = cycle[0]
    assert stuck.group == GroupState.COMPLETING_REBALANCE
    leader = next(c for c in stuck.clients if c.member_id == stuck.leader)
    assert leader.hung and not leader.stalled and leader.state == ClientState.COMPLETING_REBALANCE
    assert r.trace.steps[-1].action.startswith("HangBeforeSync")
    assert any(rebalance_in_progress(spec.p, s) for s in states)
    assert not any(group_settled(spec.p, s) for s in states)
    # No session expires there (the heartbeat thread runs) and no fair action is enabled.
    assert list(Group.session_expiry(spec.p, stuck)) == []
    assert list(Group.pending_sync_expiry(spec.p, stuck)) == []
    names = ["join_group", "join_group", "complete_join", "hang_before_sync"]
    labels = [s.action for s in r.trace.steps[1:]]
    assert [x.split("(")[0] for x in labels] == ["JoinGroup", "JoinGroup", "CompleteJoin", "HangBeforeSync"]
    formula = formula_of(Group.liveness_named(NAME))
    assert judge_lasso(spec, formula, resolve_fairness(Group), states, names, r.trace.loop_start, None) == []


def test_the_hang_alone_is_harmless_and_the_bug_alone_is_silent():
    # Before the fix but without a hang, every member syncs: the group settles.
    assert check(Group(records=0, max_generation=2, pending_sync_timeout=False)).result == "ok"


def test_the_fix_needs_its_timer_to_fire():
    fair = [a for a in Group.weak_fairness if a != "pending_sync_expiry"]
    r = check(Group(**SMALL), no_fairness=True, fair=fair)
    assert r.result == "violation"
    assert states_of(r)[-1].group == GroupState.COMPLETING_REBALANCE


def test_without_fairness_the_behaviour_may_stop_at_once():
    r = check(Group(**SMALL), no_fairness=True)
    assert r.result == "violation" and len(r.trace) == 2 and r.trace.loop_action is None
    assert states_of(r)[-1].group == GroupState.PREPARING_REBALANCE


def test_cli_json_lasso_replays(capsys, tmp_path):
    argv = ["check", "group", "-l", NAME, "--json", "--out", str(tmp_path)]
    for k, v in dict(SMALL, pending_sync_timeout=False).items():
        argv += ["-p", f"{k}={str(v).lower()}"]
    code = main(argv)
    out = json.loads(capsys.readouterr().out)
    assert code == 1 and out["result"] == "violation" and out["loop_start"] == 4 and out["loop_action"] is None
    # trace replay re-checks every transition, the fairness of the cycle and the property.
    code = main(["trace", "replay", str(tmp_path / f"group-{NAME}.itf.json")])
    replayed = capsys.readouterr().out
    assert code == 0 and replayed.splitlines()[-1] == "reproduced", replayed


def test_recoverability_sees_kafka_12890_only_when_every_consumer_hangs():
    # AG EF good: from a state with one hung leader the group can still settle (the other consumer
    # may leave, after which the rebalance timeout drops the hung member); only when both hang
    # is nothing left that could move. Liveness under fairness is what finds the single hang.
    rec = [property_of(group_can_stabilise)]
    assert check_recoverability(Group(**SMALL), (), rec).result == "ok"
    r = check_recoverability(Group(pending_sync_timeout=False, **SMALL), (), rec)
    assert r.result == "violation" and r.violated == "group-can-stabilise"
    assert [s.action.split("(")[0] for s in r.trace.steps[-2:]] == ["HangBeforeSync", "HangBeforeSync"]


def test_kafka_9801_never_settles_and_its_fix_does():
    static = dict(consumers=1, static=1, records=0)
    assert check(Group(**static)).result == "ok"
    r = check(Group(static_rejoin="replace-2.4", **static))
    assert r.result == "violation" and r.trace.loop_action is None
    stuck = states_of(r)[-1]
    assert stuck.group == GroupState.STABLE and all(not m.assignment for m in stuck.members)
