"""Invariants of the ``replication-kraft`` spec, in Kafka's words.

They are the safety properties of Jack Vanlightly's TLA+ models (``kafka_replication_v3_5`` and
``kafka_replication_kip_966``): LeaderCompletenessProperty, LeaderCandidateCompletenessProperty,
ReplicationQuorumSupersetProperty, LogMatchingProperty, MetadataLogMatchingProperty,
ConsistentReadProperty, NoCommittedRecordLostGlobally and (KIP-966) MinIsrRecoveryQuorum. The
"true high watermark" is a ghost value: the highest high watermark any leader ever reached, i.e.
what consumers may have read.
"""

from __future__ import annotations

from kafkamc.invariants.api import invariant

__all__ = [
    "leader_completeness",
    "leader_candidate_completeness",
    "replication_quorum_superset",
    "log_matching",
    "metadata_log_matching",
    "consistent_read",
    "no_committed_record_lost",
    "min_isr_recovery_quorum",
]

_RUNNING = 3  # BrokerStatus.RUNNING; the spec module imports this one, not the other way round
_LEADER = 1  # Role.LEADER


def _holds_value(log, value: int) -> bool:
    return any(r.value == value for r in log)


@invariant("leader-completeness", "a running leader the controller elected holds every committed record")
def leader_completeness(p, s) -> bool:
    """A running controller-elected leader has LEO >= the true HW and every acknowledged record."""
    if s.true_hwm <= 1:
        return True
    leader = s.partition.leader
    if leader == 0 or s.brokers[leader - 1].status != _RUNNING:
        return True  # no running leader: nothing to verify
    log = s.logs[leader - 1]
    return len(log) + 1 >= s.true_hwm and all(_holds_value(log, v) for v in s.acked)


@invariant("leader-candidate-completeness",
           "every running member of the controller's ISR (and ELR) has LEO >= the true HW")
def leader_candidate_completeness(p, s) -> bool:
    """Every replica the controller could elect (a running ISR or, KIP-966, ELR member) holds the
    committed log."""
    if s.true_hwm <= 1:
        return True
    return all(len(s.logs[b - 1]) + 1 >= s.true_hwm for b in s.partition.isr | s.partition.elr
               if s.brokers[b - 1].status == _RUNNING)


@invariant("replication-quorum-superset",
           "a current leader's maximal ISR contains the controller's ISR (and equals its ISR with no AlterPartition)")
def replication_quorum_superset(p, s) -> bool:
    """KIP-497's rule: the ISR the leader commits over is a superset of the controller's ISR.

    With ELR (KIP-966) the candidates are the ISR and the ELR, and the rule holds only while the
    leader's ISR is at min ISR (below it the high watermark does not advance)."""
    for b in range(1, len(s.brokers) + 1):
        md = s.metadata[b - 1]
        if s.role[b - 1] != _LEADER or md.leader_epoch != s.partition.leader_epoch:
            continue
        pending = s.pending[b - 1].epoch > md.partition_epoch
        if not pending and md.maximal_isr != md.isr:
            return False
        if p.elr:
            if len(md.isr) >= p.min_isr and not (s.partition.isr | s.partition.elr) <= md.maximal_isr:
                return False
        elif not s.partition.isr <= md.maximal_isr:
            return False
    return True


@invariant("log-matching", "replicas agree on every record below both their high watermarks")
def log_matching(p, s) -> bool:
    n = len(s.brokers)
    for offset in range(1, p.values + 1):
        seen = None
        for b in range(1, n + 1):
            log = s.logs[b - 1]
            if len(log) + 1 > offset and s.hwm[b - 1] > offset:
                value = log[offset - 1].value
                if seen is None:
                    seen = value
                elif value != seen:
                    return False
    return True


@invariant("metadata-log-matching", "every broker's metadata log is a prefix of the controller's")
def metadata_log_matching(p, s) -> bool:
    """Brokers replay the controller's log in order, so each holds a prefix of it (here: its length)."""
    return all(0 <= k <= len(s.metadata_log) for k in s.metadata_offset)


@invariant("consistent-read", "a current leader's log holds every record consumers read, unchanged")
def consistent_read(p, s) -> bool:
    """Records read below the high watermark are never lost or changed on the current leader."""
    if not s.consumed:
        return True
    for b in range(1, len(s.brokers) + 1):
        if s.role[b - 1] != _LEADER or s.metadata[b - 1].leader_epoch != s.partition.leader_epoch:
            continue
        log = s.logs[b - 1]
        if len(log) < len(s.consumed) or log[:len(s.consumed)] != s.consumed:
            return False
    return True


@invariant("no-committed-record-lost", "every acknowledged record is still on some broker")
def no_committed_record_lost(p, s) -> bool:
    """NoCommittedRecordLostGlobally: catches a loss with no electable leader left to show it."""
    return all(any(_holds_value(log, v) for log in s.logs) for v in s.acked)


@invariant("min-isr-recovery-quorum", "with no ISR and no ELR left, the last-known ELR names min ISR replicas")
def min_isr_recovery_quorum(p, s) -> bool:
    """MinIsrRecoveryQuorum (KIP-966): an unclean recovery would have min ISR replicas to choose
    from, the last-known ELR."""
    part = s.partition
    if part.isr or part.elr:
        return True
    return len(part.last_known_elr) == p.min_isr
