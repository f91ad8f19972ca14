"""Safety properties of ZooKeeper controller election and controller-epoch fencing.

They read only fields of ``kafkamc.spec.controller.ControllerState`` and take nothing else from
the spec module, so this module imports nothing from it.
"""

from __future__ import annotations

from kafkamc.invariants.api import action_property, invariant

__all__ = [
    "single_controller_per_epoch",
    "controller_epoch_monotonic",
    "no_stale_request_applied",
    "zk_writes_fenced",
    "controller_epoch_bumped_by_owner",
    "requests_reach_their_incarnation",
    "controller_context_agrees_with_zk",
    "broker_view_agrees_with_zk",
    "replica_stopped_only_in_shutdown",
    "controller_epoch_zk_version_in_step",
    "controller_context_epoch_in_step",
    "controller_epochs_not_ahead",
    "controller_znode_owner_is_current",
    "down_brokers_forget",
    "bounded_events_counted",
    "requests_only_to_running_brokers",
    "live_controller_owns_znode",
    "partition_epoch_in_step",
    "elections_need_session_loss",
]


@invariant("single-controller-per-epoch", "no two brokers act as controller with the same controller epoch")
def single_controller_per_epoch(p, s) -> bool:
    """Election safety per epoch. Two brokers may both believe they are controller (a zombie and its
    successor), but never with the same epoch: the epoch increment is a conditional ZooKeeper write."""
    epochs = [b.epoch for i, b in enumerate(s.brokers, 1) if b.up and b.active_controller == i and b.epoch > 0]
    # Pairwise rather than len(set(epochs)): the same claim, and it runs on symbolic epochs too.
    return all(a != b for k, a in enumerate(epochs) for b in epochs[k + 1:])


@action_property(
    "controller-epoch-monotonic",
    "/controller_epoch and every running broker's highest seen controller epoch never decrease",
)
def controller_epoch_monotonic(p, s, label, t) -> bool:
    """A broker that crashes loses its in-memory ``ReplicaManager.controllerEpoch``, so the claim is
    about brokers that are up before and after the step."""
    if t.controller_epoch < s.controller_epoch or t.controller_epoch_zk_version < s.controller_epoch_zk_version:
        return False
    if t.brokers is s.brokers:  # most steps leave every broker alone
        return True
    for b, c in zip(s.brokers, t.brokers):
        if b.up and c.up and c.seen_controller_epoch < b.seen_controller_epoch:
            return False
    return True


@invariant(
    "no-stale-request-applied",
    "no broker applies a control request whose controller epoch is below one it has already seen",
)
def no_stale_request_applied(p, s) -> bool:
    """Stale control requests are not applied (``ReplicaManager`` rejects them with
    STALE_CONTROLLER_EPOCH). The spec records the first such application in ``stale_applied``."""
    return not s.stale_applied


@invariant(
    "zk-writes-fenced",
    "every partition write to ZooKeeper was made by the controller holding the current epoch",
)
def zk_writes_fenced(p, s) -> bool:
    """Fenced ZooKeeper writes (KAFKA-6082): a controller whose epoch is no longer /controller_epoch's
    never changes the partition state. The spec records such a write in ``unfenced_write``."""
    return not s.unfenced_write


@action_property(
    "controller-epoch-bumped-by-owner",
    "/controller_epoch is raised only by the broker that owns /controller, which then holds the new epoch",
)
def controller_epoch_bumped_by_owner(p, s, label, t) -> bool:
    """The controller epoch names the broker registered in /controller: brokers and ZooKeeper fence
    by the epoch alone, so a broker that bumps it without owning /controller passes every check
    (STALE_CONTROLLER_EPOCH, the partition znode's controller epoch, even KAFKA-6082's CheckOp on
    the epoch zkVersion) and fences out the registered controller. Kafka before 2.1 created
    /controller and bumped the epoch in two ZooKeeper writes, so a broker whose session expired in
    between still bumps it; ``registerControllerAndIncrementControllerEpoch`` (KAFKA-6082) made
    them one multi."""
    if t.controller_epoch <= s.controller_epoch:
        return True
    c = t.controller
    return c != 0 and t.brokers[c - 1].epoch == t.controller_epoch


@invariant(
    "requests-reach-their-incarnation",
    "no control request addressed to an earlier incarnation of a broker can reach the running broker",
)
def requests_reach_their_incarnation(p, s) -> bool:
    """KIP-380 (Kafka 2.2): a LeaderAndIsr, UpdateMetadata or StopReplica meant for a broker that has
    since bounced must not be applied by the new incarnation, whose state the controller has not
    yet decided (the request may, say, make it follow a leader or stop a replica on the strength of
    what the old incarnation had). The broker epoch in each request lets the broker reject it;
    without it nothing tells the new incarnation the request was not meant for it."""
    brokers = s.brokers
    return not any(r.old_incarnation and brokers[r.dest - 1].up for r in s.in_flight)


@invariant(
    "controller-context-agrees-with-zk",
    "the controller of the current epoch caches the partition's leader epoch that ZooKeeper holds",
)
def controller_context_agrees_with_zk(p, s) -> bool:
    """KAFKA-3083 ("a soft failure in controller may leave a topic partition in an inconsistent
    state"): the controller sends LeaderAndIsr and UpdateMetadata from its cached partition state
    (``controllerContext.partitionLeadershipInfo``), read on failover and updated by its own
    writes. A zombie controller that writes the partition znode after the new controller read it
    leaves the new controller sending a leader epoch that ZooKeeper has passed: brokers at the
    newer epoch ignore it, and nothing makes the controller re-read. KAFKA-6082 (Kafka 2.1) fences
    the zombie's write with ``CheckOp(/controller_epoch)``. Only the broker holding the current
    epoch is held to it: a zombie's context is stale by definition."""
    part = s.partition
    ce = s.controller_epoch
    for i, b in enumerate(s.brokers, 1):
        if b.up and b.active_controller == i and b.epoch == ce and ce > 0:
            if b.context_leader_epoch != part.leader_epoch:
                return False
            # leader_isr_write: the cached leader too (its ISR lags a leader's own ISR write until
            # /isr_change_notification is handled, by design).
            if p.leader_isr_write and b.context_leader != part.leader:
                return False
    return True


@invariant(
    "broker-view-agrees-with-zk",
    "a running broker at ZooKeeper's leader epoch knows ZooKeeper's leader, and the leader its ISR and zkVersion",
)
def broker_view_agrees_with_zk(p, s) -> bool:
    """Once a broker has the partition's current leader epoch (its LeaderAndIsr was delivered), it
    follows the leader ZooKeeper names, and the leader holds ZooKeeper's ISR and zkVersion: the
    leader decides the high watermark by that ISR and writes ISR changes conditioned on that
    zkVersion. A leader whose cached zkVersion ZooKeeper has passed at its own leader epoch can never
    change the ISR again (KAFKA-2729, "Cached zkVersion not equal to that in zookeeper"); KAFKA-1382
    re-reads the znode after a failed write. A broker behind ZooKeeper's leader epoch is waiting
    for a request, not disagreeing. Brokers keep the leader, ISR and zkVersion only with
    leader_isr_write: otherwise only the controller writes the znode, once per leader epoch, and a
    broker's copy is that write's."""
    if not p.leader_isr_write:
        return True
    part = s.partition
    if part.leader_epoch == 0:
        return True
    for i, b in enumerate(s.brokers, 1):
        if b.up and b.leader_epoch == part.leader_epoch:
            if b.leader != part.leader:
                return False
            if i == part.leader and (b.isr != part.isr or b.zk_version != part.zk_version):
                return False
    return True


@invariant(
    "replica-stopped-only-in-shutdown",
    "a running broker's replica is stopped (StopReplica) only while that broker is in controlled shutdown",
)
def replica_stopped_only_in_shutdown(p, s) -> bool:
    """KIP-380 (Kafka 2.2): "If a broker bounces during controlled shutdown, the bounced broker may
    accidentally process its earlier generation's StopReplicaRequest sent from the active
    controller for one of its follower replicas, leaving the replica offline while its remaining
    replicas may stay online." The controller sends StopReplica only to a broker in controlled
    shutdown; a running broker whose replica is stopped outside one stays offline until the next
    leader change, unknown to the controller."""
    return all(b.shutting_down or not b.stopped for b in s.brokers if b.up)


# -- Auxiliary invariants: what makes the four claims above inductive (``kafkamc prove``) --------
# Each is a fact about Kafka's controller that the claims rely on; none is a default of ``check``.

@invariant(
    "controller-epoch-zk-version-in-step",
    "/controller_epoch's zkVersion moves with its value: only the election multi writes the znode",
)
def controller_epoch_zk_version_in_step(p, s) -> bool:
    """``registerControllerAndIncrementControllerEpoch`` sets /controller_epoch to e+1 with a
    conditional set at zkVersion v, so value and zkVersion advance together; the zkVersion a
    controller caches (``epochZkVersion``) therefore names its epoch (KAFKA-6082)."""
    return s.controller_epoch_zk_version == s.controller_epoch


@invariant(
    "controller-context-epoch-in-step",
    "a broker's cached controller epoch and epochZkVersion are the pair its election wrote",
)
def controller_context_epoch_in_step(p, s) -> bool:
    """``KafkaController.onControllerFailover`` caches ``controllerContext.epoch`` and
    ``epochZkVersion`` from one successful election, and resignation resets both."""
    return all(b.epoch_zk_version == b.epoch for b in s.brokers)


@invariant(
    "controller-epochs-not-ahead",
    "no broker holds a controller epoch, or has seen one, that /controller_epoch has not reached",
)
def controller_epochs_not_ahead(p, s) -> bool:
    """Every controller epoch comes from /controller_epoch: brokers cache it on election
    (KafkaController), requests carry the sender's, ``ReplicaManager.controllerEpoch`` and the
    partition znode's ``controller_epoch`` copy a request's or a write's."""
    ce = s.controller_epoch
    if s.partition.controller_epoch > ce:
        return False
    for b in s.brokers:
        if b.epoch > ce or b.seen_controller_epoch > ce:
            return False
    return all(r.controller_epoch <= ce for r in s.in_flight)


@invariant(
    "controller-znode-owner-is-current",
    "the broker owning /controller is up, has a live session, knows it is controller and holds the current epoch",
)
def controller_znode_owner_is_current(p, s) -> bool:
    """The ephemeral /controller is created in the same multi as the epoch bump and vanishes with
    its owner's session (expiry or crash), so while it exists its owner is the controller of the
    current epoch (``KafkaController.elect``)."""
    c = s.controller
    if c == 0:
        return True
    b = s.brokers[c - 1]
    return b.up and b.session == 1 and b.active_controller == c and b.epoch == s.controller_epoch


@invariant(
    "down-brokers-forget",
    "a broker that is down has a closed session and no in-memory state; a running one a session",
)
def down_brokers_forget(p, s) -> bool:
    """A crashed broker loses ``controllerContext`` and ``ReplicaManager.controllerEpoch`` with its
    process and its ZooKeeper session closes (``KafkaServer`` startup begins from scratch)."""
    for b in s.brokers:
        if b.up:
            if b.session == 0:
                return False
        elif (b.session != 0 or b.active_controller != 0 or b.epoch != 0 or b.epoch_zk_version != 0
              or b.context_leader_epoch != 0 or b.seen_controller_epoch != 0 or b.leader_epoch != 0):
            return False
    return True


@invariant(
    "bounded-events-counted",
    "expired-unnoticed sessions, down brokers and in-flight requests never exceed the expiries, crashes and sends counted",
)
def bounded_events_counted(p, s) -> bool:
    """Bookkeeping of the model's bounds: each expired-not-noticed session took a session expiry,
    each down broker a crash, each in-flight request a send or duplicate."""
    expired = 0
    down = 0
    for b in s.brokers:
        if b.up and b.session == 2:
            expired += 1
        if not b.up:
            down += 1
    return expired <= s.expiries and down <= s.crashes and len(s.in_flight) <= s.sent


@invariant(
    "requests-only-to-running-brokers",
    "every control request in flight is addressed to a broker that is up",
)
def requests_only_to_running_brokers(p, s) -> bool:
    """``ControllerChannelManager`` sends only to live brokers, and a crash closes the broker's
    connections, losing what was in flight to it (since KIP-380 a request to an earlier incarnation
    is also rejected by its broker epoch)."""
    brokers = s.brokers
    return all(brokers[r.dest - 1].up for r in s.in_flight)


@invariant(
    "live-controller-owns-znode",
    "a broker with a live session that believes it is controller owns /controller with the current epoch",
)
def live_controller_owns_znode(p, s) -> bool:
    """/controller changes owner only when its owner's session ends (expiry or crash), and a
    broker that still believes it is controller without owning it learns so by the /controller
    watch or a ControllerMovedException (``maybeResign``). Only a broker whose session expired
    unnoticed (the zombie of KAFKA-6082) can act on an old epoch."""
    for i, b in enumerate(s.brokers, 1):
        if b.up and b.session == 1 and b.active_controller == i and b.epoch > 0:
            if s.controller != i or b.epoch != s.controller_epoch:
                return False
    return True


@invariant(
    "partition-epoch-in-step",
    "every partition state write bumps the leader epoch and the zkVersion together; an unwritten one is the initial",
)
def partition_epoch_in_step(p, s) -> bool:
    """``PartitionStateMachine`` writes the partition znode with a new leader epoch, conditioned on
    its zkVersion (the partition epoch), so both count the writes; before the first write the znode
    holds no leader and the full replica set as ISR; after it, the leader written is in the ISR written."""
    part = s.partition
    if part.zk_version != part.leader_epoch:
        return False
    if part.leader_epoch == 0:
        return part.leader == 0 and part.controller_epoch == 0 and len(part.isr) == len(s.brokers)
    # Written by a controller (epoch >= 1) that chose the leader from the new ISR.
    return part.controller_epoch >= 1 and part.leader in part.isr


@invariant(
    "elections-need-session-loss",
    "each controller election after the first needed the previous controller's session to end",
)
def elections_need_session_loss(p, s) -> bool:
    """/controller is ephemeral: a new controller is elected only once the owner's ZooKeeper session
    ended by expiry or crash, so the controller epoch is at most the expiries plus crashes, plus one
    while /controller exists."""
    return s.controller_epoch <= s.expiries + s.crashes + (1 if s.controller != 0 else 0)
