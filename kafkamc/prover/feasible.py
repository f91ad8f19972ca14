"""The disjuncts of a shape's formula that some state of the shape satisfies.

A shape's ``escapes`` (an action's successor outside the domain) is the disjunction of one
condition per path and per way of leaving the domain: on ``group -p sticky_claims=raw``'s third
shape 44,287 disjuncts, of which 26 hold in some state of the shape at all. ``bmc`` asks it at
every depth, and at depth 7 that question took 19 of the depth's 24 s CPU; the 26 alone say the
same of every state of the shape. So it is cut to them once, before the unrolling: each round asks
for a state of the shape meeting a disjunct not kept yet and keeps those the state meets, until
none is left. A disjunct dropped has no state of the shape, so the formula is unchanged on the
shape's states (the unrolling only asks it under the shape's facts). When the solver cannot say,
or too many disjuncts are satisfiable to keep asking, the formula stays as it is.
"""

from __future__ import annotations

import z3

from kafkamc.checker.symbolic import Budget
from kafkamc.checker.symbolic.interrupt import interruptible_check
from kafkamc.checker.symbolic.values import fast_or

__all__ = ["feasible"]

# Rounds before giving up (each keeps at least one disjunct): the formula is then kept whole.
_MAX_ROUNDS = 128


def feasible(base: z3.BoolRef, formula: z3.BoolRef, budget: Budget) -> z3.BoolRef:
    """``formula`` with the disjuncts no state satisfying ``base`` satisfies left out."""
    parts = formula.children() if z3.is_or(formula) else [formula]
    if len(parts) < 2 or z3.is_false(formula):
        return formula
    solver = z3.Solver()
    solver.set("timeout", budget.remaining_ms())
    solver.add(base)
    picks = [z3.Bool(f"bmc!part{i}") for i in range(len(parts))]
    solver.add([z3.Implies(b, p) for b, p in zip(picks, parts)])
    kept: set[int] = set()
    rest = list(range(len(parts)))
    for _round in range(_MAX_ROUNDS):
        solver.push()
        solver.add(fast_or([picks[i] for i in rest]))
        verdict = interruptible_check(solver)
        budget.checks += 1
        if verdict == z3.unknown:
            return formula
        if verdict == z3.unsat:
            return fast_or([parts[i] for i in sorted(kept)])
        model = solver.model()
        solver.pop()
        hit = {i for i in rest if z3.is_true(model.eval(picks[i], model_completion=True))}
        kept |= hit
        rest = [i for i in rest if i not in hit]
        if not rest:
            return formula
    return formula
