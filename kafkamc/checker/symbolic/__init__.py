"""Symbolic execution of spec functions over Z3: the executor under ``kafkamc prove``.

Shapes stay concrete (tuple lengths, entity counts); ints, bools and the members of small sets are Z3 terms; a branch forks the
path, an index enumerates its values; anything that cannot be treated exactly raises
``SymbolicUnsupported``.
"""

from kafkamc.checker.symbolic.context import PLACEHOLDER
from kafkamc.checker.symbolic.guard import guarded
from kafkamc.checker.symbolic.paths import Budget, Explorer, PathLimit, SolverUnknown, truth
from kafkamc.checker.symbolic.sets import SymSet
from kafkamc.checker.symbolic.state import build, concretize, equal, fixed, member, shapes
from kafkamc.checker.symbolic.values import SymBool, SymInt, is_symbolic

__all__ = [
    "PLACEHOLDER", "guarded", "Budget", "Explorer", "PathLimit", "SolverUnknown", "truth",
    "build", "concretize", "equal", "fixed", "member", "shapes", "SymBool", "SymInt", "SymSet", "is_symbolic",
]
