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
