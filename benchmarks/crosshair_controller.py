"""CrossHair on the same questions ``kafkamc prove`` answers, for docs/prove.md's comparison.

Each function below states, as a CrossHair contract, that one controller action preserves one
invariant for every 2-broker state satisfying a small TypeOK plus the auxiliary invariants prove
uses, with the partition's ISR and the in-flight bag empty or fixed (CrossHair cannot keep those
shapes concrete for us). Run::

    crosshair check --analysis_kind=PEP316 --per_condition_timeout=200 benchmarks/crosshair_controller.py

``confirmed`` means CrossHair exhausted every path; otherwise it reports nothing (unknown) or a
counterexample. The functions run the spec's real actions and invariants; nothing is re-encoded.
"""

from __future__ import annotations

from kafkamc.invariants import controller as inv
from kafkamc.spec.api import Params
from kafkamc.spec.controller import Broker, Controller, ControllerState, PartitionState, Session

P = Params({"fencing": "zkversion", "election": "multi", "broker_epoch": True, "controlled_shutdown": False,
            "leader_isr_write": False, "isr_write_recheck": True, "brokers": 2, "elections": 1000, "expiries": 1000,
            "crashes": 1000, "leader_epochs": 1000, "requests": 1000, "in_flight": 2, "isr_changes": 1})
AUX = (inv.single_controller_per_epoch, inv.controller_epoch_zk_version_in_step,
       inv.controller_context_epoch_in_step, inv.controller_epochs_not_ahead,
       inv.controller_znode_owner_is_current, inv.down_brokers_forget, inv.bounded_events_counted,
       inv.requests_only_to_running_brokers, inv.zk_writes_fenced)


def _state(controller: int, ce: int, b1: tuple, b2: tuple, leader: int, le: int, pce: int) -> ControllerState:
    # The fields of controlled_shutdown and leader_isr_write (both off) at their initial values.
    brokers = tuple(Broker(up, Session(sess), act, ep, ep, cle, seen, ble, False, False, 0, (), 0, 0, (), 0)
                    for up, sess, act, ep, cle, seen, ble in (b1, b2))
    return ControllerState(controller, ce, ce, PartitionState(leader, le, (1, 2), pce, le), brokers, (), 0, 0, 0,
                           False, False)


def _typeok(controller: int, ce: int, b: tuple, leader: int, le: int, pce: int) -> bool:
    up, sess, act, ep, cle, seen, ble = b
    return (0 <= controller <= 2 and 0 <= ce and 0 <= leader <= 2 and 0 <= le and 0 <= pce and sess in (0, 1, 2)
            and 0 <= act <= 2 and 0 <= ep and 0 <= cle and 0 <= seen and 0 <= ble)


def _holds(s: ControllerState) -> bool:
    return all(f(P, s) for f in AUX)


def elect_keeps_single_controller(controller: int, ce: int, u1: bool, s1: int, a1: int, e1: int, c1: int, n1: int,
                                  l1: int, u2: bool, s2: int, a2: int, e2: int, c2: int, n2: int, l2: int,
                                  leader: int, le: int, pce: int) -> bool:
    """
    pre: _typeok(controller, ce, (u1, s1, a1, e1, c1, n1, l1), leader, le, pce)
    pre: _typeok(controller, ce, (u2, s2, a2, e2, c2, n2, l2), leader, le, pce)
    pre: _holds(_state(controller, ce, (u1, s1, a1, e1, c1, n1, l1), (u2, s2, a2, e2, c2, n2, l2), leader, le, pce))
    post: __return__
    """
    s = _state(controller, ce, (u1, s1, a1, e1, c1, n1, l1), (u2, s2, a2, e2, c2, n2, l2), leader, le, pce)
    return all(inv.single_controller_per_epoch(P, t) for _, t in Controller.elect(P, s))


def elect_leader_keeps_fenced_writes(controller: int, ce: int, u1: bool, s1: int, a1: int, e1: int, c1: int,
                                     n1: int, l1: int, u2: bool, s2: int, a2: int, e2: int, c2: int, n2: int,
                                     l2: int, leader: int, le: int, pce: int) -> bool:
    """
    pre: _typeok(controller, ce, (u1, s1, a1, e1, c1, n1, l1), leader, le, pce)
    pre: _typeok(controller, ce, (u2, s2, a2, e2, c2, n2, l2), leader, le, pce)
    pre: _holds(_state(controller, ce, (u1, s1, a1, e1, c1, n1, l1), (u2, s2, a2, e2, c2, n2, l2), leader, le, pce))
    post: __return__
    """
    s = _state(controller, ce, (u1, s1, a1, e1, c1, n1, l1), (u2, s2, a2, e2, c2, n2, l2), leader, le, pce)
    return all(inv.zk_writes_fenced(P, t) for _, t in Controller.elect_leader(P, s))
