"""ZooKeeper-based controller election and controller-epoch fencing (Kafka before KRaft).

What is modelled, as ``KafkaController`` and ``KafkaZkClient`` do it:

- ZooKeeper: the ephemeral ``/controller`` znode (its owner, or none), the persistent
  ``/controller_epoch`` (its value and its zkVersion), each broker's ZooKeeper session, and the
  state znode of one partition ``/brokers/topics/t/partitions/0/state`` (leader, leader epoch, ISR,
  the ``controller_epoch`` of the controller that wrote it, and its zkVersion, the partition epoch).
  Every broker is a replica of the partition.
- Brokers 1..N: up or down; the ZooKeeper session live, or expired at ZooKeeper but not yet noticed
  by the broker (the zombie window of a long GC pause); the cached active controller id
  (``KafkaController.activeControllerId``); when controller, its epoch and epoch zkVersion
  (``controllerContext.epoch`` / ``epochZkVersion``) and the leader epoch in its cached partition
  state (``controllerContext.partitionLeadershipInfo``); the highest controller epoch seen in
  control requests (``ReplicaManager.controllerEpoch``); the partition's leader epoch as the broker
  knows it (``Partition.leaderEpoch``).
- The network: a bag of in-flight LeaderAndIsr and UpdateMetadata requests, so that any of them
  can be delayed and delivered in any order; requests can be dropped and duplicated (a retry).
  At most ``requests`` requests are sent in all, duplicates included, and at most ``in_flight``
  are in flight at once. A controller may (re)send its view to any running broker at any time, which covers the
  sends after each change, on failover, and ``ControllerChannelManager``'s retries.

The parameter ``fencing`` selects the generation of Kafka:

- ``none``: brokers apply every control request whatever its controller epoch (as if the
  ``STALE_CONTROLLER_EPOCH`` check of ``ReplicaManager`` did not exist) and record the request's
  epoch as their controller epoch;
- ``epoch``: brokers reject a request whose controller epoch is below the highest they have seen
  (``ReplicaManager.becomeLeaderOrFollower`` / ``maybeUpdateMetadataCache``), but the controller's
  ZooKeeper writes are conditioned only on the partition zkVersion: Kafka before 2.1;
- ``zkversion`` (default): in addition, every controller write is a ZooKeeper multi-op with
  ``CheckOp(/controller_epoch, epochZkVersion)`` (``KafkaZkClient.wrapRequestWithControllerEpochCheck``,
  KAFKA-6082, Kafka 2.1+), and a failed check is a ``ControllerMovedException`` that makes the
  controller resign.

Abstractions, each chosen because it removes states without removing a behaviour the four
properties can observe:

- With ``election=multi`` (default) election is one atomic step whatever ``fencing``: the 2.1+
  ``registerControllerAndIncrementControllerEpoch`` multi (create ``/controller`` and set
  ``/controller_epoch`` to e+1 at zkVersion v). Reading ``/controller_epoch`` before the multi is
  folded in, because a multi that lost the race fails its version check and the loser only
  re-reads ``/controller``. ``election=two-step`` is Kafka before 2.1 (KAFKA-6082): create
  ``/controller``, then, in a later step that ignores the session, read and conditionally bump
  ``/controller_epoch``; a bump after a stale read fails and only the successful one is modelled.
  It is a flag of its own rather than implied by ``fencing`` so that the pinned counts of every
  ``fencing`` stay what they were.
- A controller's read of the partition state and its conditional write are one step: a write that
  fails the partition zkVersion check is retried after a re-read (``updateLeaderAndIsr``), so
  only the last, successful attempt matters.
- The zombie writes after its session expired at ZooKeeper. In Kafka the ZooKeeper client of the
  paused broker re-establishes a session and ``retryRequestsUntilConnected`` sends the queued
  write on it before the controller's event thread has processed the ``Expire`` event; that is the
  window KAFKA-6082 closes. Here the write is allowed while the session is expired-not-noticed.
- A crash closes the broker's session at once (a dead process neither writes nor sends while
  ZooKeeper waits for the session timeout) and drops the requests in flight to it (its
  connections close; since KIP-380, Kafka 2.2, a request addressed to an earlier incarnation is
  also rejected by its broker epoch). With ``broker_epoch=False`` (before KIP-380) they are kept
  and delivered to the broker once it has restarted. A restarted broker starts with empty in-memory state, so
  its highest seen controller epoch restarts at 0, as ``ReplicaManager.controllerEpoch`` does.
- The controller's choice of a new leader is any live (session at ZooKeeper) ISR member other
  than the current leader, and the new ISR is the live members of the old one
  (``PartitionStateMachine.doElectLeaderForPartitions`` with the offline election; the
  ``OfflineReplica`` ISR shrink is folded into it). The leader does not expand the ISR.

- The cached controller id of a broker that is not itself controller is kept in the state (the
  traces show it lag behind /controller) but left out of the ``view`` that is fingerprinted: no
  step reads it except the watch that refreshes it.

Two flags add parts of the protocol, off by default (their fields then keep their initial
values, so the default state space and the prover's domain are unchanged):

- ``controlled_shutdown`` (KAFKA-340): ControlledShutdown handled by the controller (leadership
  moved off the broker, the broker out of the ISR), StopReplica to the shutting-down broker, and the
  shutdown itself; with ``broker_epoch=False`` a StopReplica of an earlier incarnation stops the
  replica of a broker that bounced (KIP-380).
- ``leader_isr_write`` (Kafka < 2.7, before KIP-497): brokers keep the leader, ISR and zkVersion of
  LeaderAndIsr, the leader writes its ISR changes conditioned on its cached zkVersion and the
  controller re-reads them on ``/isr_change_notification``; ``isr_write_recheck`` (KAFKA-1382)
  re-reads the znode after a BADVERSION that the leader's own earlier attempt caused.

Two history flags record what the invariants ``no-stale-request-applied`` and
``zk-writes-fenced`` are about, at the step where it happens: ``stale_applied`` and
``unfenced_write``. They stay false in every state of a correct variant, so they add no states.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from itertools import permutations, product

from kafkamc.invariants.liveness import controller_eventually_elected
from kafkamc.invariants.recoverability import controller_can_recover
from kafkamc.invariants.controller import (
    bounded_events_counted,
    broker_view_agrees_with_zk,
    controller_context_agrees_with_zk,
    controller_context_epoch_in_step,
    controller_epoch_bumped_by_owner,
    controller_epoch_monotonic,
    controller_epoch_zk_version_in_step,
    controller_epochs_not_ahead,
    controller_znode_owner_is_current,
    down_brokers_forget,
    elections_need_session_loss,
    live_controller_owns_znode,
    no_stale_request_applied,
    partition_epoch_in_step,
    replica_stopped_only_in_shutdown,
    requests_only_to_running_brokers,
    requests_reach_their_incarnation,
    single_controller_per_epoch,
    zk_writes_fenced,
)
from kafkamc.spec import domain as ty
from kafkamc.spec.api import Param, Spec, action

__all__ = ["Controller", "ControllerState", "Broker", "PartitionState", "Request", "Session", "Kind"]

NONE = 0  # no broker: /controller absent, no leader, activeControllerId = -1 in Kafka


class Session(IntEnum):
    """A broker's ZooKeeper session as ZooKeeper and the broker see it."""

    CLOSED = 0  # the broker is down
    LIVE = 1
    EXPIRED = 2  # expired at ZooKeeper, ephemerals deleted, not yet noticed by the broker


class Kind(IntEnum):
    LEADER_AND_ISR = 1
    UPDATE_METADATA = 2
    STOP_REPLICA = 3  # only with controlled_shutdown


class _PushedKind(IntEnum):
    """The kinds of ``Kind`` a model without controlled shutdown sends: the prover's domain for
    ``Request.kind`` then leaves out StopReplica (members compare and hash as the same ints)."""

    LEADER_AND_ISR = 1
    UPDATE_METADATA = 2


@dataclass(frozen=True, slots=True, order=True)
class Request:
    """A control request in flight from a controller to ``dest``."""

    kind: Kind
    dest: int
    controller_epoch: int
    leader_epoch: int
    # Sent to an incarnation of ``dest`` that has since crashed; only with broker_epoch=False
    # (with it a crash drops such requests, so the field stays False and adds no states).
    old_incarnation: bool = False
    # LeaderAndIsr's partition state beyond the leader epoch: leader, ISR and zkVersion (the
    # partition epoch). Only with leader_isr_write, the one variant in which a broker's copy can
    # disagree with ZooKeeper at the same leader epoch; otherwise 0, (), 0.
    leader: int = NONE
    isr: tuple[int, ...] = ()
    zk_version: int = 0


@dataclass(frozen=True, slots=True, order=True)
class Broker:
    up: bool
    session: Session
    active_controller: int  # KafkaController.activeControllerId, NONE if unknown
    epoch: int  # controllerContext.epoch while this broker is controller, else 0
    epoch_zk_version: int  # controllerContext.epochZkVersion while controller, else 0
    context_leader_epoch: int  # leader epoch in the controller's cached partition state
    seen_controller_epoch: int  # ReplicaManager.controllerEpoch
    leader_epoch: int  # Partition.leaderEpoch on this broker
    # controlled_shutdown only (else False): the controller accepted this incarnation's
    # ControlledShutdown (controllerContext.shuttingDownBrokerIds), and the broker applied a
    # StopReplica (ReplicaManager.stopReplicas: the replica's fetcher is gone, it is offline here).
    shutting_down: bool
    stopped: bool
    # leader_isr_write only (else 0, (), 0): the partition as this broker knows it (Partition.leader,
    # inSyncReplicas, zkVersion, from LeaderAndIsr or its own ISR write), and, while controller,
    # its cached leader, ISR and zkVersion beside context_leader_epoch.
    leader: int
    isr: tuple[int, ...]
    zk_version: int
    context_leader: int
    context_isr: tuple[int, ...]
    context_zk_version: int


@dataclass(frozen=True, slots=True, order=True)
class PartitionState:
    """The partition state znode; ``zk_version`` is the partition epoch."""

    leader: int
    leader_epoch: int
    isr: tuple[int, ...]  # sorted broker ids
    controller_epoch: int  # epoch of the controller that wrote it
    zk_version: int


@dataclass(frozen=True, slots=True, order=True)
class ControllerState:
    controller: int  # owner of the ephemeral /controller, NONE if absent
    controller_epoch: int  # /controller_epoch value
    controller_epoch_zk_version: int  # /controller_epoch zkVersion
    partition: PartitionState
    brokers: tuple[Broker, ...]  # brokers[b - 1] is broker b
    in_flight: tuple[Request, ...]  # a bag, kept sorted
    sent: int  # control requests sent or duplicated so far (bounded)
    expiries: int  # session expiries so far (bounded)
    crashes: int  # crashes so far (bounded)
    stale_applied: bool  # history: a broker applied a request below its controller epoch
    unfenced_write: bool  # history: a partition write by a controller not holding the current epoch


_DOWN = Broker(False, Session.CLOSED, NONE, 0, 0, 0, 0, 0, False, False, NONE, (), 0, NONE, (), 0)
_FRESH = Broker(True, Session.LIVE, NONE, 0, 0, 0, 0, 0, False, False, NONE, (), 0, NONE, (), 0)


def _set(t: tuple, i: int, v: object) -> tuple:
    return t[:i] + (v,) + t[i + 1:]


def _resigned(b: Broker, active: int) -> Broker:
    """``onControllerResignation``: the controller context is dropped."""
    return _controller_side(b, b.session, active, 0, 0, 0, NONE, (), 0)


def _controller_side(b: Broker, session: Session, active: int, epoch: int, version: int, context_leader_epoch: int,
                     context_leader: int, context_isr: tuple, context_zk_version: int) -> Broker:
    """``b`` with its session and controller state replaced, its replica state kept."""
    return Broker(b.up, session, active, epoch, version, context_leader_epoch, b.seen_controller_epoch,
                  b.leader_epoch, b.shutting_down, b.stopped, b.leader, b.isr, b.zk_version,
                  context_leader, context_isr, context_zk_version)


def _replica_side(b: Broker, seen: int, leader_epoch: int, stopped: bool, leader: int, isr: tuple,
                  zk_version: int) -> Broker:
    """``b`` with its replica state replaced, its controller state kept."""
    return Broker(b.up, b.session, b.active_controller, b.epoch, b.epoch_zk_version, b.context_leader_epoch,
                  seen, leader_epoch, b.shutting_down, stopped, leader, isr, zk_version,
                  b.context_leader, b.context_isr, b.context_zk_version)


def _reads_partition(p, b: Broker, session: Session, active: int, epoch: int, version: int,
                     part: "PartitionState") -> Broker:
    """A controller's state after ``onControllerFailover`` read the partition znode into its context."""
    if p.leader_isr_write:
        return _controller_side(b, session, active, epoch, version, part.leader_epoch, part.leader, part.isr,
                                part.zk_version)
    return _controller_side(b, session, active, epoch, version, part.leader_epoch, NONE, (), 0)


def _is_controller(i: int, b: Broker) -> bool:
    return b.up and b.active_controller == i and b.epoch > 0


class Controller(Spec):
    """ZooKeeper controller election and controller-epoch fencing (KafkaController, KAFKA-6082)."""

    name = "controller"
    description = "ZooKeeper controller election and controller-epoch fencing (KafkaController, KAFKA-6082)"
    parameters = (
        Param("fencing", "zkversion",
              "none: brokers apply any request; epoch: brokers reject stale controller epochs "
              "(Kafka < 2.1); zkversion: also ZooKeeper writes checked on /controller_epoch's "
              "zkVersion (KAFKA-6082, Kafka 2.1+)",
              choices=("none", "epoch", "zkversion")),
        Param("election", "multi",
              "multi: /controller is created and /controller_epoch bumped in one ZooKeeper multi "
              "(registerControllerAndIncrementControllerEpoch, KAFKA-6082, Kafka 2.1+); two-step: "
              "/controller is created first and /controller_epoch read and bumped in a later step "
              "(Kafka < 2.1), so a broker whose session expired in between still bumps the epoch "
              "without owning /controller",
              choices=("multi", "two-step")),
        Param("broker_epoch", True,
              "KIP-380 (Kafka 2.2): control requests carry the broker epoch of the incarnation "
              "they are addressed to, so a restarted broker rejects those sent to its earlier "
              "incarnation; off: a request in flight to a broker that crashes is delivered to it "
              "after it restarts"),
        Param("controlled_shutdown", False,
              "controlled.shutdown.enable (KAFKA-340, Kafka 0.8): the controller moves leadership off a "
              "broker that asks, removes it from the ISR and sends it StopReplica before it shuts down; "
              "off: brokers only crash"),
        Param("leader_isr_write", False,
              "Kafka < 2.7 (before KIP-497's AlterIsr): the partition leader writes its ISR changes to "
              "the partition znode itself, conditioned on its cached zkVersion, and brokers keep the "
              "leader, ISR and zkVersion of LeaderAndIsr (the path of KAFKA-3083 and KAFKA-2729); off: "
              "only the controller writes the partition state"),
        Param("isr_write_recheck", True,
              "KAFKA-1382 (Kafka 0.8.2): a leader whose ISR write fails with BADVERSION re-reads the "
              "znode and takes its zkVersion if it holds the ISR it wrote (a retry after a connection "
              "loss); off: it keeps its stale cached zkVersion (only with leader_isr_write)"),
        Param("brokers", 3, "number of brokers; every broker is a replica of the partition", min=2, max=5),
        Param("elections", 2, "bound on controller elections (the highest /controller_epoch)", min=1, max=6, lift=True),
        Param("expiries", 1, "bound on ZooKeeper session expiries", min=0, max=4, lift=True),
        Param("crashes", 0, "bound on broker crashes and controlled shutdowns (each may restart)", min=0, max=4,
              lift=True),
        Param("leader_epochs", 1, "bound on the partition's leader epoch (leader elections)", min=1, max=6, lift=True),
        Param("requests", 2, "bound on control requests sent in all, duplicates included", min=1, max=8, lift=True),
        Param("in_flight", 2, "bound on control requests in flight at once", min=1, max=8),
        Param("isr_changes", 1, "bound on the partition leader's own ISR writes (with leader_isr_write)", min=0,
              max=4),
    )
    # brokers[b - 1] is broker b: one swim lane per broker in the viewer, b1 in traces.
    entities = {"broker": ("brokers",)}
    invariants = (
        single_controller_per_epoch,
        controller_epoch_monotonic,
        no_stale_request_applied,
        zk_writes_fenced,
        controller_epoch_bumped_by_owner,
        requests_reach_their_incarnation,
        controller_context_agrees_with_zk,
        broker_view_agrees_with_zk,
        replica_stopped_only_in_shutdown,
        # Auxiliary invariants for ``kafkamc prove`` (not defaults; each holds under ``check`` too).
        controller_epoch_zk_version_in_step,
        controller_context_epoch_in_step,
        controller_epochs_not_ahead,
        controller_znode_owner_is_current,
        down_brokers_forget,
        bounded_events_counted,
        requests_only_to_running_brokers,
        live_controller_owns_znode,
        partition_epoch_in_step,
        elections_need_session_loss,
    )
    recoverability = (controller_can_recover,)
    liveness = (controller_eventually_elected,)
    # Fairness (check -l): ZooKeeper and the brokers keep working. A broker whose session expired
    # notices (expire); a watch that fired is handled (controller_change); with /controller absent
    # some live broker runs the election (elect); a crashed broker is restarted (restart); the
    # network delivers what it keeps (handle_request). Failures are not fair, nothing forces them:
    # session_expires, crash, drop_request, duplicate_request; nor are the controller's optional
    # sends and leader elections, which the election does not wait for.
    weak_fairness = ("elect", "increment_epoch", "controller_change", "expire", "restart", "handle_request")
    # What goes wrong when a fix is missing (docs/controller.md). single-controller-per-epoch and
    # controller-epoch-monotonic are not defaults: no Kafka release breaks them (/controller_epoch
    # has always been written conditioned on the zkVersion read, two-step election included, and
    # no variant of the model breaks them); they stay properties of the spec and targets
    # of its proof (kafkamc.toml), as facts the other properties rest on.
    default_invariants = (
        "no-stale-request-applied",
        "zk-writes-fenced",
        "controller-context-agrees-with-zk",
        "broker-view-agrees-with-zk",
        "replica-stopped-only-in-shutdown",
        "controller-epoch-bumped-by-owner",
    )

    def init_states(p):
        """All brokers up with live sessions, no controller yet, a new partition without a leader."""
        n = p.brokers
        part = PartitionState(NONE, 0, tuple(range(1, n + 1)), 0, 0)
        yield ControllerState(NONE, 0, 0, part, (_FRESH,) * n, (), 0, 0, 0, False, False)

    def domain(p):
        """TypeOK: every field in its range; the counters bounded by their (possibly lifted) bounds."""
        n = p.brokers
        broker_id = ty.Int(0, n)  # NONE or a broker
        epoch = ty.Int(0, p.elections)
        leader_epoch = ty.Int(0, p.leader_epochs)
        # The fields of a flag that is off keep their initial value (no new symbolic branch).
        shutdown = ty.Bool() if p.controlled_shutdown else ty.Const(False)
        view_leader = broker_id if p.leader_isr_write else ty.Const(NONE)
        view_isr = ty.Subset(1, n) if p.leader_isr_write else ty.Const(())
        view_version = ty.Int(0) if p.leader_isr_write else ty.Const(0)
        return ty.Record(
            ControllerState,
            controller=broker_id,
            controller_epoch=epoch,
            controller_epoch_zk_version=ty.Int(0),
            partition=ty.Record(PartitionState, leader=broker_id, leader_epoch=leader_epoch,
                               isr=ty.Subset(1, n, nonempty=True), controller_epoch=epoch, zk_version=ty.Int(0)),
            brokers=ty.Tuple(ty.Record(
                Broker, up=ty.Bool(), session=ty.Enum(Session), active_controller=broker_id, epoch=epoch,
                epoch_zk_version=ty.Int(0), context_leader_epoch=leader_epoch, seen_controller_epoch=epoch,
                leader_epoch=leader_epoch, shutting_down=shutdown, stopped=shutdown, leader=view_leader,
                isr=view_isr, zk_version=view_version, context_leader=view_leader, context_isr=view_isr,
                context_zk_version=view_version), n),
            in_flight=ty.Bag(ty.Record(Request, kind=ty.Enum(Kind if p.controlled_shutdown else _PushedKind),
                                     dest=ty.Int(1, n), controller_epoch=epoch, leader_epoch=leader_epoch,
                                     # Only broker_epoch=False ever marks a request.
                                     old_incarnation=ty.Const(False) if p.broker_epoch else ty.Bool(),
                                     leader=view_leader, isr=view_isr, zk_version=view_version),
                             p.in_flight),
            sent=ty.Int(0, p.requests),
            expiries=ty.Int(0, p.expiries),
            crashes=ty.Int(0, p.crashes),
            stale_applied=ty.Bool(),
            unfenced_write=ty.Bool(),
        )

    # -- ZooKeeper sessions, election and watches ---------------------------------------------

    @action
    def elect(p, s):
        """``KafkaController.elect``: /controller is absent, so a live broker creates it and bumps
        the epoch in one multi (``registerControllerAndIncrementControllerEpoch``).

        With election=two-step (Kafka < 2.1) this step only creates the ephemeral /controller;
        the epoch is bumped by a later ``increment_epoch``."""
        if s.controller != NONE or s.controller_epoch >= p.elections:
            return
        if p.election == "two-step":
            yield from _create_controller(s)
            return
        epoch = s.controller_epoch + 1
        version = s.controller_epoch_zk_version + 1
        for i, b in enumerate(s.brokers, 1):
            if b.up and b.session == Session.LIVE:
                # onControllerFailover reads the partition state into the controller context.
                nb = _reads_partition(p, b, Session.LIVE, i, epoch, version, s.partition)
                yield f"Elect(b{i}, epoch={epoch})", ControllerState(
                    i, epoch, version, s.partition, _set(s.brokers, i - 1, nb), s.in_flight,
                    s.sent, s.expiries, s.crashes, s.stale_applied, s.unfenced_write)

    @action
    def increment_epoch(p, s):
        """election=two-step only (Kafka < 2.1): a broker that created /controller and has no
        epoch yet runs ``onControllerFailover``: it reads /controller_epoch and writes e+1
        conditioned on the zkVersion it read (``incrementControllerEpoch``), then reads the
        partition state into its context.

        The read and the conditional write are one step: a write after a stale read fails its
        version check, and only the last successful attempt matters. The step does not look at
        the broker's session: its ZooKeeper client has re-established a new session before the
        event thread processes ``Expire``, so a broker whose session expired after it created
        /controller (and which therefore no longer owns it) still bumps the epoch. KAFKA-6082
        (Kafka 2.1) removed that window by making creation and bump one multi.
        """
        if p.election != "two-step" or s.controller_epoch >= p.elections:
            return
        epoch = s.controller_epoch + 1
        version = s.controller_epoch_zk_version + 1
        for i, b in enumerate(s.brokers, 1):
            if b.up and b.active_controller == i and b.epoch == 0:
                nb = _reads_partition(p, b, b.session, i, epoch, version, s.partition)
                yield f"IncrementControllerEpoch(b{i}, epoch={epoch})", ControllerState(
                    s.controller, epoch, version, s.partition, _set(s.brokers, i - 1, nb), s.in_flight,
                    s.sent, s.expiries, s.crashes, s.stale_applied, s.unfenced_write)

    @action
    def controller_change(p, s):
        """The /controller watch fires (``ControllerChange`` / ``Reelect`` → ``maybeResign``): the
        broker re-reads /controller and resigns if it was controller and no longer is."""
        owner = s.controller
        for i, b in enumerate(s.brokers, 1):
            if b.up and b.session == Session.LIVE and b.active_controller != owner:
                if b.active_controller == i and owner != i:
                    nb = _resigned(b, owner)
                else:
                    nb = _controller_side(b, Session.LIVE, owner, b.epoch, b.epoch_zk_version, b.context_leader_epoch,
                                          b.context_leader, b.context_isr, b.context_zk_version)
                yield f"ControllerChange(b{i}, controller=b{owner})", ControllerState(
                    s.controller, s.controller_epoch, s.controller_epoch_zk_version, s.partition,
                    _set(s.brokers, i - 1, nb), s.in_flight, s.sent, s.expiries, s.crashes,
                    s.stale_applied, s.unfenced_write)

    @action
    def session_expires(p, s):
        """ZooKeeper expires a broker's session (a long GC pause): its ephemerals, /controller
        included, vanish at once; the broker does not know yet (the zombie window)."""
        if s.expiries >= p.expiries:
            return
        for i, b in enumerate(s.brokers, 1):
            if b.up and b.session == Session.LIVE:
                nb = _controller_side(b, Session.EXPIRED, b.active_controller, b.epoch, b.epoch_zk_version,
                                      b.context_leader_epoch, b.context_leader, b.context_isr, b.context_zk_version)
                yield f"SessionExpired(b{i})", ControllerState(
                    NONE if s.controller == i else s.controller, s.controller_epoch,
                    s.controller_epoch_zk_version, s.partition, _set(s.brokers, i - 1, nb), s.in_flight,
                    s.sent, s.expiries + 1, s.crashes, s.stale_applied, s.unfenced_write)

    @action
    def expire(p, s):
        """The broker notices its expired session: the ``Expire`` event resigns and forgets the
        controller, then ``RegisterBrokerAndReelect`` registers on a new session (the re-election
        itself is a later ``Elect`` or ``ControllerChange`` step)."""
        for i, b in enumerate(s.brokers, 1):
            if b.up and b.session == Session.EXPIRED:
                nb = _controller_side(b, Session.LIVE, NONE, 0, 0, 0, NONE, (), 0)
                yield f"Expire(b{i})", ControllerState(
                    s.controller, s.controller_epoch, s.controller_epoch_zk_version, s.partition,
                    _set(s.brokers, i - 1, nb), s.in_flight, s.sent, s.expiries, s.crashes,
                    s.stale_applied, s.unfenced_write)

    @action
    def crash(p, s):
        """A broker process dies: its session closes, its in-memory state is lost, and the
        requests in flight to it are lost with its connections.

        With broker_epoch=False (before KIP-380) they are kept, marked as addressed to the
        incarnation that crashed, and delivered once the broker restarts: a controller that has
        not yet processed the broker's bounce resends on a new connection, and the new
        incarnation cannot tell the request was not meant for it.

        With controlled_shutdown, the same step ends a broker whose controlled shutdown the
        controller accepted (``ShutDown``): its process exits once the ControlledShutdown
        response came, with the controller's StopReplica possibly still on its way. Crashes and
        such shutdowns share the bound ``crashes``."""
        if s.crashes >= p.crashes:
            return
        for i, b in enumerate(s.brokers, 1):
            if b.up:
                if p.broker_epoch:
                    bag = tuple(r for r in s.in_flight if r.dest != i)
                else:
                    bag = tuple(sorted(r if r.dest != i else Request(r.kind, i, r.controller_epoch, r.leader_epoch, True,
                                                                     r.leader, r.isr, r.zk_version)
                                       for r in s.in_flight))
                yield f"{'ShutDown' if b.shutting_down else 'Crash'}(b{i})", ControllerState(
                    NONE if s.controller == i else s.controller, s.controller_epoch,
                    s.controller_epoch_zk_version, s.partition, _set(s.brokers, i - 1, _DOWN),
                    bag, s.sent, s.expiries, s.crashes + 1, s.stale_applied, s.unfenced_write)

    @action
    def restart(p, s):
        """A crashed broker starts again with a new session (``Startup``)."""
        for i, b in enumerate(s.brokers, 1):
            if not b.up:
                yield f"Restart(b{i})", ControllerState(
                    s.controller, s.controller_epoch, s.controller_epoch_zk_version, s.partition,
                    _set(s.brokers, i - 1, _FRESH), s.in_flight, s.sent, s.expiries, s.crashes,
                    s.stale_applied, s.unfenced_write)

    # -- the controller's partition change ----------------------------------------------------

    @action
    def elect_leader(p, s):
        """The controller (or a zombie that still believes it is) elects a new partition leader
        and writes the partition state znode (``PartitionStateMachine.doElectLeaderForPartitions``).

        The write is conditioned on the partition zkVersion in every variant and aborted when the
        znode was written by a controller of a higher epoch ("controller moved"). With
        fencing=zkversion it is also a multi with CheckOp(/controller_epoch, epochZkVersion)
        (KAFKA-6082); a failed check is a ControllerMovedException and the controller resigns.
        """
        part = s.partition
        if part.leader_epoch >= p.leader_epochs:
            return
        brokers = s.brokers
        live_isr = tuple(r for r in part.isr if brokers[r - 1].session == Session.LIVE)
        for c, cb in enumerate(brokers, 1):
            if not _is_controller(c, cb) or part.controller_epoch > cb.epoch:
                continue
            candidates = [r for r in live_isr if r != part.leader]
            if not candidates:
                continue
            moved = _controller_moved(p, s, c, cb)
            if moved is not None:
                yield f"ElectLeader(b{c}) fails: ControllerMovedException", moved
                continue
            le = part.leader_epoch + 1
            for leader in candidates:
                yield f"ElectLeader(b{c}, leader=b{leader}, leaderEpoch={le}, isr={list(live_isr)})", \
                    _partition_written(p, s, brokers, c, leader, live_isr)

    @action
    def controlled_shutdown(p, s):
        """controlled_shutdown only (``controlled.shutdown.enable``, KAFKA-340, Kafka 0.8): the
        controller handles a live broker's ControlledShutdown request (``doControlledShutdown``):
        it records the broker as shutting down, moves leadership off it (the controlled-shutdown
        election: a live ISR member that is not shutting down) and removes it from the ISR
        (``OfflineReplica``; the last member stays), in one conditional write of the partition
        znode with a new leader epoch, fenced as ``elect_leader``'s. A leader with no successor
        keeps leadership, as Kafka leaves such a partition to the broker's retries. The
        StopReplica for its follower replica is sent by ``send_stop_replica``.

        The request and its response are one step (the broker waits for the response before it
        goes on shutting down); every controlled shutdown leads to a shutdown within the
        ``crashes`` bound, so it is offered only while that bound allows one more."""
        if not p.controlled_shutdown or s.crashes >= p.crashes:
            return
        part = s.partition
        brokers = s.brokers
        for c, cb in enumerate(brokers, 1):
            if not _is_controller(c, cb) or part.controller_epoch > cb.epoch:
                continue
            for d, db in enumerate(brokers, 1):
                if not db.up or db.session != Session.LIVE or db.shutting_down:
                    continue
                marked = _set(brokers, d - 1, Broker(
                    True, db.session, db.active_controller, db.epoch, db.epoch_zk_version, db.context_leader_epoch,
                    db.seen_controller_epoch, db.leader_epoch, True, db.stopped, db.leader, db.isr, db.zk_version,
                    db.context_leader, db.context_isr, db.context_zk_version))
                isr = tuple(r for r in part.isr if r != d) or part.isr
                if part.leader == NONE:
                    leaders = []  # no leader yet: nothing to move, and the ISR is written with the first
                elif part.leader == d:
                    leaders = [r for r in isr if r != d and brokers[r - 1].session == Session.LIVE
                               and not brokers[r - 1].shutting_down]
                else:
                    leaders = [part.leader] if isr != part.isr else []
                label = f"ControlledShutdown(b{d}, controller=b{c})"
                if not leaders:
                    yield label, ControllerState(
                        s.controller, s.controller_epoch, s.controller_epoch_zk_version, part, marked, s.in_flight,
                        s.sent, s.expiries, s.crashes, s.stale_applied, s.unfenced_write)
                    continue
                if part.leader_epoch >= p.leader_epochs:
                    continue
                moved = _controller_moved(p, s, c, cb)
                if moved is not None:
                    yield f"{label} fails: ControllerMovedException", moved
                    continue
                for leader in leaders:
                    yield f"{label}: leader=b{leader}, leaderEpoch={part.leader_epoch + 1}, isr={list(isr)}", \
                        _partition_written(p, s, marked, c, leader, isr)

    @action
    def leader_isr_change(p, s):
        """leader_isr_write only (Kafka before 2.7, KIP-497): the partition leader shrinks or
        expands the ISR itself (``Partition.maybeShrinkIsr`` / ``maybeExpandIsr``) and writes it to
        the partition znode conditioned on its cached zkVersion (``ReplicationUtils.updateLeaderAndIsr``),
        keeping the leader epoch and the controller epoch of the last leadership decision; the
        controller learns of it through ``/isr_change_notification``. It shrinks by any other ISR
        member (the lag is not modelled) and expands by a live broker that follows it at its
        leader epoch. Bounded by ``isr_changes``: the leader writes so far are the partition
        zkVersion minus its leader epoch (every controller write bumps both).

        A write whose cached zkVersion is current succeeds. Its response can still be lost to a
        connection loss, and the ZooKeeper client's retry then fails with BADVERSION against the
        version the first attempt created. With ``isr_write_recheck`` (KAFKA-1382) a failed write
        re-reads the znode (``checkLeaderAndIsrZkData``) and, if it holds the leader, leader epoch
        and ISR the leader wrote, takes its zkVersion as the write's; without it the leader keeps
        its old ISR and cached zkVersion, which ZooKeeper has passed (KAFKA-2729: "Cached zkVersion
        not equal to that in zookeeper, skip updating ISR" from then on). A write with a stale
        cached zkVersion fails and changes nothing: that is how a deposed leader is fenced."""
        if not p.leader_isr_write:
            return
        part = s.partition
        if part.zk_version - part.leader_epoch >= p.isr_changes:
            return
        brokers = s.brokers
        for i, b in enumerate(brokers, 1):
            if not b.up or b.leader != i or b.stopped:
                continue
            changes = [("Shrink", tuple(x for x in b.isr if x != r)) for r in b.isr if r != i]
            changes += [("Expand", tuple(sorted(b.isr + (r,)))) for r, rb in enumerate(brokers, 1)
                        if r not in b.isr and rb.up and not rb.stopped and rb.leader == i
                        and rb.leader_epoch == b.leader_epoch]
            for what, isr in changes:
                label = f"Leader{what}Isr(b{i}, isr={list(isr)}, zkVersion={b.zk_version})"
                if b.zk_version == part.zk_version:
                    written = PartitionState(part.leader, part.leader_epoch, isr, part.controller_epoch,
                                             part.zk_version + 1)
                    nb = _replica_side(b, b.seen_controller_epoch, b.leader_epoch, False, i, isr, written.zk_version)
                    yield label, _with_partition(s, written, _set(brokers, i - 1, nb))
                    if not p.isr_write_recheck:
                        yield f"{label}: connection loss, the retry fails with BADVERSION", \
                            _with_partition(s, written, brokers)
                elif (p.isr_write_recheck and part.leader == i and part.leader_epoch == b.leader_epoch
                      and part.isr == isr):
                    nb = _replica_side(b, b.seen_controller_epoch, b.leader_epoch, False, i, isr, part.zk_version)
                    yield f"{label}: BADVERSION, the znode holds it already", _with_partition(
                        s, part, _set(brokers, i - 1, nb))

    @action
    def isr_change_notification(p, s):
        """leader_isr_write only: the controller handles ``/isr_change_notification``
        (``IsrChangeNotification``): it re-reads the partition znode, whose leader epoch it has
        but whose ISR a leader changed, into its context (and sends UpdateMetadata, a separate
        send step here)."""
        if not p.leader_isr_write:
            return
        part = s.partition
        for c, cb in enumerate(s.brokers, 1):
            if (_is_controller(c, cb) and cb.context_leader_epoch == part.leader_epoch
                    and cb.context_zk_version != part.zk_version):
                nb = _controller_side(cb, cb.session, cb.active_controller, cb.epoch, cb.epoch_zk_version,
                                      part.leader_epoch, part.leader, part.isr, part.zk_version)
                yield f"IsrChangeNotification(b{c}, isr={list(part.isr)}, zkVersion={part.zk_version})", \
                    _with_partition(s, part, _set(s.brokers, c - 1, nb))

    @action
    def send_leader_and_isr(p, s):
        """``ControllerChannelManager`` sends LeaderAndIsr with the controller's epoch and cached
        leader epoch to a live broker (sent after every change and on failover; resends model
        retries)."""
        yield from _send(p, s, Kind.LEADER_AND_ISR)

    @action
    def send_update_metadata(p, s):
        """``ControllerChannelManager`` sends UpdateMetadata with the controller's epoch."""
        yield from _send(p, s, Kind.UPDATE_METADATA)

    @action
    def send_stop_replica(p, s):
        """controlled_shutdown only: ``ControllerChannelManager`` sends StopReplica (deletePartition
        false) with the controller's epoch to a broker in controlled shutdown that does not lead the
        partition (``doControlledShutdown``'s ``OfflineReplica`` transition). It carries no leader
        epoch (that came with KIP-570, Kafka 2.6, and is not modelled)."""
        if p.controlled_shutdown:
            yield from _send(p, s, Kind.STOP_REPLICA)

    # -- the network and the brokers' request handling ----------------------------------------

    @action
    def handle_request(p, s):
        """A broker handles an in-flight request (``ReplicaManager.becomeLeaderOrFollower`` /
        ``maybeUpdateMetadataCache``).

        With fencing=epoch or zkversion a request whose controller epoch is below the broker's
        ``controllerEpoch`` is rejected (STALE_CONTROLLER_EPOCH / ControllerMovedException);
        otherwise the broker raises its controllerEpoch to the request's. With fencing=none it
        applies every request. LeaderAndIsr then applies the partition's leader epoch only if it
        is higher than the one the broker has (the per-partition leader epoch check, which every
        variant keeps), and with it the leader, ISR and zkVersion (leader_isr_write); a replica
        that StopReplica stopped starts again (``makeLeader`` / ``makeFollower``). StopReplica
        (``ReplicaManager.stopReplicas``) stops the replica.
        """
        bag = s.in_flight
        prev = None
        for k, r in enumerate(bag):
            if r == prev:
                continue
            prev = r
            rest = bag[:k] + bag[k + 1:]
            i = r.dest
            b = s.brokers[i - 1]
            # broker_epoch=False: a request to a crashed broker waits for the restart (with the
            # flag on, a crash drops them, so every request is to a running broker).
            if not p.broker_epoch and not b.up:
                continue
            stale = r.controller_epoch < b.seen_controller_epoch
            if stale and p.fencing != "none":
                yield f"Reject{_describe(r)}: STALE_CONTROLLER_EPOCH", \
                    ControllerState(s.controller, s.controller_epoch, s.controller_epoch_zk_version, s.partition,
                                    s.brokers, rest, s.sent, s.expiries, s.crashes, s.stale_applied, s.unfenced_write)
                continue
            # With fencing=none the broker still remembers the highest epoch it has seen; it just
            # does not reject anything below it.
            seen = b.seen_controller_epoch if stale else r.controller_epoch
            if r.kind == Kind.LEADER_AND_ISR and r.leader_epoch > b.leader_epoch:
                nb = _replica_side(b, seen, r.leader_epoch, False, r.leader, r.isr, r.zk_version)
            elif p.controlled_shutdown and r.kind == Kind.STOP_REPLICA:
                nb = _replica_side(b, seen, b.leader_epoch, True, b.leader, b.isr, b.zk_version)
            else:
                nb = _replica_side(b, seen, b.leader_epoch, b.stopped, b.leader, b.isr, b.zk_version)
            yield f"Handle{_describe(r)}", \
                ControllerState(s.controller, s.controller_epoch, s.controller_epoch_zk_version, s.partition,
                                _set(s.brokers, i - 1, nb), rest, s.sent, s.expiries, s.crashes,
                                s.stale_applied or stale, s.unfenced_write)

    @action
    def drop_request(p, s):
        """The network loses an in-flight request."""
        bag = s.in_flight
        prev = None
        for k, r in enumerate(bag):
            if r == prev:
                continue
            prev = r
            yield f"Drop({_describe(r)})", ControllerState(
                s.controller, s.controller_epoch, s.controller_epoch_zk_version, s.partition, s.brokers,
                bag[:k] + bag[k + 1:], s.sent, s.expiries, s.crashes, s.stale_applied, s.unfenced_write)

    @action
    def duplicate_request(p, s):
        """A request is delivered twice (a retry on a new connection), within the in-flight bound."""
        bag = s.in_flight
        if s.sent >= p.requests or len(bag) >= p.in_flight:
            return
        prev = None
        for k, r in enumerate(bag):
            if r == prev:
                continue
            prev = r
            yield f"Duplicate({_describe(r)})", ControllerState(
                s.controller, s.controller_epoch, s.controller_epoch_zk_version, s.partition, s.brokers,
                bag[:k] + (r,) + bag[k:], s.sent + 1, s.expiries, s.crashes, s.stale_applied, s.unfenced_write)

    # -- view and symmetry ---------------------------------------------------------------------

    def view(p, s) -> ControllerState:
        """The state with the cached controller id of every broker that is not itself controller
        forgotten. Nothing reads that id except the watch step that refreshes it (only
        ``isActive`` matters to a broker here), so states that differ only in it have the same
        futures; without the view the lagging watches of N brokers multiply the state space."""
        return _forget_others(s)

    def symmetry(p, s) -> ControllerState:
        """The least renaming of brokers, in dataclass order, among those that sort them by a
        renaming-invariant signature. Brokers are interchangeable: every broker is a replica, no
        action prefers a broker id, and the initial state is the same under every renaming. The
        representative is taken of the view, so that it is the same for states with one view."""
        return canonical(_forget_others(s))


def _describe(r: Request, sender: int = NONE) -> str:
    """``LeaderAndIsr(b2, controllerEpoch=1, leaderEpoch=1)``, ``UpdateMetadata(b1 -> b2, controllerEpoch=1)``."""
    dest = f"b{r.dest}" if sender == NONE else f"b{sender} -> b{r.dest}"
    if r.old_incarnation:
        dest += " (earlier incarnation)"
    if r.kind == Kind.LEADER_AND_ISR:
        if r.isr:  # leader_isr_write: the partition state it carries
            return (f"LeaderAndIsr({dest}, controllerEpoch={r.controller_epoch}, leaderEpoch={r.leader_epoch}, "
                    f"leader=b{r.leader}, isr={list(r.isr)}, zkVersion={r.zk_version})")
        return f"LeaderAndIsr({dest}, controllerEpoch={r.controller_epoch}, leaderEpoch={r.leader_epoch})"
    if r.kind == Kind.STOP_REPLICA:
        return f"StopReplica({dest}, controllerEpoch={r.controller_epoch})"
    return f"UpdateMetadata({dest}, controllerEpoch={r.controller_epoch})"


def _create_controller(s: ControllerState):
    """The first step of the pre-2.1 election: a live broker creates the ephemeral /controller
    and knows itself controller, with no epoch yet (it acts only once ``increment_epoch`` ran)."""
    for i, b in enumerate(s.brokers, 1):
        if b.up and b.session == Session.LIVE:
            nb = _controller_side(b, Session.LIVE, i, 0, 0, 0, NONE, (), 0)
            yield f"CreateController(b{i})", ControllerState(
                i, s.controller_epoch, s.controller_epoch_zk_version, s.partition, _set(s.brokers, i - 1, nb),
                s.in_flight, s.sent, s.expiries, s.crashes, s.stale_applied, s.unfenced_write)


def _controller_moved(p, s: ControllerState, c: int, cb: Broker) -> ControllerState | None:
    """fencing=zkversion: controller c's partition write is a multi with
    ``CheckOp(/controller_epoch, epochZkVersion)`` (KAFKA-6082); when the check fails the write is a
    ControllerMovedException and ``maybeResign`` re-reads /controller (on the new session, for a
    zombie). The state after that, or None when the write goes ahead."""
    if p.fencing == "zkversion" and cb.epoch_zk_version != s.controller_epoch_zk_version:
        return ControllerState(
            s.controller, s.controller_epoch, s.controller_epoch_zk_version, s.partition,
            _set(s.brokers, c - 1, _resigned(cb, s.controller)), s.in_flight, s.sent, s.expiries, s.crashes,
            s.stale_applied, s.unfenced_write)
    return None


def _partition_written(p, s: ControllerState, brokers: tuple, c: int, leader: int, isr: tuple) -> ControllerState:
    """Controller c's write of the partition znode with this leader and ISR, a new leader epoch and
    zkVersion and its own controller epoch; its context follows the write. A write by a controller
    not holding the current epoch is recorded in ``unfenced_write``."""
    part = s.partition
    cb = brokers[c - 1]
    written = PartitionState(leader, part.leader_epoch + 1, isr, cb.epoch, part.zk_version + 1)
    nb = _reads_partition(p, cb, cb.session, cb.active_controller, cb.epoch, cb.epoch_zk_version, written)
    return ControllerState(
        s.controller, s.controller_epoch, s.controller_epoch_zk_version, written, _set(brokers, c - 1, nb),
        s.in_flight, s.sent, s.expiries, s.crashes, s.stale_applied,
        s.unfenced_write or cb.epoch != s.controller_epoch)


def _with_partition(s: ControllerState, part: PartitionState, brokers: tuple) -> ControllerState:
    return ControllerState(
        s.controller, s.controller_epoch, s.controller_epoch_zk_version, part, brokers, s.in_flight, s.sent,
        s.expiries, s.crashes, s.stale_applied, s.unfenced_write)


def _send(p, s, kind: Kind):
    bag = s.in_flight
    if s.sent >= p.requests or len(bag) >= p.in_flight:
        return
    brokers = s.brokers
    for c, cb in enumerate(brokers, 1):
        if not _is_controller(c, cb):
            continue
        # LeaderAndIsr goes out only once the partition has a leader; UpdateMetadata's partition
        # state does not move a broker's leader epoch, so it carries none here, nor does
        # StopReplica before KIP-570.
        le = cb.context_leader_epoch if kind == Kind.LEADER_AND_ISR else 0
        if kind == Kind.LEADER_AND_ISR and le == 0:
            continue
        for d, db in enumerate(brokers, 1):
            if not db.up:
                continue
            if kind == Kind.STOP_REPLICA:
                if not db.shutting_down or s.partition.leader == d:
                    continue
                r = Request(kind, d, cb.epoch, 0)
            elif kind == Kind.LEADER_AND_ISR:
                r = Request(kind, d, cb.epoch, le, False, cb.context_leader, cb.context_isr, cb.context_zk_version)
            else:
                r = Request(kind, d, cb.epoch, 0)
            if r in bag:  # a second copy is a duplicate_request
                continue
            yield f"Send{_describe(r, c)}", \
                ControllerState(s.controller, s.controller_epoch, s.controller_epoch_zk_version, s.partition,
                                brokers, tuple(sorted(bag + (r,))), s.sent + 1, s.expiries, s.crashes,
                                s.stale_applied, s.unfenced_write)


# -- view and symmetry reduction -------------------------------------------------------------

def _forget_others(s: ControllerState) -> ControllerState:
    brokers = s.brokers
    for i, b in enumerate(brokers, 1):
        if b.active_controller != NONE and b.active_controller != i:
            break
    else:
        return s
    return ControllerState(
        s.controller, s.controller_epoch, s.controller_epoch_zk_version, s.partition,
        tuple(b if b.active_controller == NONE or b.active_controller == i else _controller_side(
            b, b.session, NONE, b.epoch, b.epoch_zk_version, b.context_leader_epoch, b.context_leader, b.context_isr,
            b.context_zk_version) for i, b in enumerate(brokers, 1)),
        s.in_flight, s.sent, s.expiries, s.crashes, s.stale_applied, s.unfenced_write)


def _rename(s: ControllerState, order: tuple[int, ...]) -> ControllerState:
    """The state with broker ``order[k]`` renamed to k+1."""
    new = [0] * (len(order) + 1)
    for k, old in enumerate(order, 1):
        new[old] = k
    brokers = []
    for old in order:
        b = s.brokers[old - 1]
        if b.active_controller != NONE or b.leader != NONE or b.context_leader != NONE or b.isr or b.context_isr:
            b = Broker(b.up, b.session, new[b.active_controller], b.epoch, b.epoch_zk_version, b.context_leader_epoch,
                       b.seen_controller_epoch, b.leader_epoch, b.shutting_down, b.stopped, new[b.leader],
                       _renamed(b.isr, new), b.zk_version, new[b.context_leader], _renamed(b.context_isr, new),
                       b.context_zk_version)
        brokers.append(b)
    part = s.partition
    return ControllerState(
        new[s.controller], s.controller_epoch, s.controller_epoch_zk_version,
        PartitionState(new[part.leader], part.leader_epoch, tuple(sorted(new[r] for r in part.isr)),
                       part.controller_epoch, part.zk_version),
        tuple(brokers),
        tuple(sorted(Request(r.kind, new[r.dest], r.controller_epoch, r.leader_epoch, r.old_incarnation, new[r.leader],
                             _renamed(r.isr, new), r.zk_version)
                     for r in s.in_flight)),
        s.sent, s.expiries, s.crashes, s.stale_applied, s.unfenced_write)


def _renamed(isr: tuple[int, ...], new: list[int]) -> tuple[int, ...]:
    return tuple(sorted(new[r] for r in isr)) if isr else isr


def _base(s: ControllerState, i: int) -> tuple:
    """A signature of broker i that no renaming of brokers changes."""
    b = s.brokers[i - 1]
    return (b.up, b.session, b.epoch, b.epoch_zk_version, b.context_leader_epoch, b.seen_controller_epoch,
            b.leader_epoch, s.controller == i, s.partition.leader == i, i in s.partition.isr,
            b.shutting_down, b.stopped, b.leader == i, len(b.isr), b.zk_version, len(b.context_isr),
            b.context_zk_version,
            tuple(sorted((r.kind, r.controller_epoch, r.leader_epoch, r.old_incarnation, r.leader == i, len(r.isr),
                          r.zk_version)
                         for r in s.in_flight if r.dest == i)))


def canonical(s: ControllerState) -> ControllerState:
    n = len(s.brokers)
    base = [None] + [_base(s, i) for i in range(1, n + 1)]
    sig = {}
    for i in range(1, n + 1):
        a = s.brokers[i - 1].active_controller
        ref = 0 if a == NONE else (1 if a == i else 2)
        sig[i] = (base[i], ref, base[a] if ref == 2 else ())
    order = sorted(range(1, n + 1), key=sig.__getitem__)
    groups: list[list[int]] = []
    for i in order:
        if groups and sig[groups[-1][0]] == sig[i]:
            groups[-1].append(i)
        else:
            groups.append([i])
    if all(len(g) == 1 for g in groups):
        return _rename(s, tuple(order))
    best = None
    for choice in product(*(permutations(g) for g in groups)):
        cand = _rename(s, tuple(x for g in choice for x in g))
        if best is None or cand < best:
            best = cand
    return best
