"""Replication of one partition: leader election, ISR changes, high watermark and truncation.

With ``model=tla`` and its extensions off this is the same state machine as Jason Gustafson's
TLA+ model of Kafka replication (modules KafkaReplication, KafkaTruncateToHighWatermark, Kip101,
Kip279, Kip320FirstTry and Kip320): TLC and kafkamc explore the same distinct states to the same depth
and generate the same number of successors. The parameter ``truncation`` picks the follower
truncation rule:

- ``hw``: truncate to the local high watermark on becoming follower (Kafka up to 0.10.2);
- ``kip101``: KIP-101 (KAFKA-1211, 0.11.0), OffsetsForLeaderEpoch on the epoch of the last record;
- ``kip279``: KIP-279 (KAFKA-6361, 2.0), truncate after the largest offset both logs agree on;
- ``kip320-first-try``: the first KIP-320 design, fencing fetches on the last fetched epoch only
  and truncating lazily; model checking showed it unsafe (the KIP's Rejected Alternatives);
- ``kip320``: KIP-320 (KAFKA-7395, KAFKA-7164, 2.1): fetch, truncation, high watermark advance
  and ISR changes are fenced by the current leader epoch, and the ISR only admits followers that
  reached the start of the leader's epoch (KAFKA-7128). Each rule is a flag: ``fetch_fencing``,
  ``truncation_fencing``, ``kafka_7164`` and ``isr_join``;
- ``fetch``: truncate on fetch (KAFKA-10487, 2.7; KAFKA-10554, 2.8): no truncation on becoming
  follower; a fetch carries the epoch of the follower's last record and a leader whose log
  diverges there answers a divergingEpoch, on which the follower truncates. ``kafka_14704``
  (3.5): it does not apply the leader's high watermark before truncating.

Kafka's rules and the TLA+ model's. Where the TLA+ model departs from Kafka, a flag chooses and
defaults to Kafka's rule: ``keep_last_isr`` (the controller never empties the ISR),
``leaderless_ok`` (``leader-in-isr`` holds without a leader), ``restart_epoch`` (a restarted
broker takes the current leader epoch, onBrokerStartup), ``epoch_cache`` (KIP-101 and KIP-279
truncation on the leader-epoch cache, as LeaderEpochFileCache and AbstractFetcherThread do) and
``isr_join=leso``. ``model=tla`` sets their defaults to the TLA+ model's choices and turns off
``track_visible``, the history variable of ``visible-prefix-stable``; with it the spec is the
TLA+ model (docs/replication.md lists every flag and verdict).

The controller has no state of its own: it writes the quorum (ZooKeeper) partition state and
adds a LeaderAndIsr request to a set that only grows. A replica may act on any request in the set
at any time and any number of times, which models lost, delayed and duplicated requests.

Extensions, all off by default (the reference model does not have them):

- ``crash``: brokers crash and restart. A crashed broker does nothing and forgets its cached
  LeaderAndIsr state; its log and high watermark checkpoint survive. On restart it accepts only
  LeaderAndIsr requests sent after it came back (broker epochs, KIP-380).
- ``unclean`` (unclean.leader.election.enable; per topic since KAFKA-1028, off by default since
  KIP-106): when no member of the ISR is alive, the controller may elect a live replica outside
  the ISR, with the ISR reset to it alone. Implies ``crash``.
- ``acks`` (``0``, ``1`` or ``all``) and ``min_isr`` (min.insync.replicas, KAFKA-1555): the
  producer's acknowledgements, recorded in ``acked``. ``1`` acknowledges on the leader's append;
  ``all`` refuses the append while the leader's ISR is smaller than min.insync.replicas
  (NOT_ENOUGH_REPLICAS) and acknowledges once the high watermark passes the record with the ISR
  still large enough (``Partition.checkEnoughReplicasReachOffset``). ``0`` records nothing.
- ``lossy_crash``: a crash loses an unflushed suffix of the log, any suffix, since Kafka leaves
  flushing to the OS (KIP-101's second scenario; KIP-966's unclean shutdowns). Implies ``crash``.

Representation. One tuple per variable with one entry per replica (replica ``r`` at index
``r-1``); ``0`` is "no leader" and ``-1`` "no leader epoch". A log is a tuple of ``(id, epoch)``
records and its end offset is its length. A replica's cached state is the LeaderAndIsr triple
``(leader, leader_epoch, isr)`` it acts on (its high watermark is kept apart), so accepting a
request stores the request itself. The request set is a tuple in epoch order: every request
carries a fresh epoch, so ``requests[e]`` is the request of leader epoch ``e`` and the tuple is a
canonical form of the set; ``next_leader_epoch`` (its length) and the quorum's leader epoch (one
less) are therefore properties rather than fields.

Where the TLA+ model reaches one successor through two enabled branches (KIP-279's
BecomeFollower on an empty log; KIP-320's ISR shrink of a follower that is both on a stale epoch
and behind), the action yields it twice, so that ``states_generated`` counts as TLC does.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache, wraps
from itertools import permutations

from kafkamc.errors import UsageError
from kafkamc.invariants.liveness import follower_catches_up, follower_learns_high_watermark
from kafkamc.invariants.recoverability import partition_can_recover
from kafkamc.invariants.replication import (
    follower_matches_leader,
    isr_can_recover,
    current_leader_isr_in_zookeeper,
    high_watermark_within_log,
    leader_epochs_assigned,
    one_record_per_epoch_and_offset,
    records_of_epochs_acted_on,
    records_written_before,
    high_watermarks_on_isr,
    followers_copy_their_leader,
    leader_isr_covers_zookeeper,
    request_isr_covers_zookeeper,
    elected_leader_holds_high_watermarks,
    elected_leader_holds_earlier_high_watermarks,
    replicas_act_on_requests,
    records_follow_their_leader,
    acked_records_on_isr,
    acked_records_on_elected_leaders,
    leader_in_isr,
    no_acked_data_loss,
    no_divergence,
    strong_isr,
    visible_prefix_stable,
    weak_isr,
)
from kafkamc.spec import domain as ty
from kafkamc.spec.api import Param, Params, Spec, action

__all__ = [
    "ISR_JOIN_RULES",
    "MODELS",
    "Replication",
    "TLA_DEFAULTS",
    "ReplicationState",
    "TRUNCATION_RULES",
    "diverging_truncation_offset",
    "epoch_cache_truncation_offset",
    "fetch_divergence",
    "kip101_truncation_offset",
    "kip279_truncation_offset",
]

TRUNCATION_RULES = ("hw", "kip101", "kip279", "kip320-first-try", "kip320", "fetch")
MODELS = ("kafka", "tla")
ISR_JOIN_RULES = ("leso", "hw-epoch", "hw")
# What model=tla sets the Kafka-rule flags to when they are not given: the TLA+ model's choices.
TLA_DEFAULTS = {
    "keep_last_isr": False,
    "leaderless_ok": False,
    "restart_epoch": False,
    "epoch_cache": False,
    "isr_join": "hw-epoch",
    "track_visible": False,
}
_HW, _KIP101, _KIP279, _FIRST_TRY, _KIP320, _FETCH = range(6)


def _variant(p: Params) -> int:
    """The code of the truncation rule (a tuple lookup: a global dict is mutable, which ``kafkamc
    prove``'s executor refuses to read)."""
    return TRUNCATION_RULES.index(p.truncation)

# Bounds of the parameters; the label tables below cover them.
_MAX_REPLICAS = 6
_MAX_LOG = 8
_MAX_RECORDS = 16
_MAX_EPOCH = 16

Record = tuple[int, int]
Log = tuple[Record, ...]
Request = tuple[int, int, frozenset[int]]
Ack = tuple[int, int, int]


@dataclass(frozen=True, slots=True, init=False)
class ReplicationState:
    """One partition. Per-replica tuples are indexed by replica id minus one.

    logs[i]: the records (id, leader epoch) of replica i+1, offset 0 first.
    hw[i]: its high watermark.
    replica_state[i]: the LeaderAndIsr state it acts on, (leader, leader_epoch, isr): the request
    it last accepted, or with the ISR it wrote as leader; (0, -1, {}) before any and after a
    crash, (0, quorum epoch at restart, {}) after a restart.
    next_record_id: the id of the next producer record.
    requests: every LeaderAndIsr request sent, (leader, leader_epoch, isr), in epoch order.
    quorum_leader, quorum_isr: the partition state in ZooKeeper (its epoch is the last request's).
    down: crashed brokers (``crash``); crashes: how many so far, counted only under ``max_crashes``.
    acked: acknowledged records (offset, id, epoch) (``acks``).
    visible: the longest prefix consumers have read below a replica's high watermark
    (``track_visible``; a history variable that no action reads).
    """

    logs: tuple[Log, ...]
    hw: tuple[int, ...]
    replica_state: tuple[Request, ...]
    next_record_id: int
    requests: tuple[Request, ...]
    quorum_leader: int
    quorum_isr: frozenset[int]
    down: frozenset[int]
    crashes: int
    acked: tuple[Ack, ...]
    visible: Log = ()

    @property
    def next_leader_epoch(self) -> int:
        return len(self.requests)

    @property
    def quorum_leader_epoch(self) -> int:
        return len(self.requests) - 1


def _init_state(
    self,
    logs,
    hw,
    replica_state,
    next_record_id,
    requests,
    quorum_leader,
    quorum_isr,
    down,
    crashes,
    acked,
    visible=(),
    _logs=ReplicationState.logs.__set__,
    _hw=ReplicationState.hw.__set__,
    _replica_state=ReplicationState.replica_state.__set__,
    _next_record_id=ReplicationState.next_record_id.__set__,
    _requests=ReplicationState.requests.__set__,
    _quorum_leader=ReplicationState.quorum_leader.__set__,
    _quorum_isr=ReplicationState.quorum_isr.__set__,
    _down=ReplicationState.down.__set__,
    _crashes=ReplicationState.crashes.__set__,
    _acked=ReplicationState.acked.__set__,
    _visible=ReplicationState.visible.__set__,
) -> None:
    _logs(self, logs)
    _hw(self, hw)
    _replica_state(self, replica_state)
    _next_record_id(self, next_record_id)
    _requests(self, requests)
    _quorum_leader(self, quorum_leader)
    _quorum_isr(self, quorum_isr)
    _down(self, down)
    _crashes(self, crashes)
    _acked(self, acked)
    _visible(self, visible)


# Building successors dominates exploration, and the __init__ that dataclasses generates for a
# frozen class goes through object.__setattr__ once per field; writing the slots directly halves
# the cost. The signature is the generated one, so the constructor is called as usual.
ReplicationState.__init__ = _init_state

# Precomputed, immutable: replica ranges and every label, so that the actions format nothing.
_RNG = tuple(tuple((r, r - 1) for r in range(1, n + 1)) for n in range(_MAX_REPLICAS + 1))
_R = tuple(range(_MAX_REPLICAS + 1))
_NAME = ("none",) + tuple(f"r{r}" for r in range(1, _MAX_REPLICAS + 1))
_E = range(-1, _MAX_EPOCH + 1)
_O = range(_MAX_LOG + 1)
_L_ELECT = tuple(tuple(f"ControllerElectLeader(r{r}, epoch={e})" for e in _E) for r in _R)
_L_UNCLEAN = tuple(tuple(f"ControllerUncleanElectLeader(r{r}, epoch={e})" for e in _E) for r in _R)
_L_SHRINK = tuple(tuple(f"ControllerShrinkIsr(r{r}, epoch={e})" for e in _E) for r in _R)
_L_LEADER = tuple(tuple(f"BecomeLeader(r{r}, epoch={e})" for e in _E) for r in _R)
_L_WRITE = tuple(tuple(f"LeaderWrite(r{r}, id={i})" for i in range(_MAX_RECORDS)) for r in _R)
_L_ACK = tuple(tuple(f"LeaderAck(r{r}, offset={o})" for o in _O) for r in _R)
_L_LSHRINK = tuple(tuple(f"LeaderShrinkIsr(r{a}, remove=r{b})" for b in _R) for a in _R)
_L_LEXPAND = tuple(tuple(f"LeaderExpandIsr(r{a}, add=r{b})" for b in _R) for a in _R)
_L_INC_HW = tuple(tuple(f"LeaderIncHighWatermark(r{r}, hw={h + 1})" for h in _O) for r in _R)
_L_FETCH = tuple(
    tuple(tuple(f"FollowerFetch(r{f}, leader=r{ld}, offset={o})" for o in _O) for ld in _R) for f in _R
)
_L_FOLLOW = tuple(
    tuple(
        tuple(
            tuple(f"BecomeFollower(r{r}, leader={_NAME[ld]}, epoch={e}, truncate_to={t})" for t in _O)
            for e in _E
        )
        for ld in _R
    )
    for r in _R
)
_L_TRUNCATE = tuple(
    tuple(tuple(f"FollowerTruncate(r{f}, leader=r{ld}, truncate_to={t})" for t in _O) for ld in _R)
    for f in _R
)
_L_DIVERGE = tuple(
    tuple(tuple(f"FollowerFetch(r{f}, leader=r{ld}, diverging, truncate_to={t})" for t in _O) for ld in _R)
    for f in _R
)
_L_DIVERGE_HW = tuple(
    tuple(tuple(f"FollowerFetch(r{f}, leader=r{ld}, diverging, hw={h})" for h in _O) for ld in _R) for f in _R
)
_L_CRASH = tuple(f"BrokerCrash(r{r})" for r in _R)
_L_LOSSY_CRASH = tuple(tuple(f"BrokerCrash(r{r}, log_end_offset={k})" for k in _O) for r in _R)
_L_RESTART = tuple(f"BrokerRestart(r{r})" for r in _R)
_NO_ISR: frozenset[int] = frozenset()
_NO_STATE: Request = (0, -1, _NO_ISR)


def kip279_truncation_offset(leader_log: Log, follower_log: Log) -> int:
    """KIP-279: one past the largest offset at which both logs hold the same record, else 0."""
    if not leader_log:
        return 0
    o = min(len(leader_log), len(follower_log)) - 1
    while o >= 0:
        if leader_log[o] == follower_log[o]:
            return o + 1
        o -= 1
    return 0


def kip101_truncation_offset(leader_log: Log, follower_log: Log, follower_hw: int) -> int:
    """KIP-101: the leader's answer to OffsetsForLeaderEpoch(epoch of the follower's last record).

    The leader's end offset if its own last record has that epoch, else the first offset of a
    larger epoch; with no such offset (or an empty leader log) the follower falls back to its
    high watermark, as before KIP-101.
    """
    if not follower_log:
        return 0
    if not leader_log:
        return follower_hw
    epoch = follower_log[-1][1]
    if leader_log[-1][1] == epoch:
        return len(leader_log)
    for o, rec in enumerate(leader_log):
        if rec[1] > epoch:
            return o
    return follower_hw


def _epoch_cache(log: Log) -> list[tuple[int, int]]:
    """LeaderEpochFileCache of a log: (epoch, start offset) per epoch, in order.

    A broker assigns an entry when it appends the first record of a larger epoch and drops the
    entries at or above a truncation point, so the cache is a function of the log (before
    KAFKA-7415, which also has a new leader assign its epoch at its end offset).
    """
    cache: list[tuple[int, int]] = []
    for o, rec in enumerate(log):
        if not cache or rec[1] > cache[-1][0]:
            cache.append((rec[1], o))
    return cache


def _end_offset_for(cache: list[tuple[int, int]], end: int, epoch: int) -> tuple[int, int] | None:
    """LeaderEpochFileCache.endOffsetFor since KIP-279: (largest epoch <= epoch, its end offset), or None.

    None is UNDEFINED_EPOCH_OFFSET: an empty cache, or an epoch past the latest.
    """
    if not cache:
        return None
    if epoch == cache[-1][0]:
        return epoch, end
    later = [c for c in cache if c[0] > epoch]
    if not later:
        return None
    earlier = [c for c in cache if c[0] <= epoch]
    return (earlier[-1][0] if earlier else epoch), later[0][1]


def epoch_cache_truncation_offset(
    rule: str, leader_log: Log, follower_log: Log, follower_hw: int, leader_epoch: int | None = None
) -> int:
    """Where a follower truncates after OffsetsForLeaderEpoch against the leader's epoch cache, as Kafka does.

    kip101 (0.11, KAFKA-1211): the follower asks for the epoch of its last record; the leader
    answers its end offset if that is its latest epoch, else the start offset of its first
    larger epoch, and undefined when it has none or the epoch precedes its first; the follower
    truncates to min(answer, its end offset), or to its high watermark when undefined.

    kip279 (2.0, KAFKA-6361): the leader answers (the largest epoch <= the requested one, the
    start of the next); a follower that lacks that epoch truncates to the end of its largest
    smaller epoch and asks again (AbstractFetcherThread.getOffsetTruncationState); else it
    truncates to min(its end offset for the epoch, the leader's, its end offset). The rounds run
    in one step. ``leader_epoch`` (KAFKA-7415, 2.1): the leader's cache also holds its current
    epoch from its start offset, which it assigned on becoming leader.
    """
    cache = _epoch_cache(follower_log)
    if not cache:
        return 0
    lcache = _epoch_cache(leader_log)
    lend = len(leader_log)
    if leader_epoch is not None and (not lcache or leader_epoch > lcache[-1][0]):
        lcache.append((leader_epoch, lend))
    if rule == "kip101":
        epoch = cache[-1][0]
        if lcache and epoch == lcache[-1][0]:
            answer = lend
        elif not lcache or epoch < lcache[0][0] or epoch > lcache[-1][0]:
            return min(follower_hw, len(follower_log))
        else:
            answer = next(start for e, start in lcache if e > epoch)
        return min(answer, len(follower_log))
    end = len(follower_log)
    while True:
        reply = _end_offset_for(lcache, lend, cache[-1][0])
        if reply is None:
            return min(follower_hw, end)
        epoch, leader_end = reply
        own = _end_offset_for(cache, end, epoch)
        if own is None:
            return min(leader_end, end)
        own_epoch, own_end = own
        if own_epoch == epoch:
            return min(own_end, leader_end, end)
        end = min(own_end, end)
        cache = [c for c in cache if c[1] < end]
        if not cache:
            return end


def _leader_cache(leader_log: Log, leader_epoch: int | None) -> list[tuple[int, int]]:
    cache = _epoch_cache(leader_log)
    if leader_epoch is not None and (not cache or leader_epoch > cache[-1][0]):
        cache.append((leader_epoch, len(leader_log)))
    return cache


def fetch_divergence(leader_log: Log, leader_epoch: int, follower_log: Log) -> tuple[int, int] | None:
    """Truncate on fetch (KAFKA-10487, 2.7): the divergingEpoch of a leader's fetch response, or None.

    The fetch carries the epoch of the follower's last record; the leader looks it up in its
    epoch cache (with its current epoch from its start offset, KAFKA-7415) and answers
    (epoch, end offset) when its epoch there is smaller or its end offset is below the fetch
    offset (Partition.readRecords); (-1, -1) when it has no such epoch.
    """
    if not follower_log:
        return None
    last = follower_log[-1][1]
    reply = _end_offset_for(_leader_cache(leader_log, leader_epoch), len(leader_log), last)
    if reply is None:
        return (-1, -1)
    if reply[0] < last or reply[1] < len(follower_log):
        return reply
    return None


def diverging_truncation_offset(follower_log: Log, follower_hw: int, diverging: tuple[int, int]) -> int:
    """KAFKA-10554 (2.8): where a follower truncates on a divergingEpoch, one round of KIP-279's walk-back.

    If the follower has the epoch, to the smaller of its own end offset for it and the leader's;
    else to the end of its largest smaller epoch, and the next fetch diverges again. An undefined
    answer falls back to the high watermark.
    """
    epoch, leader_end = diverging
    end = len(follower_log)
    if leader_end < 0:
        return min(follower_hw, end)
    own = _end_offset_for(_epoch_cache(follower_log), end, epoch)
    if own is None:
        return min(leader_end, end)
    if own[0] == epoch:
        return min(own[1], leader_end, end)
    return min(own[1], end)


def _visible_after(s: ReplicationState, visible: Log) -> Log:
    """The longest prefix consumers can have read once in ``s``: ``visible`` extended by what a live
    leader or follower (fetch from follower, KIP-392) serves below its high watermark.

    A replica whose served prefix disagrees with ``visible`` extends nothing; visible-prefix-stable
    reports it.
    """
    v = visible
    down = s.down
    logs = s.logs
    for i, st in enumerate(s.replica_state):
        h = s.hw[i]
        if h <= len(v) or not st[0] or (down and i + 1 in down):
            continue
        served = logs[i][:h]
        if served[: len(v)] == v:
            v = served
    return v


def _tracking(fn):
    """Wrap an action so that each successor carries the visible prefix forward (``track_visible``)."""

    @wraps(fn)
    def step(p, s):
        out = fn(p, s)
        if not p.track_visible:
            return out
        seen = s.visible
        # Every successor is a fresh object that nothing has hashed or shared yet (an action that
        # yields one twice yields the same value twice), so its slot is filled in place.
        for _, n in out:
            _set_visible(n, _visible_after(n, seen))
        return out

    return step


_set_visible = ReplicationState.visible.__set__


def _truncate_diverging(p, s: ReplicationState) -> list:
    """The deferred truncation of truncate on fetch before KAFKA-14704 (see follower_truncate)."""
    fenced = p.fetch_fencing
    logs = s.logs
    rs = s.replica_state
    out = []
    for f, fi in _RNG[p.replicas]:
        fst = rs[fi]
        ld = fst[0]
        if not ld or ld == f:
            continue
        lst = rs[ld - 1]
        if lst[0] != ld or (fenced and fst[1] != lst[1]):
            continue
        flog = logs[fi]
        diverging = fetch_divergence(logs[ld - 1], lst[1], flog)
        if diverging is None:
            continue
        hw = s.hw[fi]
        trunc = diverging_truncation_offset(flog, hw, diverging)
        out.append((_L_TRUNCATE[f][ld][trunc], ReplicationState(
            logs[:fi] + (flog[:trunc],) + logs[fi + 1:],
            s.hw[:fi] + (trunc,) + s.hw[fi + 1:] if trunc < hw else s.hw,
            rs, s.next_record_id, s.requests, s.quorum_leader, s.quorum_isr, s.down, s.crashes, s.acked,
        )))
    return out


def _ack_id(ack: Ack) -> int:
    return ack[1]


class _Renaming:
    """One permutation of replica ids, with what renaming a state needs precomputed."""

    __slots__ = ("ids", "order", "sets")

    def __init__(self, perm: tuple[int, ...], n: int) -> None:
        self.ids = (0,) + perm  # replica r becomes ids[r]; 0 (none) stays 0
        # position j of a renamed per-replica tuple holds the entry of the replica renamed to j+1
        self.order = tuple(perm.index(j + 1) for j in range(n))
        subsets = [frozenset(c for c in range(1, n + 1) if mask >> (c - 1) & 1) for mask in range(1 << n)]
        self.sets = {sub: frozenset(self.ids[r] for r in sub) for sub in subsets}


@lru_cache(maxsize=8)
def _renamings(n: int) -> tuple[_Renaming, ...]:
    return tuple(_Renaming(perm, n) for perm in permutations(range(1, n + 1)))


def _sorted_set(ids: frozenset[int]) -> tuple[int, ...]:
    return tuple(sorted(ids))


class Replication(Spec):
    """Kafka partition replication after Jason Gustafson's TLA+ model (KIP-101, KIP-279, KIP-320)."""

    name = "replication"
    description = (
        "One partition's replication: LeaderAndIsr, ISR changes, high watermark, follower truncation "
        "(hw, KIP-101, KIP-279, KIP-320, truncate on fetch), crashes, unclean election, acks; Kafka's rules "
        "by default, the TLA+ model's with model=tla"
    )
    parameters = (
        Param("replicas", 2, "number of replicas (ids r1..rN)", min=1, max=_MAX_REPLICAS),
        Param("log_size", 2, "log capacity of every replica (offsets 0..log_size-1)", min=1, max=_MAX_LOG),
        Param("max_records", 2, "number of producer records (ids 0..max_records-1)", min=0, max=_MAX_RECORDS,
              lift=True),
        Param("max_leader_epoch", 2, "largest leader epoch the controller may assign", min=0, max=_MAX_EPOCH),
        Param(
            "truncation",
            "kip320",
            "follower truncation rule: hw (0.10), kip101 (0.11), kip279 (2.0), kip320-first-try, kip320 (2.1), "
            "fetch (truncate on fetch, KAFKA-10487/KAFKA-10554, 2.7/2.8)",
            choices=TRUNCATION_RULES,
        ),
        Param("crash", False, "brokers may crash and restart (implied by unclean and lossy_crash)"),
        Param("unclean", False, "unclean.leader.election.enable: elect a live non-ISR replica when no ISR member is alive"),
        Param("acks", "0", "producer acks: 0 (nothing recorded), 1 (on leader append), all", choices=("0", "1", "all")),
        Param("min_isr", 1, "min.insync.replicas, enforced with acks=all", min=1, max=_MAX_REPLICAS),
        Param("lossy_crash", False, "a crash loses an unflushed suffix of the broker's log"),
        Param("max_crashes", 0, "at most this many broker crashes in a behaviour (0: no bound)", min=0, max=8),
        Param(
            "model",
            "kafka",
            "kafka: the flags below default to Kafka's rules; tla: they default to the TLA+ model's (exact TLC parity)",
            choices=MODELS,
        ),
        Param(
            "keep_last_isr",
            True,
            "the controller never empties the ISR, the last member stays "
            "(ZkReplicaStateMachine.doRemoveReplicasFromIsr); model=tla: false",
        ),
        Param(
            "leaderless_ok",
            True,
            "leader-in-isr holds while there is no leader (NoLeader is no replica; KafkaReplication.LeaderInIsr "
            "counts it outside); model=tla: false",
        ),
        Param(
            "restart_epoch",
            True,
            "a restarted broker gets LeaderAndIsr at the current leader epoch (KafkaController.onBrokerStartup; "
            "KIP-380 still rejects older ones); model=tla: only a newer epoch",
        ),
        Param(
            "epoch_cache",
            True,
            "kip101, kip279, kip320: truncate by OffsetsForLeaderEpoch on the leader-epoch cache "
            "(KIP-101, LeaderEpochFileCache; KIP-279's walk-back, AbstractFetcherThread; KAFKA-7415 for kip320); "
            "model=tla: record epochs (kip101), largest common prefix (kip279, kip320)",
        ),
        Param(
            "fetch_fencing",
            True,
            "kip320, fetch: a fetch carries the follower's current leader epoch and a leader on another epoch "
            "fences it, so the hw and the ISR count only followers on its epoch (KIP-320, KAFKA-7395)",
        ),
        Param(
            "truncation_fencing",
            True,
            "kip320: a follower truncates only against a leader in the follower's new epoch "
            "(KIP-320's fenced OffsetsForLeaderEpoch, Kip320.tla rule 2)",
        ),
        Param(
            "kafka_7164",
            True,
            "kip320: a follower truncates on every leader-epoch change, even when the leader stays the same "
            "(KAFKA-7164)",
        ),
        Param(
            "isr_join",
            "leso",
            "kip320, fetch ISR join: leso: follower LEO >= leader epoch start offset and >= hw "
            "(Partition.isFollowerInSync, KAFKA-7128); hw-epoch: the leader's hw reached its epoch "
            "(Kip320.tla); hw: LEO >= hw only (the KAFKA-7128 bug); model=tla: hw-epoch",
            choices=ISR_JOIN_RULES,
        ),
        Param(
            "kafka_14704",
            True,
            "fetch: on a diverging fetch response the follower truncates before it takes the leader's hw "
            "(KAFKA-14704, 3.5); off: it applies the hw first and truncates in a later step",
        ),
        Param(
            "track_visible",
            True,
            "record the prefix consumers have read below a replica's hw (leaders and, KIP-392, followers) "
            "for visible-prefix-stable; model=tla: false (no extra state)",
        ),
    )
    invariants = (
        strong_isr, weak_isr, leader_in_isr, no_acked_data_loss, no_divergence, follower_matches_leader,
        visible_prefix_stable,
        # Auxiliary invariants for ``kafkamc prove`` (not defaults; each holds under ``check`` too).
        leader_epochs_assigned,
        current_leader_isr_in_zookeeper,
        high_watermark_within_log,
        one_record_per_epoch_and_offset,
        records_written_before,
        records_of_epochs_acted_on,
        high_watermarks_on_isr,
        followers_copy_their_leader,
        leader_isr_covers_zookeeper,
        request_isr_covers_zookeeper,
        elected_leader_holds_high_watermarks,
        elected_leader_holds_earlier_high_watermarks,
        replicas_act_on_requests,
        records_follow_their_leader,
        acked_records_on_isr,
        acked_records_on_elected_leaders,
    )
    recoverability = (partition_can_recover, isr_can_recover)
    liveness = (follower_catches_up, follower_learns_high_watermark)
    # Fairness (check -l): a live follower keeps fetching from its leader and a leader keeps
    # advancing its high watermark when it can (replica fetcher threads and the leader's fetch
    # handling run continuously); a broker acts on the LeaderAndIsr requests it is sent (the network
    # delivers eventually); a crashed broker is restarted. Not fair, since nothing forces them:
    # producer writes, the controller's elections and ISR changes (they follow failures), crashes.
    weak_fairness = ("become_leader", "become_follower", "follower_fetch", "follower_truncate",
                     "leader_inc_high_watermark", "broker_restart")
    default_invariants = ("strong-isr", "weak-isr")
    # Tuples indexed by replica id - 1: one swim lane per replica in the trace viewer.
    entities = {"replica": ("logs", "hw", "replica_state")}
    # The visible prefix records what consumers read and steers nothing (_tracking writes it
    # after the action ran): bmc leaves it out of questions that do not read it.
    history = {"visible": "track_visible"}

    def __init__(self, **values) -> None:
        # model=tla changes the defaults of the Kafka-rule flags, not what a user sets explicitly.
        if values.get("model") == "tla":
            values = {**TLA_DEFAULTS, **values}
        super().__init__(**values)

    def validate_params(self, p: Params) -> None:
        if p.max_crashes and not (p.crash or p.unclean or p.lossy_crash):
            raise UsageError(
                f"parameter max_crashes={p.max_crashes} needs crashes; allowed: 0, or set crash, unclean or lossy_crash"
            )
        if p.min_isr > p.replicas:
            raise UsageError(
                f"parameter min_isr={p.min_isr} exceeds replicas={p.replicas}; allowed: an integer in 1..{p.replicas}"
            )

    @staticmethod
    def init_states(p: Params):
        n = p.replicas
        yield ReplicationState(
            logs=((),) * n,
            hw=(0,) * n,
            replica_state=(_NO_STATE,) * n,
            next_record_id=0,
            requests=(),
            quorum_leader=0,
            quorum_isr=frozenset(range(1, n + 1)),
            down=frozenset(),
            crashes=0,
            acked=(),
        )

    @staticmethod
    def domain(p: Params):
        """TypeOK: a log holds up to ``log_size`` records (id, leader epoch); the request history has
        one request per leader epoch assigned so far, so its length, a shape, stays concrete
        (``max_leader_epoch`` is not lifted); ISRs and the crashed brokers are symbolic sets."""
        n = p.replicas
        ids = ty.Set(range(1, n + 1))
        epoch = ty.Int(0, p.max_leader_epoch)
        record = ty.Seq(ty.Int(0, p.max_records - 1), epoch)
        leader_and_isr = ty.Seq(ty.Int(0, n), ty.Int(-1, p.max_leader_epoch), ids)
        crashes = p.crash or p.unclean or p.lossy_crash
        return ty.Record(
            ReplicationState,
            logs=ty.Tuple(ty.Bag(record, p.log_size, sorted=False), n),
            hw=ty.Tuple(ty.Int(0, p.log_size), n),
            replica_state=ty.Tuple(leader_and_isr, n),
            next_record_id=ty.Int(0, p.max_records),
            requests=ty.Bag(ty.Seq(ty.Int(0, n), epoch, ids), p.max_leader_epoch + 1, sorted=False),
            quorum_leader=ty.Int(0, n),
            quorum_isr=ids,
            down=ids if crashes else ty.Const(frozenset()),
            crashes=ty.Int(0, p.max_crashes) if p.max_crashes else ty.Const(0),
            acked=(ty.Const(()) if p.acks == "0" else ty.Bag(
                ty.Seq(ty.Int(0, p.log_size - 1), ty.Int(0, p.max_records - 1), epoch), p.max_records, sorted=False)),
            visible=ty.Bag(record, p.log_size, sorted=False) if p.track_visible else ty.Const(()),
        )

    @staticmethod
    def symmetry(p: Params, s: ReplicationState) -> ReplicationState:
        """Replica ids are interchangeable: the least renaming of ``s`` (TLC's symmetry sets).

        Every invariant of this spec is symmetric in the replica ids.
        """
        best = None
        best_key = None
        for ren in _renamings(p.replicas):
            ids, order, sets = ren.ids, ren.order, ren.sets
            logs = tuple(s.logs[k] for k in order)
            hw = tuple(s.hw[k] for k in order)
            rs = tuple((ids[st[0]], st[1], sets[st[2]]) for st in (s.replica_state[k] for k in order))
            requests = tuple((ids[q[0]], q[1], sets[q[2]]) for q in s.requests)
            qisr = sets[s.quorum_isr]
            down = sets[s.down]
            key = (
                logs, hw, tuple((a, b, _sorted_set(c)) for a, b, c in rs),
                tuple((a, b, _sorted_set(c)) for a, b, c in requests),
                ids[s.quorum_leader], _sorted_set(qisr), _sorted_set(down),
            )
            if best_key is None or key < best_key:
                best_key = key
                best = (logs, hw, rs, requests, ids[s.quorum_leader], qisr, down)
        logs, hw, rs, requests, qld, qisr, down = best
        return ReplicationState(
            logs, hw, rs, s.next_record_id, requests, qld, qisr, down, s.crashes, s.acked, s.visible
        )

    # -- controller ------------------------------------------------------------------------

    @action
    @_tracking
    def controller_elect_leader(p, s):
        """Clean leader election: an ISR member other than the current leader, with a new leader epoch.

        ZooKeeper-era controller (KafkaController.onPartitionReelection). The model lets the
        controller elect at any time, which covers broker failure and preferred election; with
        ``crash`` the new leader must be alive.
        """
        requests = s.requests
        e = len(requests)
        if e > p.max_leader_epoch:
            return ()
        isr = s.quorum_isr
        cur = s.quorum_leader
        down = s.down
        out = []
        for r, _ in _RNG[p.replicas]:
            if r in isr and r != cur and not (down and r in down):
                out.append((_L_ELECT[r][e + 1], ReplicationState(
                    s.logs, s.hw, s.replica_state, s.next_record_id,
                    requests + ((r, e, isr),), r, isr, down, s.crashes, s.acked,
                )))
        return out

    @action
    @_tracking
    def controller_unclean_elect_leader(p, s):
        """``unclean`` only: with no live ISR member, elect a live replica outside the ISR; the ISR becomes it alone.

        unclean.leader.election.enable (KAFKA-1028); the new leader may lack committed records.
        """
        if not p.unclean:
            return ()
        requests = s.requests
        e = len(requests)
        if e > p.max_leader_epoch:
            return ()
        isr = s.quorum_isr
        down = s.down
        if not isr <= down:
            return ()
        out = []
        for r, _ in _RNG[p.replicas]:
            if r not in isr and r not in down:
                new_isr = frozenset((r,))
                out.append((_L_UNCLEAN[r][e + 1], ReplicationState(
                    s.logs, s.hw, s.replica_state, s.next_record_id,
                    requests + ((r, e, new_isr),), r, new_isr, down, s.crashes, s.acked,
                )))
        return out

    @action
    @_tracking
    def controller_shrink_isr(p, s):
        """The controller removes a failed broker from the ISR, bumping the leader epoch.

        A failed leader leaves no leader. ``keep_last_isr`` (Kafka): the controller only
        touches an ISR holding the broker and never empties it, the sole member stays
        (ZkReplicaStateMachine.doRemoveReplicasFromIsr: the "last replica standing" before
        KIP-966). Without it (the TLA+ model) only a sole member that leads stays, so the ISR
        can become empty and the partition stuck without a leader.
        """
        requests = s.requests
        e = len(requests)
        if e > p.max_leader_epoch:
            return ()
        isr = s.quorum_isr
        cur = s.quorum_leader
        out = []
        if p.keep_last_isr:
            for r, _ in _RNG[p.replicas]:
                if r not in isr:
                    continue
                new_leader = 0 if r == cur else cur
                new_isr = isr if len(isr) == 1 else isr - {r}
                out.append((_L_SHRINK[r][e + 1], ReplicationState(
                    s.logs, s.hw, s.replica_state, s.next_record_id,
                    requests + ((new_leader, e, new_isr),), new_leader, new_isr, s.down, s.crashes, s.acked,
                )))
            return out
        for r, _ in _RNG[p.replicas]:
            if r == cur:
                new_leader = 0
                new_isr = isr if (len(isr) == 1 and r in isr) else isr - {r}
            elif r in isr:
                new_leader = cur
                new_isr = isr - {r}
            else:
                continue
            out.append((_L_SHRINK[r][e + 1], ReplicationState(
                s.logs, s.hw, s.replica_state, s.next_record_id,
                requests + ((new_leader, e, new_isr),), new_leader, new_isr, s.down, s.crashes, s.acked,
            )))
        return out

    # -- LeaderAndIsr ----------------------------------------------------------------------

    @action
    @_tracking
    def become_leader(p, s):
        """A replica named leader by a LeaderAndIsr request with a newer leader epoch takes the lead.

        Its high watermark is kept, so it typically starts behind the previous leader's.
        """
        out = []
        rs = s.replica_state
        down = s.down
        for req in s.requests:
            ld = req[0]
            if ld and req[1] > rs[ld - 1][1] and not (down and ld in down):
                i = ld - 1
                out.append((_L_LEADER[ld][req[1] + 1], ReplicationState(
                    s.logs, s.hw, rs[:i] + (req,) + rs[i + 1:],
                    s.next_record_id, s.requests, s.quorum_leader, s.quorum_isr, down, s.crashes, s.acked,
                )))
        return out

    @action
    @_tracking
    def become_follower(p, s):
        """A replica follows the leader of a LeaderAndIsr request with a newer epoch, truncating first.

        hw: truncate to the local high watermark (before KIP-101). kip101: KIP-101's
        OffsetsForLeaderEpoch answer. kip279 and kip320: KIP-279's largest common offset; KIP-320
        (KAFKA-7164) also requires the leader to be in the request's epoch, so that the truncation
        point comes from the leader of that epoch. kip320-first-try: no truncation here; the
        follower truncates when a fetch fails (follower_truncate). A truncation point beyond the
        follower's end offset disables the step, as TruncateTo does in the TLA+ model.
        """
        v = _variant(p)
        rs = s.replica_state
        logs = s.logs
        hws = s.hw
        down = s.down
        requests = s.requests
        rng = _RNG[p.replicas]
        out = []
        cache = p.epoch_cache
        same_leader_truncates = p.kafka_7164 or v != _KIP320
        if v == _KIP320 and p.truncation_fencing:
            # The only request a follower may act on for leader L is the one of L's own epoch,
            # and a replica presuming leadership in epoch e got there through request e.
            for ld, li in rng:
                lst = rs[li]
                if lst[0] != ld:
                    continue
                e = lst[1]
                req = requests[e]
                llog = logs[li]
                for r, i in rng:
                    if rs[i][1] >= e or r == ld or (down and r in down):
                        continue
                    log = logs[i]
                    hw = hws[i]
                    if not same_leader_truncates and rs[i][0] == ld:
                        # Before KAFKA-7164 the fetcher kept running: no truncation.
                        trunc = len(log)
                    elif cache:
                        trunc = epoch_cache_truncation_offset("kip279", llog, log, hw, e)
                    else:
                        trunc = kip279_truncation_offset(llog, log) if log else 0
                    out.append((_L_FOLLOW[r][ld][e + 1][trunc], ReplicationState(
                        logs[:i] + (log[:trunc],) + logs[i + 1:] if trunc < len(log) else logs,
                        hws[:i] + (trunc,) + hws[i + 1:] if trunc < hw else hws,
                        rs[:i] + (req,) + rs[i + 1:],
                        s.next_record_id, requests, s.quorum_leader, s.quorum_isr, down, s.crashes, s.acked,
                    )))
            return out
        for req in requests:
            ld, e, _ = req
            if not ld:
                continue
            li = ld - 1
            if down and ld in down and v != _HW:
                # The truncation point comes from an OffsetsForLeaderEpoch call to the leader.
                continue
            llog = logs[li]
            for r, i in rng:
                if r == ld or rs[i][1] >= e or (down and r in down):
                    continue
                log = logs[i]
                hw = hws[i]
                if v == _FIRST_TRY or v == _FETCH:
                    # Truncation happens on a fetch (follower_truncate, or the fetch response).
                    out.append((_L_FOLLOW[r][ld][e + 1][len(log)], ReplicationState(
                        logs, hws, rs[:i] + (req,) + rs[i + 1:],
                        s.next_record_id, requests, s.quorum_leader, s.quorum_isr, down, s.crashes, s.acked,
                    )))
                    continue
                end = len(log)
                if not same_leader_truncates and rs[i][0] == ld:
                    trunc = end
                elif cache and v != _HW:
                    lst = rs[li]
                    trunc = epoch_cache_truncation_offset(
                        "kip101" if v == _KIP101 else "kip279", llog, log, hw,
                        lst[1] if v == _KIP320 and lst[0] == ld else None,
                    )
                elif v >= _KIP279:
                    trunc = kip279_truncation_offset(llog, log)
                elif v == _KIP101:
                    trunc = kip101_truncation_offset(llog, log, hw)
                else:
                    trunc = hw
                if trunc > end:
                    continue
                nxt = ReplicationState(
                    logs[:i] + (log[:trunc],) + logs[i + 1:] if trunc < end else logs,
                    hws[:i] + (trunc,) + hws[i + 1:] if trunc < hw else hws,
                    rs[:i] + (req,) + rs[i + 1:],
                    s.next_record_id, requests, s.quorum_leader, s.quorum_isr, down, s.crashes, s.acked,
                )
                label = _L_FOLLOW[r][ld][e + 1][trunc]
                out.append((label, nxt))
                if not end and v == _KIP279 and not cache:
                    # Kip279's BecomeFollower has an "empty log" disjunct besides the general
                    # one; TLC generates this successor once for each.
                    out.append((label, nxt))
        return out

    # -- leader ----------------------------------------------------------------------------

    @action
    @_tracking
    def leader_write(p, s):
        """A replica that presumes leadership appends a producer record stamped with its leader epoch.

        Appends are not fenced: a zombie leader accepts them too. With acks=1 the append is the
        acknowledgement; with acks=all it is refused while the leader's ISR is smaller than
        min.insync.replicas (NOT_ENOUGH_REPLICAS, Partition.appendRecordsToLeader).
        """
        rid = s.next_record_id
        if rid >= p.max_records:
            return ()
        acks = p.acks
        min_isr = p.min_isr if acks == "all" else 0
        log_size = p.log_size
        logs = s.logs
        rs = s.replica_state
        out = []
        for r, i in _RNG[p.replicas]:
            st = rs[i]
            if st[0] == r:
                log = logs[i]
                o = len(log)
                if o < log_size and len(st[2]) >= min_isr:
                    e = st[1]
                    # A symbolic id (kafkamc prove lifts max_records) formats lazily instead.
                    label = _L_WRITE[r][rid] if type(rid) is int else f"LeaderWrite(r{r}, id={rid})"
                    out.append((label, ReplicationState(
                        logs[:i] + (log + ((rid, e),),) + logs[i + 1:],
                        s.hw, rs, rid + 1, s.requests, s.quorum_leader, s.quorum_isr, s.down, s.crashes,
                        s.acked + ((o, rid, e),) if acks == "1" else s.acked,
                    )))
        return out

    @action
    @_tracking
    def leader_ack(p, s):
        """acks=all only: the leader acknowledges a record of its epoch once its high watermark passes it.

        The delayed produce completes when the high watermark reaches the record and the ISR
        still has min.insync.replicas members (Partition.checkEnoughReplicasReachOffset; else
        NOT_ENOUGH_REPLICAS_AFTER_APPEND). A leader that moved to another epoch no longer answers.
        """
        if p.acks != "all":
            return ()
        min_isr = p.min_isr
        logs = s.logs
        acked = s.acked
        # A tuple, not a set: ``kafkamc prove`` compares symbolic record ids, it cannot hash them.
        done = tuple(a[1] for a in acked)
        out = []
        for r, i in _RNG[p.replicas]:
            ld, e, isr = s.replica_state[i]
            if ld != r or len(isr) < min_isr:
                continue
            log = logs[i]
            for o in range(min(s.hw[i], len(log))):
                rid, re = log[o]
                if re == e and rid not in done:
                    out.append((_L_ACK[r][o], ReplicationState(
                        logs, s.hw, s.replica_state, s.next_record_id,
                        s.requests, s.quorum_leader, s.quorum_isr, s.down, s.crashes,
                        tuple(sorted(acked + ((o, rid, re),), key=_ack_id)),
                    )))
        return out

    @action
    @_tracking
    def leader_shrink_isr(p, s):
        """The true leader removes a follower that is not caught up; ZooKeeper-era ISR write fenced by zkVersion.

        hw, kip101, kip279: caught up means following this leader and holding the leader's last
        offset; kip320-first-try: and with the leader's epoch at that offset; kip320: following
        the leader's current epoch with an end offset not behind the leader's (without
        ``fetch_fencing`` the leader cannot see a follower's epoch: following it suffices).
        """
        fenced = p.fetch_fencing
        qld = s.quorum_leader
        if not qld:
            return ()
        li = qld - 1
        rs = s.replica_state
        lst = rs[li]
        lepoch = lst[1]
        if lst[0] != qld or lepoch != len(s.requests) - 1:
            return ()
        # Only the true leader may write the ISR (IsTrueLeader), so its ISR is the quorum's.
        v = _variant(p)
        isr = lst[2]
        logs = s.logs
        llog = logs[li]
        end = len(llog)
        out = []
        for r, i in _RNG[p.replicas]:
            if r == qld or r not in isr:
                continue
            twice = False
            fst = rs[i]
            if v >= _KIP320:
                stale = fst[0] != qld or (fenced and fst[1] != lepoch)
                behind = len(logs[i]) < end or (v == _FETCH and fetch_divergence(llog, lepoch, logs[i]) is not None)
                if not (stale or behind):
                    continue
                twice = stale and behind
            elif fst[0] == qld:
                if end == 0:
                    continue
                flog = logs[i]
                if len(flog) >= end and (v != _FIRST_TRY or flog[end - 1][1] == llog[end - 1][1]):
                    continue
            new_isr = isr - {r}
            nxt = ReplicationState(
                logs, s.hw, rs[:li] + ((qld, lepoch, new_isr),) + rs[li + 1:],
                s.next_record_id, s.requests, qld, new_isr, s.down, s.crashes, s.acked,
            )
            label = _L_LSHRINK[qld][r]
            out.append((label, nxt))
            if twice:
                # FencedLeaderShrinkIsr's two reasons are a disjunction; TLC generates each.
                out.append((label, nxt))
        return out

    @action
    @_tracking
    def leader_expand_isr(p, s):
        """The true leader adds a follower that caught up to its high watermark.

        kip320-first-try, and kip320 with ``isr_join=hw-epoch`` (Kip320.tla), also require the
        leader's high watermark to have reached its own epoch, so that the follower holds every
        record of earlier epochs (KAFKA-7128). kip320 with ``isr_join=leso`` (Kafka since 2.1,
        Partition.isFollowerInSync) requires instead the follower's end offset to reach the
        leader epoch start offset, where the leader's records of its epoch begin (its end offset
        when it has none); ``isr_join=hw`` is neither (the KAFKA-7128 bug). With
        ``fetch_fencing`` kip320 requires the follower to be on the leader's current epoch.
        """
        qld = s.quorum_leader
        if not qld:
            return ()
        li = qld - 1
        rs = s.replica_state
        lst = rs[li]
        lepoch = lst[1]
        if lst[0] != qld or lepoch != len(s.requests) - 1:
            return ()
        v = _variant(p)
        isr = lst[2]
        logs = s.logs
        llog = logs[li]
        hw = s.hw[li]
        join = p.isr_join if v >= _KIP320 else "hw-epoch"
        if v >= _FIRST_TRY and join == "hw-epoch" and not (
            hw == len(llog) or (hw < len(llog) and llog[hw][1] == lepoch)
        ):
            return ()
        fenced = p.fetch_fencing
        need = hw
        if v >= _KIP320 and join == "leso":
            leso = next((o for o, rec in enumerate(llog) if rec[1] == lepoch), len(llog))
            need = leso if leso > hw else hw
        out = []
        for r, i in _RNG[p.replicas]:
            fst = rs[i]
            if r in isr or fst[0] != qld:
                continue
            flog = logs[i]
            if v >= _KIP320:
                if (fenced and fst[1] != lepoch) or len(flog) < need:
                    continue
                if v == _FETCH and fetch_divergence(llog, lepoch, flog) is not None:
                    # The leader takes a follower's end offset only from a fetch that does not diverge.
                    continue
            elif hw:
                if len(llog) < hw or len(flog) < hw:
                    continue
                if v == _FIRST_TRY and flog[hw - 1][1] != llog[hw - 1][1]:
                    continue
            new_isr = isr | {r}
            out.append((_L_LEXPAND[qld][r], ReplicationState(
                logs, s.hw, rs[:li] + ((qld, lepoch, new_isr),) + rs[li + 1:],
                s.next_record_id, s.requests, qld, new_isr, s.down, s.crashes, s.acked,
            )))
        return out

    @action
    @_tracking
    def leader_inc_high_watermark(p, s):
        """The leader advances its high watermark by one when every member of its own ISR has the offset.

        hw, kip101, kip279: members need only follow this leader. kip320-first-try: their record
        at the offset has the leader's epoch. kip320: they follow the leader's current epoch
        (KIP-320's fetch fencing; without ``fetch_fencing`` they need only follow this leader).
        """
        v = _variant(p)
        fenced = p.fetch_fencing
        logs = s.logs
        rs = s.replica_state
        out = []
        for r, i in _RNG[p.replicas]:
            lst = rs[i]
            if lst[0] != r:
                # Kip320.tla omits this test for the leader itself, but there a replica that
                # does not presume leadership has either an empty ISR and an empty log or a
                # non-empty ISR, which fails the test for its members: the same transitions.
                continue
            hw = s.hw[i]
            llog = logs[i]
            ok = True
            if v >= _KIP320:
                if hw >= len(llog):
                    continue
                for f in lst[2]:
                    fst = rs[f - 1]
                    if fst[0] != r or (fenced and fst[1] != lst[1]) or len(logs[f - 1]) <= hw:
                        ok = False
                        break
                    if v == _FETCH and f != r and fetch_divergence(llog, lst[1], logs[f - 1]) is not None:
                        ok = False
                        break
            elif v == _FIRST_TRY:
                if hw >= len(llog):
                    continue
                ep = llog[hw][1]
                for f in lst[2]:
                    flog = logs[f - 1]
                    if rs[f - 1][0] != r or len(flog) <= hw or flog[hw][1] != ep:
                        ok = False
                        break
            else:
                if hw >= p.log_size:
                    continue
                for f in lst[2]:
                    if rs[f - 1][0] != r or len(logs[f - 1]) <= hw:
                        ok = False
                        break
            if ok:
                out.append((_L_INC_HW[r][hw], ReplicationState(
                    logs, s.hw[:i] + (hw + 1,) + s.hw[i + 1:], rs,
                    s.next_record_id, s.requests, s.quorum_leader, s.quorum_isr, s.down, s.crashes, s.acked,
                )))
        return out

    # -- follower --------------------------------------------------------------------------

    @action
    @_tracking
    def follower_fetch(p, s):
        """A follower fetches the next record from the replica it follows and takes min(leader hw, its end offset).

        hw, kip101, kip279: no fencing at all. kip320-first-try: the fetch carries the epoch of
        the follower's last record, which must match the leader's. kip320: the fetch carries the
        follower's current leader epoch, which must equal the leader's (KIP-320; ``fetch_fencing``).
        fetch: fenced as kip320, and the fetch also carries the epoch of the follower's last
        record; if the leader's log diverges there it answers a divergingEpoch with no records
        (KAFKA-10487). With ``kafka_14704`` (3.5) the follower then only truncates
        (KAFKA-10554); without it, it first applies the leader's high watermark to its
        diverging log and truncates in a later step (follower_truncate).
        """
        v = _variant(p)
        fenced = p.fetch_fencing
        log_size = p.log_size
        logs = s.logs
        rs = s.replica_state
        out = []
        for f, fi in _RNG[p.replicas]:
            fst = rs[fi]
            ld = fst[0]
            if not ld or ld == f:
                continue
            li = ld - 1
            lst = rs[li]
            if lst[0] != ld:
                continue
            flog = logs[fi]
            llog = logs[li]
            o = len(flog)
            if v == _FETCH:
                if fenced and fst[1] != lst[1]:
                    continue
                diverging = fetch_divergence(llog, lst[1], flog)
                if diverging is not None:
                    hw = s.hw[fi]
                    if p.kafka_14704:
                        trunc = diverging_truncation_offset(flog, hw, diverging)
                        out.append((_L_DIVERGE[f][ld][trunc], ReplicationState(
                            logs[:fi] + (flog[:trunc],) + logs[fi + 1:],
                            s.hw[:fi] + (trunc,) + s.hw[fi + 1:] if trunc < hw else s.hw,
                            rs, s.next_record_id, s.requests, s.quorum_leader, s.quorum_isr, s.down, s.crashes,
                            s.acked,
                        )))
                    else:
                        lhw = s.hw[li]
                        new_hw = lhw if lhw <= o else o
                        if new_hw != hw:
                            out.append((_L_DIVERGE_HW[f][ld][new_hw], ReplicationState(
                                logs, s.hw[:fi] + (new_hw,) + s.hw[fi + 1:],
                                rs, s.next_record_id, s.requests, s.quorum_leader, s.quorum_isr, s.down,
                                s.crashes, s.acked,
                            )))
                    continue
            if o >= len(llog) or o >= log_size:
                continue
            if v == _KIP320:
                if fenced and fst[1] != lst[1]:
                    continue
            elif v == _FIRST_TRY:
                if o and flog[o - 1][1] != llog[o - 1][1]:
                    continue
            lhw = s.hw[li]
            out.append((_L_FETCH[f][ld][o], ReplicationState(
                logs[:fi] + (flog + (llog[o],),) + logs[fi + 1:],
                s.hw[:fi] + (lhw if lhw <= o else o + 1,) + s.hw[fi + 1:],
                rs, s.next_record_id, s.requests, s.quorum_leader, s.quorum_isr, s.down, s.crashes, s.acked,
            )))
        return out

    @action
    @_tracking
    def follower_truncate(p, s):
        """kip320-first-try, and fetch without ``kafka_14704``: a follower that diverges from its leader truncates.

        The first KIP-320 design truncated on a fetch error (the last fetched epoch did not
        match the leader's) rather than on becoming follower; the truncation point is KIP-279's.
        Truncate on fetch before KAFKA-14704 truncated after processing the diverging response
        (the fetcher's next round), at the divergingEpoch's offset (KAFKA-10554).
        """
        if p.truncation == "fetch" and not p.kafka_14704:
            return _truncate_diverging(p, s)
        if p.truncation != "kip320-first-try":
            return ()
        logs = s.logs
        rs = s.replica_state
        out = []
        for f, fi in _RNG[p.replicas]:
            ld = rs[fi][0]
            if not ld or ld == f:
                continue
            li = ld - 1
            if rs[li][0] != ld:
                continue
            flog = logs[fi]
            llog = logs[li]
            fend = len(flog)
            if not (fend > len(llog) or (fend and llog[fend - 1][1] != flog[fend - 1][1])):
                continue
            trunc = kip279_truncation_offset(llog, flog)
            hw = s.hw[fi]
            out.append((_L_TRUNCATE[f][ld][trunc], ReplicationState(
                logs[:fi] + (flog[:trunc],) + logs[fi + 1:],
                s.hw[:fi] + (trunc if trunc < hw else hw,) + s.hw[fi + 1:],
                rs, s.next_record_id, s.requests, s.quorum_leader, s.quorum_isr, s.down, s.crashes, s.acked,
            )))
        return out

    # -- broker failures (extensions) ------------------------------------------------------

    @action
    @_tracking
    def broker_crash(p, s):
        """``crash``: a live broker crashes and forgets its cached leader, leader epoch and ISR.

        Its log and high watermark checkpoint survive. With ``lossy_crash`` the log also loses
        any unflushed suffix (Kafka leaves flushing to the OS; KIP-101's second scenario) and
        the recovered high watermark is clamped to the recovered log end offset.
        """
        if not (p.crash or p.unclean or p.lossy_crash):
            return ()
        max_crashes = p.max_crashes
        crashes = s.crashes
        if max_crashes:
            if crashes >= max_crashes:
                return ()
            crashes += 1
        lossy = p.lossy_crash
        down = s.down
        logs = s.logs
        rs = s.replica_state
        out = []
        for r, i in _RNG[p.replicas]:
            if r in down:
                continue
            log = logs[i]
            hw = s.hw[i]
            for k in range(len(log) + 1) if lossy else (len(log),):
                out.append((_L_LOSSY_CRASH[r][k] if lossy else _L_CRASH[r], ReplicationState(
                    logs[:i] + (log[:k],) + logs[i + 1:] if k < len(log) else logs,
                    s.hw[:i] + (k,) + s.hw[i + 1:] if k < hw else s.hw,
                    rs[:i] + (_NO_STATE,) + rs[i + 1:],
                    s.next_record_id, s.requests, s.quorum_leader, s.quorum_isr,
                    down | {r}, crashes, s.acked,
                )))
        return out

    @action
    @_tracking
    def broker_restart(p, s):
        """``crash``: a crashed broker restarts with its log and high watermark checkpoint.

        It registers with a new broker epoch, so LeaderAndIsr requests sent before the restart
        are rejected (KIP-380): its leader epoch floor is the quorum's, and it acts on the
        controller's next request only. A restarted leader therefore never resumes its old
        leader epoch (in Kafka the controller moves leadership, or sets no leader, with a new
        epoch when the leader's ZooKeeper session expires), and it cannot acknowledge writes
        from before the crash, whose produce requests died with it. The controller treats the
        bounce as a failure (ZooKeeper session expiry, or KIP-380's new broker epoch), so the
        broker restarts only once it is out of the ISR, unless it is the last replica standing
        there (the case KIP-966's unclean shutdown detection addresses).

        ``restart_epoch`` (Kafka; off in the TLA+-era model): the broker also accepts the
        request of the current leader epoch, which KafkaController.onBrokerStartup sends it,
        and it restarts only once ZooKeeper no longer names it leader.
        """
        down = s.down
        if not down:
            return ()
        rs = s.replica_state
        out = []
        qisr = s.quorum_isr
        current = p.restart_epoch
        # restart_epoch: onBrokerStartup sends the current LeaderAndIsr (OnlineReplica), which
        # the broker takes since it has no leader epoch cached; older requests carry a stale
        # broker epoch. The controller processes the failure of a bounced broker before its
        # startup, so a restarted broker is never the leader ZooKeeper still names.
        floor = len(s.requests) - (2 if current else 1)
        qld = s.quorum_leader if current else 0
        for r, i in _RNG[p.replicas]:
            if r in down and r != qld and (r not in qisr or len(qisr) == 1):
                out.append((_L_RESTART[r], ReplicationState(
                    s.logs, s.hw, rs[:i] + ((0, floor, _NO_ISR),) + rs[i + 1:],
                    s.next_record_id, s.requests, s.quorum_leader, s.quorum_isr,
                    down - {r}, s.crashes, s.acked,
                )))
        return out
