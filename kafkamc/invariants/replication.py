"""Invariants of the ``replication`` spec.

``strong-isr``, ``weak-isr`` and ``leader-in-isr`` are StrongIsr, WeakIsr and LeaderInIsr of
Jason Gustafson's TLA+ model (KafkaReplication.tla). ``no-acked-data-loss``, ``no-divergence``
and ``follower-matches-leader`` go with the spec's extensions (acks, crashes, unclean election).
"""

from __future__ import annotations

from kafkamc.invariants.api import invariant, recoverable

__all__ = [
    "strong_isr",
    "weak_isr",
    "leader_in_isr",
    "no_acked_data_loss",
    "no_divergence",
    "follower_matches_leader",
    "isr_can_recover",
    "visible_prefix_stable",
    "leader_epochs_assigned",
    "current_leader_isr_in_zookeeper",
    "high_watermark_within_log",
    "one_record_per_epoch_and_offset",
    "records_written_before",
    "records_of_epochs_acted_on",
    "high_watermarks_on_isr",
    "followers_copy_their_leader",
    "leader_isr_covers_zookeeper",
    "request_isr_covers_zookeeper",
    "elected_leader_holds_high_watermarks",
    "elected_leader_holds_earlier_high_watermarks",
    "replicas_act_on_requests",
    "records_follow_their_leader",
    "acked_records_on_isr",
    "acked_records_on_elected_leaders",
]


def _isr_agrees_below_hw(s, use_quorum_isr: bool) -> bool:
    hws = s.hw
    if not any(hws):
        return True
    logs = s.logs
    for i, st in enumerate(s.replica_state):
        hw = hws[i]
        if hw == 0 or st[0] != i + 1:
            continue
        log = logs[i]
        prefix = log[:hw]
        for r in s.quorum_isr if use_quorum_isr else st[2]:
            # An empty ISR makes the quantifier vacuous, even for a leader short of its hw.
            other = logs[r - 1]
            if len(log) < hw or len(other) < hw or other[:hw] != prefix:
                return False
    return True


@invariant(
    "strong-isr",
    "every replica that presumes leadership agrees with every quorum ISR member below its high watermark",
)
def strong_isr(p, s) -> bool:
    """StrongIsr: data below any presumed leader's high watermark is on every member of the true ISR.

    The true (quorum) ISR is what the controller elects from, so a violation is the precursor of
    committed-data loss: KAFKA-1211 (the KIP-101 scenarios) and the KIP-320 first design.
    """
    return _isr_agrees_below_hw(s, True)


@invariant(
    "weak-isr",
    "every replica that presumes leadership agrees with every member of its own ISR below its high watermark",
)
def weak_isr(p, s) -> bool:
    """WeakIsr: the same as strong-isr over the leader's cached ISR instead of the quorum's."""
    return _isr_agrees_below_hw(s, False)


@invariant(
    "leader-in-isr",
    "the quorum leader, if any, is a member of the quorum ISR (with leaderless_ok=false no leader counts as outside)",
)
def leader_in_isr(p, s) -> bool:
    """LeaderInIsr: quorum leader in quorum ISR.

    Kafka's NoLeader (-1) names no replica, so a partition without a leader satisfies it
    (``leaderless_ok``, the default). KafkaReplication.tla counts "no leader" as outside the
    ISR, so there (``model=tla``) the initial state, which has no leader yet, violates it.
    """
    ld = s.quorum_leader
    return (not ld and p.leaderless_ok) or ld in s.quorum_isr


@invariant(
    "no-acked-data-loss",
    "every acknowledged record is in the log of every live replica that presumes leadership in its epoch or later",
)
def no_acked_data_loss(p, s) -> bool:
    """An acknowledged write survives: any leader of the same or a later epoch holds it at its offset.

    A leader never truncates its own log, so a leader elected after the acknowledgement that
    lacks the record will make its followers drop it too. acks=1 loses such records when the
    leader changes before replication; acks=all with min.insync.replicas and clean election
    should not (Kafka's documented durability guarantee).
    """
    if not s.acked:
        return True
    logs = s.logs
    for i, st in enumerate(s.replica_state):
        if st[0] != i + 1:
            continue
        log = logs[i]
        e = st[1]
        for o, rid, re in s.acked:
            if re <= e and (len(log) <= o or log[o] != (rid, re)):
                return False
    return True


@invariant(
    "no-divergence",
    "no two replicas hold different records at an offset below both their high watermarks",
)
def no_divergence(p, s) -> bool:
    """Committed prefixes agree: below both high watermarks, two replicas hold the same records.

    KIP-101 (KAFKA-1211) describes replicas that diverge below their high watermarks after
    truncating to a stale high watermark, most easily after both crash and lose unflushed data.
    """
    logs = s.logs
    hws = s.hw
    n = len(logs)
    for a in range(n):
        ha = hws[a]
        if not ha:
            continue
        la = logs[a]
        for b in range(a + 1, n):
            lb = logs[b]
            m = min(ha, hws[b], len(la), len(lb))
            if m and la[:m] != lb[:m]:
                return False
    return True


@invariant(
    "follower-matches-leader",
    "a follower in its leader's current epoch holds the leader's records below its own high watermark",
)
def follower_matches_leader(p, s) -> bool:
    """No lasting divergence: once a follower has truncated for its leader's epoch, their logs agree below its hw.

    Compared on the offsets both hold. Unlike no-divergence this survives the loss of committed
    data (a lossy crash of the last ISR member) and only fails when the truncation rule keeps a
    record the new leader does not have: KIP-101's second scenario (KAFKA-1211) with the
    high-watermark rule, and the fallback to the high watermark that KIP-279 (KAFKA-6361) removed.
    """
    logs = s.logs
    hws = s.hw
    rs = s.replica_state
    for i, st in enumerate(rs):
        ld = st[0]
        if not ld or ld == i + 1:
            continue
        lst = rs[ld - 1]
        if lst[0] != ld or lst[1] != st[1]:
            continue
        log = logs[i]
        llog = logs[ld - 1]
        m = min(hws[i], len(log), len(llog))
        if m and log[:m] != llog[:m]:
            return False
    return True


@recoverable(
    "isr-can-recover",
    "from every state the partition can again have every live replica in its ISR under a leader that acts "
    "on the current leader epoch",
)
def isr_can_recover(p, s) -> bool:
    """A live replica is never left out of the ISR for good: under-replication heals.

    Good: ZooKeeper names a live leader that acts on the current leader epoch and every live
    replica is in the quorum ISR. A restarted broker that cannot follow the current leader epoch
    waits for the next leader change (the TLA+-era restart, without onBrokerStartup's
    LeaderAndIsr). Bound: with ``max_leader_epoch`` spent and no leader acting on the current
    epoch the controller may not elect, so such a state counts as good.
    """
    ld = s.quorum_leader
    rs = s.replica_state
    if ld and not (s.down and ld in s.down) and rs[ld - 1][0] == ld and rs[ld - 1][1] == len(s.requests) - 1:
        isr = s.quorum_isr
        return all(r in isr or r in s.down for r in range(1, len(rs) + 1))
    return len(s.requests) > p.max_leader_epoch


@invariant(
    "visible-prefix-stable",
    "records consumers read below a high watermark are never lost or changed: every live replica agrees with "
    "them below its hw, and the acting leader holds them all",
)
def visible_prefix_stable(p, s) -> bool:
    """Consumer-visible prefix stability: a record a consumer read below some replica's high watermark stays.

    ``visible`` is the longest prefix that a live leader or follower (fetch from follower, KIP-392)
    has served below its high watermark so far. It must agree with what every live replica serves
    now, and the leader that acts on the current leader epoch must hold all of it: a record that
    was read and is then truncated or replaced breaks it. KAFKA-14704 (a follower that applied the
    leader's high watermark to a diverging log before truncating) violates it.

    Without ``track_visible`` (model=tla) there is no history, and only the present is checked:
    the prefixes that live replicas serve below their high watermarks agree.
    """
    logs = s.logs
    hws = s.hw
    down = s.down
    rs = s.replica_state
    if not p.track_visible:
        served = [logs[i][: hws[i]] for i, st in enumerate(rs) if st[0] and not (down and i + 1 in down)]
        for a in range(len(served)):
            for b in range(a + 1, len(served)):
                m = min(len(served[a]), len(served[b]))
                if served[a][:m] != served[b][:m]:
                    return False
        return True
    v = s.visible
    if not v:
        return True
    for i, st in enumerate(rs):
        if not st[0] or (down and i + 1 in down):
            continue
        m = min(hws[i], len(v))
        if m and logs[i][:m] != v[:m]:
            return False
    ld = s.quorum_leader
    if ld and not (down and ld in down):
        lst = rs[ld - 1]
        if lst[0] == ld and lst[1] == len(s.requests) - 1 and logs[ld - 1][: len(v)] != v:
            return False
    return True


@invariant(
    "leader-epochs-assigned",
    "every leader epoch a replica acts on or a record carries was assigned by the controller, request e "
    "carries epoch e, and a replica that presumes leadership in epoch e was named leader by request e",
)
def leader_epochs_assigned(p, s) -> bool:
    """Leader epochs come only from the controller: each LeaderAndIsr request carries a fresh epoch
    (its place in the request history), a replica takes its epoch from a request it accepted, and a
    leader stamps its records with its own epoch (KIP-101's leader epoch in every batch). So no
    replica, record or acknowledgement is ahead of the quorum's leader epoch, and a replica presumes
    leadership in epoch e only as the leader request e named. The basis of leader-epoch fencing
    (KIP-320); an auxiliary invariant for ``kafkamc prove``."""
    requests = s.requests
    top = len(requests) - 1
    for e, req in enumerate(requests):
        if req[1] != e:
            return False
    for i, st in enumerate(s.replica_state):
        e = st[1]
        if e > top:
            return False
        if st[0] == i + 1 and (e < 0 or requests[e][0] != i + 1):
            return False
    for log in s.logs:
        for rec in log:
            if rec[1] > top:
                return False
    return True


@invariant(
    "current-leader-isr-in-zookeeper",
    "ZooKeeper's leader is the one the last LeaderAndIsr named, a replica that presumes leadership in "
    "the current leader epoch is that leader and holds ZooKeeper's ISR, and until the leader (live) acts on "
    "the last request ZooKeeper's ISR is the request's",
)
def current_leader_isr_in_zookeeper(p, s) -> bool:
    """The controller writes the partition state and sends LeaderAndIsr with it in one step, and
    afterwards only the leader of the current epoch changes the ISR, writing ZooKeeper and its own
    copy together (conditioned on the zkVersion, so a leader of an older epoch cannot). An auxiliary
    invariant for ``kafkamc prove``."""
    requests = s.requests
    if not requests:
        return not s.quorum_leader
    top = len(requests) - 1
    ld = s.quorum_leader
    if requests[top][0] != ld:
        return False
    rs = s.replica_state
    if (not ld or (rs[ld - 1][1] != top and not (s.down and ld in s.down))) and requests[top][2] != s.quorum_isr:
        return False
    for i, st in enumerate(rs):
        if st[0] == i + 1 and st[1] == top and (i + 1 != s.quorum_leader or st[2] != s.quorum_isr):
            return False
    return True


@invariant(
    "high-watermark-within-log",
    "a replica's high watermark never exceeds its log end offset",
)
def high_watermark_within_log(p, s) -> bool:
    """A leader advances its high watermark only to an offset every ISR member has fetched, itself
    included, and a follower takes min(leader's high watermark, its own log end offset) (KIP-101:
    the follower's high watermark is bounded by its log end; truncation lowers it with the log). An
    auxiliary invariant for ``kafkamc prove``."""
    return all(hw <= len(log) for hw, log in zip(s.hw, s.logs))


@invariant(
    "one-record-per-epoch-and-offset",
    "two replicas holding records of the same leader epoch at the same offset hold the same record",
)
def one_record_per_epoch_and_offset(p, s) -> bool:
    """Log matching for leader epochs (KIP-101: every batch carries its leader's epoch): one leader
    per epoch writes each offset once, and followers copy its records at their offsets, so a record
    is determined by its epoch and offset. An auxiliary invariant for ``kafkamc prove``."""
    logs = s.logs
    for a in range(len(logs)):
        for b in range(a + 1, len(logs)):
            for x, y in zip(logs[a], logs[b]):
                if x[1] == y[1] and x[0] != y[0]:
                    return False
    return True


@invariant(
    "records-written-before",
    "every record a replica holds, has acknowledged or consumers have read was produced already",
)
def records_written_before(p, s) -> bool:
    """Records enter a log only through the leader's append, which takes the producer's next record
    (next_record_id counts them), or a fetch of a record some log holds. An auxiliary invariant
    for ``kafkamc prove``."""
    nxt = s.next_record_id
    return (not any(rec[0] >= nxt for log in s.logs for rec in log)
            and not any(a[1] >= nxt for a in s.acked) and not any(rec[0] >= nxt for rec in s.visible))


@invariant(
    "records-of-epochs-acted-on",
    "with fetches fenced by leader epoch (KIP-320, truncate on fetch) and no crash, a replica holds only records "
    "of leader epochs up to the one it acts on",
)
def records_of_epochs_acted_on(p, s) -> bool:
    """A leader appends records of its own epoch, and with KIP-320 a follower fetches only from a
    leader of its own epoch (FENCED_LEADER_EPOCH otherwise), so every record a replica holds is of
    an epoch it has acted on; a replica's epoch only grows until a crash resets it. Without the
    fencing (a stale follower fetching from a newer leader, the README's kip279 trace) or with
    crashes it does not hold, and says nothing. An auxiliary invariant for ``kafkamc prove``."""
    fenced = p.fetch_fencing and p.truncation in ("kip320", "fetch")
    if not fenced or p.crash or p.unclean or p.lossy_crash:
        return True
    return not any(rec[1] > st[1] for log, st in zip(s.logs, s.replica_state) for rec in log)


def _kip320_without_crashes(p) -> bool:
    """KIP-320 as Kafka runs it (fetch and truncation fenced by leader epoch) and no broker crash:
    then a replica's leader epoch only grows and a follower truncates only against the leader of
    its new epoch. The auxiliaries below are about that configuration and say nothing otherwise."""
    return (p.truncation == "kip320" and p.fetch_fencing and p.truncation_fencing
            and not (p.crash or p.unclean or p.lossy_crash))


@invariant(
    "high-watermarks-on-isr",
    "every member of ZooKeeper's ISR holds the records below every replica's high watermark",
)
def high_watermarks_on_isr(p, s) -> bool:
    """The ISR's promise (KIP-101, KAFKA-1211): a leader advances its high watermark only to an
    offset every member of its ISR has fetched, a follower takes its high watermark from its leader,
    ZooKeeper's ISR only admits a follower that caught up (KAFKA-7128) and otherwise only loses
    members; so every record below any replica's high watermark, committed once, is on every member
    of ZooKeeper's ISR. strong-isr is the case of a replica that presumes leadership; this is the form
    that survives a follower's becoming leader. An auxiliary invariant for ``kafkamc prove``."""
    logs = s.logs
    for j, h in enumerate(s.hw):
        if not h:
            continue
        prefix = logs[j][:h]
        for r in s.quorum_isr:
            other = logs[r - 1]
            if len(other) < h or other[:h] != prefix:
                return False
    return True


@invariant(
    "followers-copy-their-leader",
    "a follower in the leader epoch its leader presumes leadership in holds a prefix of the leader's log",
)
def followers_copy_their_leader(p, s) -> bool:
    """KIP-320's fencing: a follower acts on the LeaderAndIsr of epoch e only once that epoch's
    leader has (a fenced OffsetsForLeaderEpoch), truncates where its log diverges from the leader's
    (KIP-279's walk-back on the leader-epoch cache) and then fetches only from a leader on its epoch
    (FENCED_LEADER_EPOCH otherwise), which only appends; so while both are on epoch e the follower's
    log is a prefix of the leader's. Says nothing for other rules or with crashes. An auxiliary
    invariant for ``kafkamc prove``."""
    if not _kip320_without_crashes(p):
        return True
    logs = s.logs
    rs = s.replica_state
    for i, st in enumerate(rs):
        ld = st[0]
        if not ld or ld == i + 1:
            continue
        lst = rs[ld - 1]
        if lst[1] < st[1]:
            return False
        if lst[0] != ld or lst[1] != st[1]:
            continue
        log = logs[i]
        llog = logs[ld - 1]
        if len(log) > len(llog) or llog[:len(log)] != log:
            return False
    return True


@invariant(
    "leader-isr-covers-zookeeper",
    "while no other member of a presumed leader's ISR has moved past its epoch, ZooKeeper's ISR is within it",
)
def leader_isr_covers_zookeeper(p, s) -> bool:
    """Only the leader of the current epoch adds to ZooKeeper's ISR (conditioned on the zkVersion,
    KAFKA-1382), and it is a member of that ISR; the controller only removes. So while every other
    member of a presumed leader's ISR is on the leader's epoch or an earlier one, none of them has led
    a later epoch, nobody was added since, and ZooKeeper's ISR is within the leader's: a stale leader
    whose ISR still follows it (the only way it can advance its high watermark) counts every member
    of ZooKeeper's ISR. Says nothing for other rules or with crashes (a crash resets the epoch). An
    auxiliary invariant for ``kafkamc prove``."""
    if not _kip320_without_crashes(p):
        return True
    rs = s.replica_state
    for i, st in enumerate(rs):
        if st[0] != i + 1:
            continue
        e = st[1]
        isr = st[2]
        if all(rs[m - 1][1] <= e for m in isr if m != i + 1) and not s.quorum_isr <= isr:
            return False
    return True


@invariant(
    "request-isr-covers-zookeeper",
    "until a member of a LeaderAndIsr request's ISR leads its epoch or moves past it, ZooKeeper's ISR is within it",
)
def request_isr_covers_zookeeper(p, s) -> bool:
    """The request's side of leader-isr-covers-zookeeper: the controller sends request e with
    ZooKeeper's ISR of the moment, and only a leader that acts on a later epoch (or request e's own
    leader, once it leads) adds to ZooKeeper's ISR; until a member of the request's ISR has done
    either, ZooKeeper's ISR stays within the request's. Says nothing for other rules or with crashes.
    An auxiliary invariant for ``kafkamc prove``."""
    if not _kip320_without_crashes(p):
        return True
    rs = s.replica_state
    for e, req in enumerate(s.requests):
        isr = req[2]
        if not any(rs[m - 1][1] > e or (rs[m - 1][0] == m and rs[m - 1][1] == e) for m in isr) \
                and not s.quorum_isr <= isr:
            return False
    return True


@invariant(
    "elected-leader-holds-high-watermarks",
    "the leader a LeaderAndIsr request names holds the records below every replica's high watermark while it "
    "has not moved past the request's epoch and some member of ZooKeeper's ISR has not reached it",
)
def elected_leader_holds_high_watermarks(p, s) -> bool:
    """The leader a request names was in ZooKeeper's ISR when the controller elected it, so it held
    every committed record (high-watermarks-on-isr); records committed afterwards by a stale leader
    are on it too, since a stale leader advances its high watermark only while its whole ISR, which
    covers ZooKeeper's and so the new leader, still follows it. So while a member of ZooKeeper's ISR
    may still become its follower (it is below the request's epoch) and the leader has not moved
    past it, the leader holds every record below any replica's high watermark, and KIP-279's
    truncation against it never cuts a committed record. Says nothing for other rules or with
    crashes. An auxiliary invariant for ``kafkamc prove``."""
    if not _kip320_without_crashes(p):
        return True
    rs = s.replica_state
    logs = s.logs
    for e, req in enumerate(s.requests):
        ld = req[0]
        if not ld or rs[ld - 1][1] > e:
            continue
        if not any(rs[m - 1][1] < e for m in s.quorum_isr):
            continue
        llog = logs[ld - 1]
        for j, h in enumerate(s.hw):
            if h and (len(llog) < h or llog[:h] != logs[j][:h]):
                return False
    return True


@invariant(
    "elected-leader-holds-earlier-high-watermarks",
    "the leader a LeaderAndIsr request names holds the records below the high watermark of every replica "
    "below the request's epoch while it has not moved past that epoch",
)
def elected_leader_holds_earlier_high_watermarks(p, s) -> bool:
    """A replica below epoch e took its high watermark from a leader of an earlier epoch, so what it
    covers was committed before epoch e's leader took the lead: the elected leader was in ZooKeeper's
    ISR, which held it (``high-watermarks-on-isr``), or, elected before the commit, in the committing
    leader's ISR, which fetched it. So a stale leader that acknowledges a record (acks=all) has it on
    the leaders of every later request. Says nothing for other rules or with crashes. An auxiliary
    invariant for ``kafkamc prove``."""
    if not _kip320_without_crashes(p):
        return True
    rs = s.replica_state
    logs = s.logs
    for e, req in enumerate(s.requests):
        ld = req[0]
        if not ld or rs[ld - 1][1] > e:
            continue
        llog = logs[ld - 1]
        for j, h in enumerate(s.hw):
            if h and rs[j][1] < e and (len(llog) < h or llog[:h] != logs[j][:h]):
                return False
    return True


@invariant(
    "replicas-act-on-requests",
    "without crashes a replica's LeaderAndIsr state is its initial one or request e's: a follower holds the "
    "request itself, a leader the one that named it",
)
def replicas_act_on_requests(p, s) -> bool:
    """A broker's partition state comes from the LeaderAndIsr requests it accepts
    (ReplicaManager.becomeLeaderOrFollower): a follower stores the request, a leader the request
    that named it, with the ISR it later writes itself (AlterIsr's ZooKeeper write, KAFKA-1382); only
    a crash resets it, so without crashes it is the initial (no leader, epoch -1, no ISR) or a
    request's. An auxiliary invariant for ``kafkamc prove``."""
    if p.crash or p.unclean or p.lossy_crash:
        return True
    requests = s.requests
    for i, st in enumerate(s.replica_state):
        e = st[1]
        if e < 0:
            if st[0] or st[2]:
                return False
            continue
        if e >= len(requests):
            return False
        req = requests[e]
        if st[0] != i + 1 and st != req:
            return False
        if st[0] == i + 1 and req[0] != i + 1:
            return False
    return True


@invariant(
    "records-follow-their-leader",
    "a record of leader epoch e exists only once request e's leader took the lead, and while that leader "
    "leads epoch e it holds the record at the same offset",
)
def records_follow_their_leader(p, s) -> bool:
    """KIP-101: every batch carries its leader's epoch, and only the leader of epoch e appends
    records with it, once it became leader (request e named it); a leader never truncates its own
    log, and followers copy records at their offsets, so while that leader leads epoch e it holds
    every record of epoch e that any replica holds. Says nothing with crashes (a crash resets the
    leader's epoch, a lossy one cuts its log). An auxiliary invariant for ``kafkamc prove``."""
    if p.crash or p.unclean or p.lossy_crash:
        return True
    requests = s.requests
    rs = s.replica_state
    logs = s.logs
    for log in logs:
        for o, rec in enumerate(log):
            e = rec[1]
            if e >= len(requests):
                return False
            ld = requests[e][0]
            if not ld:
                return False
            lst = rs[ld - 1]
            if lst[1] < e:
                return False
            if lst[0] == ld and lst[1] == e:
                llog = logs[ld - 1]
                if len(llog) <= o or llog[o] != rec:
                    return False
    return True


@invariant(
    "acked-records-on-isr",
    "every acknowledged record is at its offset on every member of ZooKeeper's ISR",
)
def acked_records_on_isr(p, s) -> bool:
    """acks=all (KIP-98's durability, KAFKA-1555): a leader acknowledges a record only once its high
    watermark passed it, and records below a high watermark are on every member of ZooKeeper's ISR
    (``high-watermarks-on-isr``), so an acknowledged record is there too. Fails where acknowledged
    data is lost (acks=1, unclean election, lossy crashes). An auxiliary invariant for ``kafkamc
    prove``."""
    logs = s.logs
    for o, rid, re in s.acked:
        for r in s.quorum_isr:
            log = logs[r - 1]
            if len(log) <= o or log[o] != (rid, re):
                return False
    return True


@invariant(
    "acked-records-on-elected-leaders",
    "every acknowledged record is at its offset on the leader of every LeaderAndIsr request of its epoch or "
    "later that has not moved past that request's epoch, below the high watermark of its own epoch's leader",
)
def acked_records_on_elected_leaders(p, s) -> bool:
    """The leader that acknowledged a record (acks=all) led the record's epoch and had it below its
    high watermark; a leader of a later epoch was elected from ZooKeeper's ISR, which held it, or,
    elected before the acknowledgement, was in the acknowledging leader's ISR and fetched it; and
    KIP-279's truncation against a leader that holds it never cuts it. So the leader of every
    request of the record's epoch or later holds it, until that leader moves past the request's
    epoch. Says nothing for other truncation rules or with crashes. An auxiliary invariant for
    ``kafkamc prove``."""
    if not _kip320_without_crashes(p):
        return True
    logs = s.logs
    rs = s.replica_state
    requests = s.requests
    for o, rid, re in s.acked:
        for e, req in enumerate(requests):
            ld = req[0]
            if e < re or not ld or rs[ld - 1][1] > e:
                continue
            log = logs[ld - 1]
            if len(log) <= o or log[o] != (rid, re):
                return False
            if e == re and rs[ld - 1][0] == ld and rs[ld - 1][1] == e and s.hw[ld - 1] <= o:
                return False
    return True
