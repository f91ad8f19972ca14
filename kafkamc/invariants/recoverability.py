"""Recoverability properties of the bundled specs: ``AG EF good``, checked with ``kafkamc check -r NAME``.

Each function says whether a state is good; the property claims that from every reachable state
some good state can still be reached. An invariant cannot say this: a state from which Kafka can
never again elect a controller, stabilise a group or advance the last stable offset may look
harmless on its own.

The functions read only fields of the specs' state classes (as the other property modules do) and
import nothing from the spec modules.

Bounded models. The bundled specs bound what may happen (elections, generations, leader epochs,
transactions) to stay finite, and a bound can make a state stuck that Kafka would leave: the step
that would recover is the one the bound forbids. Where that is so, the property counts a state in
which the bound is spent as good, and says so in its docstring: the property then claims that
nothing but the bound stops recovery.
"""

from __future__ import annotations

from kafkamc.invariants.api import recoverable

__all__ = [
    "controller_can_recover", "group_can_stabilise", "lso_can_advance", "partition_can_recover",
    "producer_can_write",
]

# IntEnum values of the spec modules (IntEnums compare equal to ints; importing the specs here
# would be circular).
_SESSION_LIVE = 1  # kafkamc.spec.controller.Session.LIVE
_GROUP_EMPTY, _GROUP_PREPARING, _GROUP_STABLE, _GROUP_DEAD = 0, 1, 3, 4  # kafkamc.spec.group.GroupState
_CLIENT_STABLE, _CLIENT_FENCED = 4, 5  # kafkamc.spec.group.ClientState
_PRODUCER_NOT_STARTED, _PRODUCER_FATAL = 0, 6  # kafkamc.spec.transactions.ClientState


@recoverable(
    "controller-can-recover",
    "from every state a controller can again be elected: /controller is held by a live broker that acts "
    "as controller with the current epoch",
)
def controller_can_recover(p, s) -> bool:
    """``controller``: the cluster can always get back a working controller (KafkaController.elect).

    Good: the ephemeral /controller is owned by a broker whose session is live and which has
    completed failover with the current /controller_epoch. Bound: once ``elections`` controller
    epochs are spent no election is allowed, so such a state is counted as good.
    """
    c = s.controller
    if c:
        b = s.brokers[c - 1]
        if b.up and b.session == _SESSION_LIVE and b.active_controller == c and b.epoch == s.controller_epoch:
            return True
    return s.controller_epoch >= p.elections


@recoverable(
    "group-can-stabilise",
    "from every state the group can again reach Stable with every member's consumer in the current "
    "generation (or empty out, or be deleted)",
)
def group_can_stabilise(p, s) -> bool:
    """``group``: a rebalance always can finish (GroupCoordinator, KIP-62, KIP-345, KIP-429).

    Good: the group is Stable and every member's consumer is Stable in the group's generation; or
    the group is Empty (no members: nothing to stabilise) or Dead (deleted on purpose). Bound: join
    completions stop at ``max_generation``, so a rebalance that needs one more counts as good.
    """
    g = s.group
    if g == _GROUP_EMPTY or g == _GROUP_DEAD:
        return True
    if g == _GROUP_STABLE:
        ids = {m.member_id for m in s.members}
        for c in s.clients:
            if c.member_id in ids and (c.state != _CLIENT_STABLE or c.generation != s.generation):
                return False
        return True
    return g == _GROUP_PREPARING and s.generation >= p.max_generation


@recoverable(
    "lso-can-advance",
    "from every state the last stable offset can again reach the high watermark on every partition "
    "(no transaction left open)",
)
def lso_can_advance(p, s) -> bool:
    """``transactions``: no transaction stays open on a partition forever (KIP-98 LSO, KIP-890).

    Good: no data partition has an open transaction, so its LSO equals its high watermark and
    read_committed consumers see everything committed. A hanging transaction (KAFKA-14402, the
    motivation of KIP-890) is one whose marker nothing will ever write: from there the LSO of its
    partition can never pass it. No bound is excused: a correct version must close every
    transaction within the model's bounds (the coordinator's timeout abort is always possible).
    """
    for d in s.partitions:
        for pe in d.producers:
            if pe.txn_first_offset >= 0:
                return False
    return True


@recoverable(
    "producer-can-write",
    "from every state the newest producer instance can again write to every partition: its next sequence "
    "number is the one each partition expects",
)
def producer_can_write(p, s) -> bool:
    """``transactions``: a producer whose batch timed out is not stuck (KIP-360, KAFKA-8805).

    Good: the newest initialised producer instance is dead or not started, or on every partition
    its next sequence number is the one the partition's state for its producer id expects (last
    sequence + 1 in the same epoch, 0 in a newer one). Before KAFKA-8805 a tv1 client kept its
    epoch and sequence numbers after aborting on a timed-out batch; if that batch is then rejected
    (tv1-verify) the partition never sees its sequence number and every later batch is an
    OutOfOrderSequence. Without ``idempotence`` sequence numbers are not checked: always good.
    Bound: a bump that needs a producer id beyond ``producer_ids`` counts as good.
    """
    if not p.idempotence or s.init_instance == 0:
        return True
    pr = s.producers[s.init_instance - 1]
    if pr.state == _PRODUCER_NOT_STARTED or pr.state == _PRODUCER_FATAL:
        return True
    c = s.coordinator
    if c.producer_epoch >= p.max_epoch - 1 and c.pid >= p.producer_ids:
        return True
    for k, d in enumerate(s.partitions):
        entry = d.producers[pr.pid - 1]
        if entry.epoch > pr.epoch:
            continue  # fenced at the partition: the producer learns it and stops
        expected = entry.last_seq + 1 if entry.epoch == pr.epoch else 0
        if pr.next_seq[k] != expected:
            return False
    return True


@recoverable(
    "partition-can-recover",
    "from every state the partition can again have a leader that acts on the current leader epoch",
)
def partition_can_recover(p, s) -> bool:
    """``replication``: the controller can always give the partition a working leader again.

    Good: ZooKeeper names a leader and that replica has become leader in the current leader epoch
    (it handled the LeaderAndIsr request of that epoch). Bound: once ``max_leader_epoch`` is spent
    the controller may not elect, so such a state is counted as good.
    """
    ld = s.quorum_leader
    if ld and not (s.down and ld in s.down):
        leader, leader_epoch, _ = s.replica_state[ld - 1]
        if leader == ld and leader_epoch == len(s.requests) - 1:
            return True
    return len(s.requests) > p.max_leader_epoch
