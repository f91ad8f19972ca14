"""Predicates on an action's successors, computed once per *skeleton* and substituted.

A query of ``prove`` checks every successor of every path of an action against every target. The
successors of one action differ mostly in their Z3 terms, not in their structure: running each
target's Python function on each successor (``Explorer.formula``) re-explores the same paths with
other terms. Here a successor (with its pre-state, for action properties) is split into its
**skeleton**, its structure with every int, bool and IntEnum leaf, symbolic or concrete, replaced by
a fresh variable (tuple lengths, record types, other constants, and which subtrees are the same
object, are kept), and the terms of those leaves. A target's formula is computed once per
skeleton, on a template state of the fresh variables, and each successor substitutes its own terms.

Why the substitution is exact: a formula of ``Explorer.formula`` is the disjunction, over the paths
of the function, of ``path condition and result``. Its forks do not ask the solver, so its paths
partition the values of the variables whatever they are; only an ``__index__`` enumerates values,
those the solver admits. The template is run with the solver assuming ``C``, that the template's
states are in the spec's domain, so the formula ``F(x)`` equals the function's truth at every
valuation of ``C(x)``, and ``F(t)`` at every valuation where ``C(t)`` holds. ``prove`` uses the
skeleton only for its fast path, one solver call asking for a successor where ``not C(t)`` or any
``not F_i(t)`` holds; when there is none, every target holds (and the successor is in the domain).
When there is one, the query does what it did without skeletons, target by target on the real
successor, so a counterexample is always found and minimised on the exact formulas.

A function that cannot run on the template (an index with too many values over the template,
what the executor refuses) gets no skeleton formula, and that target is computed on the real
successor, exactly as before.
"""

from __future__ import annotations

import dataclasses
import enum
from dataclasses import dataclass, field
from typing import Any, Callable

import z3

from kafkamc.checker.symbolic import Budget, Explorer, SymBool, SymInt, SymSet
from kafkamc.checker.symbolic.context import isolated
from kafkamc.checker.symbolic.state import member
from kafkamc.checker.symbolic.values import as_arith, as_bool, fast_and, fast_not, fast_or, substituted
from kafkamc.errors import SymbolicUnsupported
from kafkamc.spec.api import Params

__all__ = ["Skeletons", "Skeleton", "abstract", "substitute"]


class _NoSkeleton(Exception):
    """The value holds something a template cannot be made of (a list, an unhashable constant)."""


def abstract(*values: Any) -> tuple[Any, list[z3.ExprRef]]:
    """(key, terms): the skeleton of ``values`` as a hashable key, and the Z3 terms of its symbolic
    leaves in the key's order. Int, bool and IntEnum leaves are leaves whether symbolic or concrete
    (a successor's concrete broker id is a variable of the template, so successors that differ only
    in it share a skeleton; the executor treats a value and a term equal to it alike); other
    constants stay in the key with their type. A tuple or record met again (the same object) is a
    reference to its first occurrence, so ``t.brokers is s.brokers`` is decided as on the values."""
    terms: list[z3.ExprRef] = []
    seen: dict[int, int] = {}
    nodes: list[Any] = []  # keeps the objects alive while their ids are keys

    def walk(v: Any) -> Any:
        if isinstance(v, SymInt):
            terms.append(v.z)
            return ("I", v.enum)
        if isinstance(v, SymBool):
            terms.append(v.z)
            return ("B",)
        if isinstance(v, SymSet):  # one bool leaf per possible member (never hashed: it is symbolic)
            terms.extend(v.bits)
            return ("S", v.elems)
        if isinstance(v, int):  # bool and IntEnum included: concrete leaves are variables too
            if isinstance(v, bool):
                terms.append(as_bool(v))
                return ("B",)
            terms.append(as_arith(v))
            return ("I", type(v) if isinstance(v, enum.IntEnum) else None)
        if isinstance(v, tuple) or (dataclasses.is_dataclass(v) and not isinstance(v, type)):
            ref = seen.get(id(v))
            if ref is not None:
                return ("@", ref)
            seen[id(v)] = len(nodes)
            nodes.append(v)
            if isinstance(v, tuple):
                return ("T", tuple(walk(x) for x in v))
            fields = dataclasses.fields(v)
            if not all(f.init for f in fields):
                raise _NoSkeleton(type(v).__name__)
            return ("R", type(v), tuple(walk(getattr(v, f.name)) for f in fields))
        try:
            hash(v)
        except TypeError:
            raise _NoSkeleton(type(v).__name__) from None
        return ("C", type(v), v)

    key = tuple(walk(v) for v in values)
    return key, terms


def _template(key: Any) -> tuple[tuple[Any, ...], list[z3.ExprRef]]:
    """Values of the skeleton ``key`` with a fresh variable per symbolic leaf (in ``abstract``'s order)."""
    variables: list[z3.ExprRef] = []
    nodes: list[Any] = []

    def make(k: Any) -> Any:
        tag = k[0]
        if tag == "I":
            v = z3.Int(f"skeleton!{len(variables)}")
            variables.append(v)
            return SymInt(v, k[1])
        if tag == "B":
            v = z3.Bool(f"skeleton!{len(variables)}")
            variables.append(v)
            return SymBool(v)
        if tag == "S":
            bits = []
            for _ in k[1]:
                v = z3.Bool(f"skeleton!{len(variables)}")
                variables.append(v)
                bits.append(v)
            return SymSet(k[1], tuple(bits))
        if tag == "@":
            return nodes[k[1]]
        if tag == "C":
            return k[2]
        slot = len(nodes)
        nodes.append(None)
        if tag == "T":
            made: Any = tuple(make(x) for x in k[1])
        else:
            cls = k[1]
            made = cls(**{f.name: make(x) for f, x in zip(dataclasses.fields(cls), k[2])})
        nodes[slot] = made
        return made

    return tuple(make(k) for k in key), variables


def substitute(formula: z3.BoolRef, variables: list[z3.ExprRef], terms: list[z3.ExprRef]) -> z3.BoolRef:
    """``formula`` with each variable replaced by its term, in one Z3 call."""
    return substituted(formula, list(zip(variables, terms)))


@dataclass(slots=True)
class _Entry:
    """What is known of one skeleton: its template, domain formula, and formulas per function."""

    values: tuple[Any, ...]
    variables: list[z3.ExprRef]
    in_domain: z3.BoolRef  # C(x): the template's states are in the domain
    model: Any  # a model of C(x) (with the lifted parameters' facts), None when there is none
    formulas: dict[Any, tuple[z3.BoolRef | None, int]] = field(default_factory=dict)  # fn -> (F(x) or None, paths)
    negations: dict[tuple[Any, ...], z3.BoolRef] = field(default_factory=dict)


@dataclass(slots=True)
class Skeleton:
    """One successor seen through its skeleton: ask for formulas over the template, then substitute."""

    entry: _Entry
    terms: list[z3.ExprRef]
    owner: "Skeletons"

    def formula(self, fn: Callable[..., Any], kind: str, budget: Budget) -> z3.BoolRef | None:
        """``fn``'s formula over the template (``kind`` "invariant": of the successor; "action":
        of the step), or None when it cannot be computed there. Its paths are charged to
        ``budget`` when it is computed, the first time it is asked for."""
        return self.owner._formula(self.entry, fn, kind, budget)

    def instantiate(self, formula: z3.BoolRef) -> z3.BoolRef:
        """A formula over the template, said of this successor (its terms substituted)."""
        return substitute(formula, self.entry.variables, self.terms)

    @property
    def in_domain(self) -> z3.BoolRef:
        """C(x): the template's pre-state and successor are in the domain."""
        return self.entry.in_domain

    def negation(self, fns: tuple[Callable[..., Any], ...], parts: Callable[[], list[z3.BoolRef]]) -> z3.BoolRef:
        """``not C(t) or not F_1(t) or ...``: ``parts()`` gives the ``not F_i(x)`` of the functions
        ``fns``, computed once per skeleton and tuple of functions."""
        entry = self.entry
        known = entry.negations.get(fns)
        if known is None:
            known = fast_or([fast_not(entry.in_domain)] + parts())
            entry.negations[fns] = known
        return self.instantiate(known)


class Skeletons:
    """The skeleton formulas of one query: ``p`` are the spec's (symbolic) parameters, ``facts``
    those of the lifted parameters, ``dom`` the spec's domain over ``p``."""

    def __init__(self, p: Params, facts: list[z3.BoolRef], dom: Any) -> None:
        self.p = p
        self.dom = dom
        self.solver = z3.Solver()
        self.solver.add(facts)
        self.entries: dict[Any, _Entry] = {}
        # The entry whose C(x) the solver holds in a scope of its own: the formulas of one
        # skeleton's targets are computed one after the other, and asserting C(x) again for each
        # was a fifth of a Houdini round over 600 members (py-spy). Template variables are shared
        # by name between skeletons, so the scope is left before any other entry's is entered.
        self._scoped: _Entry | None = None

    def _enter(self, entry: _Entry) -> None:
        if self._scoped is not entry:
            self._leave()
            self.solver.push()
            self.solver.add(entry.in_domain)
            self._scoped = entry

    def _leave(self) -> None:
        if self._scoped is not None:
            self.solver.pop()
            self._scoped = None

    def of(self, pre: Any, post: Any) -> Skeleton | None:
        """The skeleton of the step ``pre -> post``, or None when none can be made."""
        try:
            key, terms = abstract(pre, post)
        except _NoSkeleton:
            return None
        entry = self.entries.get(key)
        if entry is None:
            entry = self._entry(key)
        if entry.model is None:
            return None
        return Skeleton(entry, terms, self)

    def _entry(self, key: Any) -> _Entry:
        try:
            values, variables = _template(key)
            in_domain = fast_and([member(self.dom, values[0]), member(self.dom, values[1])])
        except (SymbolicUnsupported, TypeError):
            in_domain, values, variables = z3.BoolVal(False), (), []
        self._leave()
        solver = self.solver
        solver.push()
        solver.add(in_domain)
        model = solver.model() if solver.check() == z3.sat else None
        solver.pop()
        entry = _Entry(values, variables, in_domain, model)
        self.entries[key] = entry
        return entry

    def _formula(self, entry: _Entry, fn: Callable[..., Any], kind: str, budget: Budget) -> z3.BoolRef | None:
        known = entry.formulas.get(fn)
        if known is None:
            known = self._compute(entry, fn, kind, budget)
            entry.formulas[fn] = known
            budget.paths += known[1]
        return known[0]

    def _compute(self, entry: _Entry, fn: Callable[..., Any], kind: str,
                 budget: Budget) -> tuple[z3.BoolRef | None, int]:
        pre, post = entry.values
        args = (self.p, post) if kind == "invariant" else (self.p, pre, "", post)
        self._enter(entry)
        counted = Budget(deadline=budget.deadline, max_paths=budget.max_paths - budget.paths,
                         max_values=budget.max_values)
        try:
            ex = Explorer(self.solver, entry.model, counted, formatting_allowed=False, prune=False)
            with isolated():
                formula = ex.formula(fn, *args)
            return formula, counted.paths
        except SymbolicUnsupported:
            return None, 0
        finally:
            # Solver time is charged where it is spent; the check count (a statistic that should
            # not depend on which worker computed what) is not.
            budget.solver_seconds += counted.solver_seconds
