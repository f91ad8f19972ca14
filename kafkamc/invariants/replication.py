"""Invariants of the ``replication`` spec.

``strong-isr``, ``weak-isr`` and ``leader-in-isr`` are StrongIsr, WeakIsr and LeaderInIsr of
Jason Gustafson's TLA+ model (KafkaReplication.tla).
"""

from __future__ import annotations

from kafkamc.invariants.api import invariant

__all__ = ["strong_isr", "weak_isr", "leader_in_isr"]


def _isr_agrees_below_hw(s, use_quorum_isr: bool) -> bool:
    logs = s.logs
    leader = s.leader
    for i, hw in enumerate(s.hw):
        if hw == 0 or leader[i] != i + 1:
            continue
        log = logs[i]
        prefix = log[:hw]
        for r in s.quorum_isr if use_quorum_isr else s.isr[i]:
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


@invariant("leader-in-isr", "the quorum leader is a member of the quorum ISR (no leader counts as outside)")
def leader_in_isr(p, s) -> bool:
    """LeaderInIsr: quorum leader in quorum ISR. The model starts and passes through states without a leader."""
    return s.quorum_leader in s.quorum_isr
