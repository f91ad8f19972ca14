"""Liveness properties of the bundled specs, checked under fairness with ``kafkamc check -l NAME``.

Each property combines state predicates with one of the temporal forms of
``kafkamc.invariants.temporal``. As in ``recoverability``, the predicates read only fields of the
specs' state classes and import nothing from the spec modules, and a state in which a bound of the
model is spent (the step that would make progress is the one the bound forbids) counts as
progress, and the docstring says so: the property then claims that nothing but the bound stops it.

What each spec assumes fair is declared on the spec class (``weak_fairness``, ``strong_fairness``)
with the reason beside it.
"""

from __future__ import annotations

from kafkamc.invariants.recoverability import controller_can_recover
from kafkamc.invariants.temporal import eventually_always, leads_to, liveness

__all__ = ["controller_eventually_elected", "follower_catches_up", "follower_learns_high_watermark"]


def controller_working(p, s) -> bool:
    """``controller``: /controller is held by a live broker acting as controller with the current
    epoch, or the bound on elections is spent: the good states of ``controller-can-recover``."""
    return controller_can_recover(p, s)


@liveness(
    "controller-eventually-elected",
    "once failures stop, a working controller is eventually elected and stays (<>[] a live broker holds "
    "/controller and acts on the current epoch)",
)
def controller_eventually_elected():
    """Failures (session expiries, crashes) are bounded in the model, so every behaviour has a last
    failure; the property claims a working controller from some point on, forever."""
    return eventually_always(controller_working)


def _isr_followers(s):
    """(leader, [live ISR followers that follow it in its current leader epoch]), or (0, [])."""
    ld = s.quorum_leader
    if not ld or (s.down and ld in s.down):
        return 0, []
    leader, epoch, isr = s.replica_state[ld - 1]
    if leader != ld:
        return 0, []
    out = []
    for r in sorted(isr):
        if r != ld and not (s.down and r in s.down):
            st = s.replica_state[r - 1]
            if st[0] == ld and st[1] == epoch:
                out.append(r)
    return ld, out


def follower_log_behind(p, s) -> bool:
    """``replication``: a live follower in the leader's ISR, following it in its current epoch, has
    fewer records than the leader."""
    ld, followers = _isr_followers(s)
    return any(len(s.logs[r - 1]) < len(s.logs[ld - 1]) for r in followers)


def follower_logs_caught_up(p, s) -> bool:
    return not follower_log_behind(p, s)


def follower_hw_behind(p, s) -> bool:
    """``replication``: a live follower in the leader's ISR, following it in its current epoch, has
    a high watermark below the leader's."""
    ld, followers = _isr_followers(s)
    return any(s.hw[r - 1] < s.hw[ld - 1] for r in followers)


def follower_hws_caught_up(p, s) -> bool:
    return not follower_hw_behind(p, s)


@liveness(
    "follower-catches-up",
    "a follower in the ISR that has fewer records than its leader eventually has them all (or leaves the ISR, "
    "or the leadership moves on)",
)
def follower_catches_up():
    return leads_to(follower_log_behind, follower_logs_caught_up)


@liveness(
    "follower-learns-high-watermark",
    "a follower in the ISR whose high watermark is below its leader's eventually catches up to the leader's "
    "high watermark (or leaves the ISR, or the leadership moves on)",
)
def follower_learns_high_watermark():
    return leads_to(follower_hw_behind, follower_hws_caught_up)
