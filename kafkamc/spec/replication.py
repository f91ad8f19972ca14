"""Replication of one partition: leader election, ISR changes, high watermark and truncation.

With its extensions off this is the same state machine as Jason Gustafson's TLA+ model of Kafka
replication (modules KafkaReplication, KafkaTruncateToHighWatermark, Kip101, Kip279,
Kip320FirstTry and Kip320): TLC and kafkamc explore the same distinct states to the same depth.
The parameter ``truncation`` picks the follower truncation rule:

- ``hw``: truncate to the local high watermark on becoming follower (Kafka up to 0.10.2);
- ``kip101``: KIP-101 (KAFKA-1211, 0.11.0), OffsetsForLeaderEpoch on the epoch of the last record;
- ``kip279``: KIP-279 (KAFKA-6361, 2.0), truncate after the largest offset both logs agree on;
- ``kip320-first-try``: the first KIP-320 design, fencing fetches on the last fetched epoch only
  and truncating lazily; model checking showed it loses committed data, as the KIP's Rejected
  Alternatives say;
- ``kip320``: KIP-320 (KAFKA-7395, KAFKA-7164, 2.1), every fetch, truncation, high watermark
  advance and ISR expansion is fenced by the current leader epoch, and the ISR only admits
  followers that reached the start of the leader's epoch (KAFKA-7128).

The controller has no state of its own: it writes the quorum (ZooKeeper) state and adds a
LeaderAndIsr request to a set that only grows. A replica may act on any request in the set at
any time and any number of times, which models lost, delayed and duplicated requests.

The state keeps one tuple per field with one entry per replica (replica ``r`` at index ``r-1``),
``0`` for "no leader" and ``-1`` for "no leader epoch". A log is a tuple of ``(id, epoch)``
records; its end offset is its length. The set of requests is kept as a tuple in epoch order:
every request has a fresh epoch, so ``requests[e]`` is the request of leader epoch ``e`` and the
tuple is a canonical form of the set.

Where the TLA+ model reaches the same successor through two enabled branches (KIP-279's
BecomeFollower on an empty log, KIP-320's ISR shrink of a follower both on a stale epoch and
behind), the action yields it twice, so that ``states_generated`` counts as TLC does.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from kafkamc.errors import UsageError
from kafkamc.invariants.replication import (
    leader_in_isr,
    strong_isr,
    weak_isr,
)
from kafkamc.spec.api import Param, Params, Spec, action

__all__ = ["Replication", "ReplicationState", "TRUNCATION_RULES"]

TRUNCATION_RULES = ("hw", "kip101", "kip279", "kip320-first-try", "kip320")
_HW, _KIP101, _KIP279, _FIRST_TRY, _KIP320 = range(5)

Record = tuple[int, int]
Log = tuple[Record, ...]
Request = tuple[int, int, frozenset[int]]


@dataclass(frozen=True, slots=True)
class ReplicationState:
    """One partition. Per-replica tuples are indexed by replica id minus one.

    logs[i]: the records (id, leader epoch) of replica i+1, offset 0 first.
    hw, leader_epoch, leader, isr: each replica's high watermark and its cached LeaderAndIsr
    state (leader 0 and leader epoch -1 mean none).
    requests: every LeaderAndIsr request sent, (leader, leader_epoch, isr), in epoch order.
    quorum_*: the partition state in ZooKeeper.
    """

    logs: tuple[Log, ...]
    hw: tuple[int, ...]
    leader_epoch: tuple[int, ...]
    leader: tuple[int, ...]
    isr: tuple[frozenset[int], ...]
    next_record_id: int
    next_leader_epoch: int
    requests: tuple[Request, ...]
    quorum_leader_epoch: int
    quorum_leader: int
    quorum_isr: frozenset[int]


class _Tables:
    """What the actions look up instead of recomputing: replica ranges and every label."""

    __slots__ = (
        "n", "rng", "pairs", "variant", "log_size", "max_records", "max_epoch",
        "elect", "shrink", "become_leader", "write", "leader_shrink", "leader_expand",
        "inc_hw", "fetch", "become_follower", "truncate",
    )

    def __init__(self, n: int, variant: int, log_size: int, max_records: int, max_epoch: int) -> None:
        self.n = n
        self.variant = variant
        self.log_size = log_size
        self.max_records = max_records
        self.max_epoch = max_epoch
        # (replica id, its index) pairs, ascending: the order of every quantifier over replicas.
        self.rng = tuple((r, r - 1) for r in range(1, n + 1))
        self.pairs = tuple((a, a - 1, b, b - 1) for a in range(1, n + 1) for b in range(1, n + 1) if a != b)
        epochs = range(max_epoch + 1)
        ids = range(max_records)
        offsets = range(log_size + 1)
        names = ["none"] + [f"r{r}" for r in range(1, n + 1)]
        self.elect = {(r, e): f"ControllerElectLeader(r{r}, epoch={e})" for r in range(1, n + 1) for e in epochs}
        self.shrink = {(r, e): f"ControllerShrinkIsr(r{r}, epoch={e})" for r in range(1, n + 1) for e in epochs}
        self.become_leader = {
            (r, e): f"BecomeLeader(r{r}, epoch={e})" for r in range(1, n + 1) for e in epochs
        }
        self.write = {(r, i): f"LeaderWrite(r{r}, id={i})" for r in range(1, n + 1) for i in ids}
        self.leader_shrink = {
            (a, b): f"LeaderShrinkIsr(r{a}, remove=r{b})" for a in range(1, n + 1) for b in range(1, n + 1)
        }
        self.leader_expand = {
            (a, b): f"LeaderExpandIsr(r{a}, add=r{b})" for a in range(1, n + 1) for b in range(1, n + 1)
        }
        self.inc_hw = {
            (r, h): f"LeaderIncHighWatermark(r{r}, hw={h + 1})" for r in range(1, n + 1) for h in offsets
        }
        self.fetch = {
            (f, ld, o): f"FollowerFetch(r{f}, leader=r{ld}, offset={o})"
            for f in range(1, n + 1)
            for ld in range(1, n + 1)
            for o in offsets
        }
        self.become_follower = {
            (r, ld, e, t): f"BecomeFollower(r{r}, leader={names[ld]}, epoch={e}, truncate_to={t})"
            for r in range(1, n + 1)
            for ld in range(0, n + 1)
            for e in epochs
            for t in offsets
        }
        self.truncate = {
            (f, ld, t): f"FollowerTruncate(r{f}, leader=r{ld}, truncate_to={t})"
            for f in range(1, n + 1)
            for ld in range(1, n + 1)
            for t in offsets
        }


@lru_cache(maxsize=64)
def _tables_for(n: int, truncation: str, log_size: int, max_records: int, max_epoch: int) -> _Tables:
    return _Tables(n, TRUNCATION_RULES.index(truncation), log_size, max_records, max_epoch)


def _tables(p: Params) -> _Tables:
    return _tables_for(p.replicas, p.truncation, p.log_size, p.max_records, p.max_leader_epoch)


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


class Replication(Spec):
    """Kafka partition replication after Jason Gustafson's TLA+ model (KIP-101, KIP-279, KIP-320)."""

    name = "replication"
    description = (
        "One partition's replication: LeaderAndIsr, ISR changes, high watermark, follower truncation "
        "(hw, KIP-101, KIP-279, KIP-320)"
    )
    parameters = (
        Param("replicas", 2, "number of replicas (ids r1..rN)", min=1, max=6),
        Param("log_size", 2, "log capacity of every replica (offsets 0..log_size-1)", min=1, max=8),
        Param("max_records", 2, "number of producer records (ids 0..max_records-1)", min=0, max=16),
        Param("max_leader_epoch", 2, "largest leader epoch the controller may assign", min=0, max=16),
        Param(
            "truncation",
            "kip320",
            "follower truncation rule: hw (0.10), kip101 (0.11), kip279 (2.0), kip320-first-try, kip320 (2.1)",
            choices=TRUNCATION_RULES,
        ),
    )
    invariants = (strong_isr, weak_isr, leader_in_isr)
    default_invariants = ("strong-isr", "weak-isr")

    @staticmethod
    def init_states(p: Params):
        n = p.replicas
        yield ReplicationState(
            logs=((),) * n,
            hw=(0,) * n,
            leader_epoch=(-1,) * n,
            leader=(0,) * n,
            isr=(frozenset(),) * n,
            next_record_id=0,
            next_leader_epoch=0,
            requests=(),
            quorum_leader_epoch=-1,
            quorum_leader=0,
            quorum_isr=frozenset(range(1, n + 1)),
        )

    # -- controller ------------------------------------------------------------------------

    @action
    def controller_elect_leader(p, s):
        """Clean leader election: any ISR member other than the current leader, with a new leader epoch.

        ZooKeeper-era controller (KafkaController.onPartitionReelection); the model lets the
        controller elect at any time, which covers broker failure and preferred-leader election.
        """
        e = s.next_leader_epoch
        if e > p.max_leader_epoch:
            return ()
        t = _tables(p)
        isr = s.quorum_isr
        cur = s.quorum_leader
        out = []
        for r, _ in t.rng:
            if r in isr and r != cur:
                req = (r, e, isr)
                out.append((t.elect[r, e], ReplicationState(
                    s.logs, s.hw, s.leader_epoch, s.leader, s.isr,
                    s.next_record_id, e + 1, s.requests + (req,), e, r, isr,
                )))
        return out

    @action
    def controller_shrink_isr(p, s):
        """The controller removes a failed broker from the ISR, bumping the leader epoch.

        A failed leader leaves no leader; the last ISR member stays in the ISR, as Kafka keeps
        the "last replica standing" (pre KIP-966).
        """
        e = s.next_leader_epoch
        if e > p.max_leader_epoch:
            return ()
        t = _tables(p)
        isr = s.quorum_isr
        cur = s.quorum_leader
        out = []
        for r, _ in t.rng:
            if r == cur:
                if len(isr) == 1 and r in isr:
                    new_leader, new_isr = 0, isr
                else:
                    new_leader, new_isr = 0, isr - {r}
            elif r in isr:
                new_leader, new_isr = cur, isr - {r}
            else:
                continue
            req = (new_leader, e, new_isr)
            out.append((t.shrink[r, e], ReplicationState(
                s.logs, s.hw, s.leader_epoch, s.leader, s.isr,
                s.next_record_id, e + 1, s.requests + (req,), e, new_leader, new_isr,
            )))
        return out

    # -- LeaderAndIsr ----------------------------------------------------------------------

    @action
    def become_leader(p, s):
        """A replica named leader by a LeaderAndIsr request with a newer leader epoch takes the lead.

        Its high watermark is kept, so it typically starts behind the previous leader's.
        """
        out = []
        t = _tables(p)
        leader_epoch = s.leader_epoch
        for req in s.requests:
            ld, e, isr = req
            if ld and e > leader_epoch[ld - 1]:
                i = ld - 1
                out.append((t.become_leader[ld, e], ReplicationState(
                    s.logs, s.hw,
                    leader_epoch[:i] + (e,) + leader_epoch[i + 1:],
                    s.leader[:i] + (ld,) + s.leader[i + 1:],
                    s.isr[:i] + (isr,) + s.isr[i + 1:],
                    s.next_record_id, s.next_leader_epoch, s.requests,
                    s.quorum_leader_epoch, s.quorum_leader, s.quorum_isr,
                )))
        return out

    @action
    def become_follower(p, s):
        """A replica follows the leader of a LeaderAndIsr request with a newer epoch, truncating first.

        hw: truncate to the local high watermark (pre KIP-101). kip101: KIP-101's
        OffsetsForLeaderEpoch answer. kip279 and kip320: KIP-279's largest common offset; KIP-320
        (KAFKA-7164) also requires the leader to be in the request's epoch, so that the truncation
        point comes from the leader of that epoch. kip320-first-try: no truncation here; the
        follower truncates lazily (follower_truncate).
        """
        t = _tables(p)
        v = t.variant
        requests = s.requests
        leader_epoch = s.leader_epoch
        logs = s.logs
        leader = s.leader
        out = []
        for ld, li, r, i in t.pairs:
            le = leader_epoch[i]
            for req in requests[le + 1:] if le >= 0 else requests:
                if req[0] != ld:
                    continue
                e = req[1]
                log = logs[i]
                hw = s.hw[i]
                if v == _KIP320:
                    if leader[li] != ld or leader_epoch[li] != e:
                        continue
                    trunc = kip279_truncation_offset(logs[li], log)
                elif v == _KIP279:
                    trunc = kip279_truncation_offset(logs[li], log)
                elif v == _FIRST_TRY:
                    nxt = ReplicationState(
                        logs, s.hw,
                        leader_epoch[:i] + (e,) + leader_epoch[i + 1:],
                        leader[:i] + (ld,) + leader[i + 1:],
                        s.isr[:i] + (req[2],) + s.isr[i + 1:],
                        s.next_record_id, s.next_leader_epoch, requests,
                        s.quorum_leader_epoch, s.quorum_leader, s.quorum_isr,
                    )
                    out.append((t.become_follower[r, ld, e, len(log)], nxt))
                    continue
                elif v == _KIP101:
                    trunc = kip101_truncation_offset(logs[li], log, hw)
                else:
                    trunc = hw
                if trunc > len(log):
                    continue
                nxt = ReplicationState(
                    logs[:i] + (log[:trunc],) + logs[i + 1:] if trunc < len(log) else logs,
                    s.hw[:i] + (trunc if trunc < hw else hw,) + s.hw[i + 1:] if trunc < hw else s.hw,
                    leader_epoch[:i] + (e,) + leader_epoch[i + 1:],
                    leader[:i] + (ld,) + leader[i + 1:],
                    s.isr[:i] + (req[2],) + s.isr[i + 1:],
                    s.next_record_id, s.next_leader_epoch, requests,
                    s.quorum_leader_epoch, s.quorum_leader, s.quorum_isr,
                )
                label = t.become_follower[r, ld, e, trunc]
                out.append((label, nxt))
                if v == _KIP279 and not log:
                    # Kip279's BecomeFollower has an "empty log" disjunct besides the general
                    # one; TLC generates this successor once for each.
                    out.append((label, nxt))
        return out

    # -- leader ----------------------------------------------------------------------------

    @action
    def leader_write(p, s):
        """A replica that presumes leadership appends a producer record stamped with its leader epoch.

        Writes are not fenced: a zombie leader accepts them too (acks=1 without KIP-320).
        """
        rid = s.next_record_id
        if rid >= p.max_records:
            return ()
        t = _tables(p)
        out = []
        logs = s.logs
        for r, i in t.rng:
            if s.leader[i] == r:
                log = logs[i]
                if len(log) < t.log_size:
                    out.append((t.write[r, rid], ReplicationState(
                        logs[:i] + (log + ((rid, s.leader_epoch[i]),),) + logs[i + 1:],
                        s.hw, s.leader_epoch, s.leader, s.isr,
                        rid + 1, s.next_leader_epoch, s.requests,
                        s.quorum_leader_epoch, s.quorum_leader, s.quorum_isr,
                    )))
        return out

    @action
    def leader_shrink_isr(p, s):
        """The true leader removes a follower that is not caught up (ZooKeeper-era ISR write, fenced by zkVersion).

        hw, kip101, kip279: caught up means it follows this leader and has the leader's last
        offset. kip320-first-try: and its record there has the leader's epoch. kip320: it
        follows the leader's current epoch and its end offset is not behind.
        """
        qld = s.quorum_leader
        if not qld:
            return ()
        li = qld - 1
        if s.leader[li] != qld or s.leader_epoch[li] != s.quorum_leader_epoch:
            return ()
        # Only the true leader may write the ISR (IsTrueLeader); the quorum ISR equals its own.
        t = _tables(p)
        v = t.variant
        isr = s.isr[li]
        logs = s.logs
        llog = logs[li]
        end = len(llog)
        lepoch = s.leader_epoch[li]
        out = []
        for r, i in t.rng:
            if r == qld or r not in isr:
                continue
            if v == _KIP320:
                stale = s.leader[i] != qld or s.leader_epoch[i] != lepoch
                behind = len(logs[i]) < end
                if not (stale or behind):
                    continue
                times = 2 if (stale and behind) else 1
            else:
                times = 1
                if s.leader[i] == qld:
                    if end == 0:
                        continue
                    flog = logs[i]
                    if len(flog) >= end and (v != _FIRST_TRY or flog[end - 1][1] == llog[end - 1][1]):
                        continue
            new_isr = isr - {r}
            nxt = ReplicationState(
                logs, s.hw, s.leader_epoch, s.leader,
                s.isr[:li] + (new_isr,) + s.isr[li + 1:],
                s.next_record_id, s.next_leader_epoch, s.requests,
                s.quorum_leader_epoch, qld, new_isr,
            )
            label = t.leader_shrink[qld, r]
            out.append((label, nxt))
            if times == 2:
                # FencedLeaderShrinkIsr's two reasons are a disjunction; TLC counts each.
                out.append((label, nxt))
        return out

    @action
    def leader_expand_isr(p, s):
        """The true leader adds a follower that caught up to its high watermark.

        kip320-first-try and kip320 also require the leader's high watermark to have reached
        its own epoch, i.e. the follower has every record of earlier epochs (KAFKA-7128);
        kip320 requires the follower to be on the leader's current epoch (KIP-320).
        """
        qld = s.quorum_leader
        if not qld:
            return ()
        li = qld - 1
        lepoch = s.leader_epoch[li]
        if s.leader[li] != qld or lepoch != s.quorum_leader_epoch:
            return ()
        t = _tables(p)
        v = t.variant
        isr = s.isr[li]
        logs = s.logs
        llog = logs[li]
        hw = s.hw[li]
        if v >= _FIRST_TRY:
            if not (hw == len(llog) or (hw < len(llog) and llog[hw][1] == lepoch)):
                return ()
        out = []
        for r, i in t.rng:
            if r in isr or s.leader[i] != qld:
                continue
            flog = logs[i]
            if v == _KIP320:
                if s.leader_epoch[i] != lepoch or (hw and len(flog) < hw):
                    continue
            elif hw:
                if len(llog) < hw or len(flog) < hw:
                    continue
                if v == _FIRST_TRY and flog[hw - 1][1] != llog[hw - 1][1]:
                    continue
            new_isr = isr | {r}
            out.append((t.leader_expand[qld, r], ReplicationState(
                logs, s.hw, s.leader_epoch, s.leader,
                s.isr[:li] + (new_isr,) + s.isr[li + 1:],
                s.next_record_id, s.next_leader_epoch, s.requests,
                s.quorum_leader_epoch, qld, new_isr,
            )))
        return out

    @action
    def leader_inc_high_watermark(p, s):
        """The leader advances its high watermark by one when every member of its own ISR has the offset.

        hw, kip101, kip279: members need only follow this leader. kip320-first-try: their record
        at the offset has the leader's epoch. kip320: they follow the leader's current epoch
        (KIP-320's fetch fencing).
        """
        t = _tables(p)
        v = t.variant
        logs = s.logs
        leader = s.leader
        out = []
        for r, i in t.rng:
            hw = s.hw[i]
            llog = logs[i]
            if v == _KIP320:
                # FencedLeaderIncHighWatermark: presumed leadership is implied by a non-empty ISR.
                if hw >= len(llog):
                    continue
                lepoch = s.leader_epoch[i]
                ok = True
                for f in s.isr[i]:
                    fi = f - 1
                    if leader[fi] != r or s.leader_epoch[fi] != lepoch or len(logs[fi]) <= hw or leader[i] != r:
                        ok = False
                        break
            else:
                if leader[i] != r:
                    continue
                if v == _FIRST_TRY:
                    if hw >= len(llog):
                        continue
                    ep = llog[hw][1]
                    ok = True
                    for f in s.isr[i]:
                        fi = f - 1
                        flog = logs[fi]
                        if leader[fi] != r or len(flog) <= hw or flog[hw][1] != ep:
                            ok = False
                            break
                else:
                    if hw >= t.log_size:
                        continue
                    ok = True
                    for f in s.isr[i]:
                        fi = f - 1
                        if leader[fi] != r or len(logs[fi]) <= hw:
                            ok = False
                            break
            if ok:
                out.append((t.inc_hw[r, hw], ReplicationState(
                    logs, s.hw[:i] + (hw + 1,) + s.hw[i + 1:], s.leader_epoch, leader, s.isr,
                    s.next_record_id, s.next_leader_epoch, s.requests,
                    s.quorum_leader_epoch, s.quorum_leader, s.quorum_isr,
                )))
        return out

    # -- follower --------------------------------------------------------------------------

    @action
    def follower_fetch(p, s):
        """A follower fetches the next record from the replica it follows and takes min(leader hw, its end offset).

        hw, kip101, kip279: no fencing at all. kip320-first-try: the fetch carries the epoch of
        the follower's last record, which must match the leader's. kip320: the fetch carries the
        follower's current leader epoch, which must equal the leader's (KIP-320).
        """
        t = _tables(p)
        v = t.variant
        logs = s.logs
        leader = s.leader
        out = []
        for f, fi in t.rng:
            ld = leader[fi]
            if not ld or ld == f:
                continue
            li = ld - 1
            if leader[li] != ld:
                continue
            flog = logs[fi]
            llog = logs[li]
            o = len(flog)
            if o >= len(llog) or o >= t.log_size:
                continue
            if v == _KIP320:
                if s.leader_epoch[fi] != s.leader_epoch[li]:
                    continue
            elif v == _FIRST_TRY:
                if o and flog[o - 1][1] != llog[o - 1][1]:
                    continue
            lhw = s.hw[li]
            nhw = lhw if lhw < o + 1 else o + 1
            out.append((t.fetch[f, ld, o], ReplicationState(
                logs[:fi] + (flog + (llog[o],),) + logs[fi + 1:],
                s.hw[:fi] + (nhw,) + s.hw[fi + 1:],
                s.leader_epoch, leader, s.isr,
                s.next_record_id, s.next_leader_epoch, s.requests,
                s.quorum_leader_epoch, s.quorum_leader, s.quorum_isr,
            )))
        return out

    @action
    def follower_truncate(p, s):
        """kip320-first-try only: a follower whose last record disagrees with its leader truncates.

        The first KIP-320 design truncated on a fetch error (the last fetched epoch did not
        match) rather than on becoming follower; the truncation point is KIP-279's.
        """
        t = _tables(p)
        if t.variant != _FIRST_TRY:
            return ()
        logs = s.logs
        leader = s.leader
        out = []
        for f, fi in t.rng:
            ld = leader[fi]
            if not ld or ld == f:
                continue
            li = ld - 1
            if leader[li] != ld:
                continue
            flog = logs[fi]
            llog = logs[li]
            fend = len(flog)
            if not (fend > len(llog) or (fend and llog[fend - 1][1] != flog[fend - 1][1])):
                continue
            trunc = kip279_truncation_offset(llog, flog)
            hw = s.hw[fi]
            out.append((t.truncate[f, ld, trunc], ReplicationState(
                logs[:fi] + (flog[:trunc],) + logs[fi + 1:],
                s.hw[:fi] + (trunc if trunc < hw else hw,) + s.hw[fi + 1:],
                s.leader_epoch, leader, s.isr,
                s.next_record_id, s.next_leader_epoch, s.requests,
                s.quorum_leader_epoch, s.quorum_leader, s.quorum_isr,
            )))
        return out
