"""The state vector of ``bmc``: every state of a spec's declared domain as one valuation of a fixed
set of named Z3 variables, so that a step of the spec is one formula over two copies of the vector.

The domain (``domain(p)``, TypeOK) fixes the names: an int, bool or enum field is one variable
named by its path (``.brokers[0].epoch``), a ``Set`` one bool per possible member
(``.partition.isr.has(1)``). What the domain makes a *shape* (a ``Bag``'s length, a ``Subset`` or
``OneOf`` alternative) is a *site*: one int variable (``#.in_flight: length``) holding which
alternative the state takes. A shape is one assignment of the sites it meets; the variables of
the positions a shape does not have (a bag's elements past its length) are dead in it and carry
nothing. So every shape shares one vector, and a state is the valuation of the live part.

``match`` reads a concrete or symbolic value (an action's successor) against the domain: its
sites, the terms of its live variables, and the condition for it to be in the domain at all (the
bounds of its ints, a bag's order). A value whose structure no shape has gets the condition False.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import z3

from kafkamc.checker.symbolic import SymBool, SymInt, SymSet, build, shapes
from kafkamc.checker.symbolic.sets import as_members
from kafkamc.checker.symbolic.state import equal, int_terms, lex_le
from kafkamc.checker.symbolic.values import as_arith, as_bool, fast_and, is_symbolic
from kafkamc.errors import SymbolicUnsupported
from kafkamc.spec import domain as d

__all__ = ["Layout", "Shape", "Match", "leaf_vars"]

_FALSE = z3.BoolVal(False)


@dataclass(frozen=True, slots=True)
class Shape:
    """One concrete shape of the domain: the alternative taken at each site it meets."""

    index: int
    choices: tuple[tuple[str, int], ...]  # (site key, alternative), in the order build makes them


@dataclass(frozen=True, slots=True)
class Match:
    """A value read against the domain: its sites, its live variables' terms, and when it is in
    the domain (``inside`` is False when no shape has its structure)."""

    choices: dict[str, int]
    terms: dict[str, z3.ExprRef]
    inside: z3.BoolRef


class Layout:
    """The vector of a domain: its shapes, and each key's generic variable (prefix ``x``)."""

    def __init__(self, dom: d.Domain) -> None:
        self.dom = dom
        self.shapes: list[Shape] = []
        self.variables: dict[str, z3.ExprRef] = {}  # key -> the variable named "x" + key
        for raw in shapes(dom):
            made: list[tuple[str, int]] = []
            value, _facts = self._build(raw, "x", made)
            self.shapes.append(Shape(len(self.shapes), tuple(made)))
            for key, var in leaf_vars(value, "x"):
                known = self.variables.get(key)
                if known is not None and known.sort() != var.sort():
                    raise SymbolicUnsupported(f"bmc: the domain gives {key} two types in two shapes")
                self.variables[key] = var
            for site, _k in made:
                self.variables["#" + site] = z3.Int("x#" + site)
        self._keys = sorted(self.variables)
        self._by_choices = {frozenset(shape.choices): shape for shape in self.shapes}

    @property
    def keys(self) -> list[str]:
        """Every key, sorted: leaf keys (``.field``, ``[i]``) and site keys (``#...``)."""
        return self._keys

    def _build(self, raw: tuple[int, ...], prefix: str, made: list[tuple[str, int]]) -> tuple[Any, list[z3.BoolRef]]:
        it = iter(raw)

        def choose(n: int, what: str) -> int:
            k = next(it)
            made.append((what[len(prefix):], k))
            return k

        facts: list[z3.BoolRef] = []
        value = build(self.dom, prefix, choose, facts)
        return value, facts

    def template(self, shape: Shape, prefix: str) -> tuple[Any, list[z3.BoolRef]]:
        """A state of ``shape`` over the variables named ``prefix`` + key, and its domain facts
        (the bounds of its ints, enum ranges, a sorted bag's order)."""
        raw = tuple(k for _site, k in shape.choices)
        return self._build(raw, prefix, [])

    def shape_with(self, choices: dict[str, int]) -> Shape | None:
        """The shape whose sites take exactly ``choices`` (a ``Match``'s), if the domain has one."""
        return self._by_choices.get(frozenset(choices.items()))

    def var(self, key: str, prefix: str) -> z3.ExprRef:
        """The variable of ``key`` in the copy of the vector named ``prefix``."""
        return z3.Const(prefix + key, self.variables[key].sort())

    def copy(self, prefix: str) -> list[tuple[z3.ExprRef, z3.ExprRef]]:
        """(generic variable, the same in copy ``prefix``) for every key: a substitution."""
        return [(self.variables[k], self.var(k, prefix)) for k in self._keys]

    def selects(self, shape: Shape, prefix: str) -> z3.BoolRef:
        """The copy ``prefix`` has ``shape`` (its sites only; the facts are the template's)."""
        return fast_and([self.var("#" + site, prefix) == k for site, k in shape.choices])

    def shape_of(self, model: Any, prefix: str) -> Shape:
        """The shape whose sites ``model`` gives the copy ``prefix`` (there is exactly one)."""
        for shape in self.shapes:
            if all(model.eval(self.var("#" + site, prefix), model_completion=True).as_long() == k
                   for site, k in shape.choices):
                return shape
        raise SymbolicUnsupported("bmc: a model whose sites match no shape of the domain")

    def match(self, value: Any) -> Match:
        """``value`` read against the domain (see the module docstring)."""
        choices: dict[str, int] = {}
        terms: dict[str, z3.ExprRef] = {}
        conds: list[z3.BoolRef] = []
        if not _match(self.dom, value, "", choices, terms, conds, self.variables):
            return Match(choices, terms, _FALSE)
        for site in choices:
            if "#" + site not in self.variables:  # an alternative no shape reaches with this site
                return Match(choices, terms, _FALSE)
        for key in terms:
            if key not in self.variables:
                return Match(choices, terms, _FALSE)
        return Match(choices, terms, fast_and(conds))


def leaf_vars(value: Any, prefix: str) -> list[tuple[str, z3.ExprRef]]:
    """(key, variable) of each symbolic leaf of a template."""
    out: list[tuple[str, z3.ExprRef]] = []

    def walk(v: Any) -> None:
        if isinstance(v, (SymInt, SymBool)):
            out.append((v.z.decl().name()[len(prefix):], v.z))
        elif isinstance(v, SymSet):
            out.extend((b.decl().name()[len(prefix):], b) for b in v.bits)
        elif isinstance(v, tuple):
            for x in v:
                walk(x)
        elif dataclasses.is_dataclass(v) and not isinstance(v, type):
            for f in dataclasses.fields(v):
                walk(getattr(v, f.name))

    walk(value)
    return out


def _concrete(v: Any) -> bool:
    if is_symbolic(v) or isinstance(v, SymSet):
        return False
    if isinstance(v, tuple):
        return all(_concrete(x) for x in v)
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return all(_concrete(getattr(v, f.name)) for f in dataclasses.fields(v))
    return True


def _match(dom: d.Domain, v: Any, path: str, choices: dict[str, int], terms: dict[str, z3.ExprRef],
           conds: list[z3.BoolRef], own: dict[str, z3.ExprRef]) -> bool:
    """Fill the sites, live terms and conditions of ``v`` at ``path``; False when no shape has its
    structure. Mirrors ``build``'s names. A leaf that is the variable ``own[path]`` itself (a
    field the action left alone) needs no condition: its bounds are its template's facts."""
    if isinstance(dom, (d.Int, d.Enum)) and isinstance(v, SymInt) and path in own and v.z.eq(own[path]):
        terms[path] = v.z
        return True
    if isinstance(dom, d.Int):
        if isinstance(v, (bool, SymBool)):
            return False
        t = as_arith(v)
        if t is None:
            return False
        terms[path] = t
        conds.append(t >= as_arith(dom.lo))
        if dom.hi is not None:
            conds.append(t <= as_arith(dom.hi))
        return True
    if isinstance(dom, d.Bool):
        if not isinstance(v, (bool, SymBool)):
            return False
        terms[path] = as_bool(v)
        return True
    if isinstance(dom, d.Enum):
        if isinstance(v, (bool, SymBool)):
            return False
        t = as_arith(v)
        if t is None:
            return False
        terms[path] = t
        conds.append(z3.Or([t == int(m) for m in dom.cls]))
        return True
    if isinstance(dom, d.Const):
        conds.append(equal(v, dom.value))
        return True
    if isinstance(dom, d.OneOf):
        if not _concrete(v):
            raise SymbolicUnsupported(f"bmc: a successor's {path or 'state'} (a OneOf of the domain) is symbolic")
        for k, alt in enumerate(dom.values):
            if type(alt) is type(v) and alt == v:
                choices[path + ": one of"] = k
                return True
        return False
    if isinstance(dom, d.Record):
        if type(v) is not dom.cls:
            return False
        return all(_match(sub, getattr(v, f), f"{path}.{f}", choices, terms, conds, own) for f, sub in dom.fields)
    if isinstance(dom, d.Tuple):
        if not isinstance(v, tuple) or len(v) != dom.length:
            return False
        return all(_match(dom.elem, x, f"{path}[{i}]", choices, terms, conds, own) for i, x in enumerate(v))
    if isinstance(dom, d.Seq):
        if not isinstance(v, tuple) or len(v) != len(dom.elems):
            return False
        return all(_match(sub, x, f"{path}[{i}]", choices, terms, conds, own) for i, (sub, x) in enumerate(zip(dom.elems, v)))
    if isinstance(dom, d.Set):
        members = as_members(v)
        if members is None:
            return False
        universe = set(dom.universe)
        for e, b in members.items():
            if e not in universe:
                conds.append(z3.Not(b))
        for e in dom.universe:
            terms[f"{path}.has({e!r})"] = members.get(e, _FALSE)
        return True
    if isinstance(dom, d.Bag):
        if not isinstance(v, tuple) or not dom.min_len <= len(v) <= dom.max_len:
            return False
        choices[path + ": length"] = len(v) - dom.min_len
        if not all(_match(dom.elem, x, f"{path}[{i}]", choices, terms, conds, own) for i, x in enumerate(v)):
            return False
        if dom.sorted:
            conds.extend(lex_le(int_terms(a), int_terms(b)) for a, b in zip(v, v[1:]))
        return True
    if isinstance(dom, d.Subset):
        if not isinstance(v, tuple):
            return False
        if not _concrete(v):
            raise SymbolicUnsupported(f"bmc: a successor's {path or 'state'} (a Subset of the domain) is symbolic")
        members = dom.members()
        if v not in members:
            return False
        choices[path + ": subset"] = members.index(v)
        return True
    raise TypeError(f"not a domain: {dom!r}")
