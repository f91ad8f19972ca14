"""``kafkamc prove``: inductive invariants checked with Z3 over the spec's own Python functions.

A sibling of the engines: it stands on the spec API and the symbolic executor
(``kafkamc.checker.symbolic``) and never imports the command line.
"""

from kafkamc.prover.prove import DEFAULT_TIMEOUT, liftable, prove
from kafkamc.prover.result import CTI_FOUND, INIT, PROVED, TYPE_OK, UNKNOWN, Cti, ProofResult, QueryResult

__all__ = [
    "prove", "liftable", "DEFAULT_TIMEOUT", "ProofResult", "QueryResult", "Cti",
    "PROVED", "CTI_FOUND", "UNKNOWN", "TYPE_OK", "INIT",
]
