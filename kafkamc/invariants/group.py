"""Invariants and action properties of the classic consumer group (spec ``group``).

States are ``kafkamc.spec.group.GroupModel``; partitions are frozensets of 1..partitions. The enum values are
repeated here as ints because the spec module imports this one (tests check they agree).
"""

from __future__ import annotations

from kafkamc.invariants.api import action_property, invariant

__all__ = [
    "no_double_assignment",
    "no_double_ownership",
    "commit_from_current_generation",
    "static_instance_unique",
    "generation_monotonic",
    "valid_group_transitions",
    "VALID_MOVES",
]

_FENCED = 5  # ClientState.FENCED
_DEAD = 4  # GroupState.DEAD

# GroupMetadata.validPreviousStates as (from, to) pairs of GroupState values: Empty 0,
# PreparingRebalance 1, CompletingRebalance 2, Stable 3, Dead 4. Dead may be entered from any state.
VALID_MOVES = frozenset(
    {(3, 1), (2, 1), (0, 1), (1, 2), (2, 3), (1, 0)} | {(x, _DEAD) for x in range(5)}
)


def _instance(p, k: int) -> int:
    if k <= p.static:
        return k
    if k > p.consumers:
        return k - p.consumers
    return 0


@invariant(
    "no-double-assignment",
    "within one generation the coordinator never assigns a partition to two members",
)
def no_double_assignment(p, s) -> bool:
    """G-NoDoubleOwnership as the coordinator stores it (broken by KAFKA-7026's stale claims)."""
    seen: set[int] = set()
    for m in s.members:
        if not seen.isdisjoint(m.assignment):
            return False
        seen.update(m.assignment)
    return True


@invariant(
    "no-double-ownership",
    "no two unfenced consumers of the current generation believe they own the same partition",
)
def no_double_ownership(p, s) -> bool:
    """G-NoDoubleOwnership as live clients believe it: a consumer counts when its member id is a
    member of the group and its generation is the group's (zombies of older generations and
    fenced static members are excluded: generation fencing is what protects against them)."""
    gen = s.generation
    ids = [m.member_id for m in s.members]
    seen: set[int] = set()
    for c in s.clients:
        if c.owned and c.generation == gen and c.state != _FENCED and c.member_id in ids:
            if not seen.isdisjoint(c.owned):
                return False
            seen.update(c.owned)
    return True


@invariant(
    "commit-from-current-generation",
    "an accepted offset commit comes from a member of the group's current generation",
)
def commit_from_current_generation(p, s) -> bool:
    """G-CommitFromCurrentGeneration, judged on the history record of the last accepted commit.
    A previous owner committing during PreparingRebalance still carries the current generation
    (it is bumped only at join completion), so it passes by design."""
    c = s.commit
    return c.member_id == 0 or (c.known_member and c.generation == c.group_generation)


@invariant(
    "static-instance-unique",
    "at most one live consumer holds the member id registered for a group.instance.id",
)
def static_instance_unique(p, s) -> bool:
    """G-StaticInstanceUnique (KIP-345): the processes configured with an instance id that are not
    fenced and hold the member id the coordinator maps that instance to (KAFKA-8500)."""
    for m in s.members:
        if not m.instance:
            continue
        holders = 0
        for k, c in enumerate(s.clients, 1):
            if c.member_id == m.member_id and c.state != _FENCED and _instance(p, k) == m.instance:
                holders += 1
        if holders > 1:
            return False
    return True


@action_property(
    "generation-monotonic",
    "the group's generation id never decreases",
)
def generation_monotonic(p, s, label, t) -> bool:
    """G-GenerationMonotonic: initNextGeneration only increments it."""
    return t.generation >= s.generation


@action_property(
    "valid-group-transitions",
    "every group state change is one GroupMetadata.validPreviousStates allows",
)
def valid_group_transitions(p, s, label, t) -> bool:
    """GroupMetadata.assertValidTransition."""
    return s.group == t.group or (int(s.group), int(t.group)) in VALID_MOVES
