"""``kvproof prove --html``: the inductive invariant as clauses, and a CTI's two states.

A proof is only as convincing as the invariant it certifies, so the report prints every
conjunct the prover used, safety invariants first, as a readable clause: the DSL's formula
printed instead of solved. An invariant is a Python function over a context ``s``
(``model/lang/dsl.py``); run it with a logic whose values are strings (``PrintLogic``) and it
prints itself: ``∀ r, p: inflight(r, p) → dphase(r) ∈ {transfer, draining}``.
Switch-dependent parts (plain Python constants) fold away, so the clause is the one the
variant's protocol really checks. When induction fails, the counterexample to induction is
drawn as its pre-state and post-state side by side, the changed cells marked (a "Δ" as well
as bold), and the conjunct it breaks outlined.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from html import escape
from typing import Any

from kvproof import __version__
from kvproof.checker.report.html_page import document, section, variant_box
from kvproof.model.lang.concrete import Concrete
from kvproof.model.lang.context import Ctx
from kvproof.model.lang.dsl import Invariant, Protocol
from kvproof.model.lang.fold import fold, one_or
from kvproof.model.lang.instance import Instance


def proof_page(proofs: Sequence[tuple[Any, Protocol, Any]]) -> str:
    """The page: per (variant, protocol, result), the inductive invariant's
    clauses and, when induction failed, the CTI's two states."""
    body = []
    for variant, protocol, result in proofs:
        body.append(
            f"<h1>{escape(variant.name)}: proof for all numbers of requests and pages</h1>"
            f'<p class="subtitle">kvproof {escape(__version__)}</p>'
            + section("Inductive invariant", render(protocol, result), "proof-section")
            + section(f"Variant {variant.name}", variant_box(variant), "variant-section")
        )
    names = ", ".join(v.name for v, _, _ in proofs)
    return document(f"kvproof prove: {names}", f'<div class="kvproof-report">{"".join(body)}</div>')


def render(protocol: Protocol, result: Any) -> str:
    """The proof section's markup for a ``ProofResult``."""
    ok = bool(result.proved)
    cls = "verdict holds" if ok else "verdict"
    mark = "✔ PROVED" if ok else "✖ NOT PROVED"
    out = [f'<p class="{cls}">{mark}: {escape(result.summary)}</p>']
    failed = result.cti.conjunct if result.cti is not None else None
    items = []
    for inv, text in clauses(protocol):
        kind = "safety" if inv.safety else "strengthening"
        bad = ' class="failed-clause"' if inv.name == failed else ""
        sign = "✖ " if inv.name == failed else ""
        doc = f'<span class="note"> {escape(inv.doc)}</span>' if inv.doc else ""
        items.append(
            f'<li{bad} data-conjunct="{escape(inv.name)}">{sign}<strong>{escape(inv.name)}</strong>'
            f' <span class="note">({kind})</span>{doc}'
            f'<code class="clause">{escape(text)}</code></li>'
        )
    out.append(
        "<p>The inductive invariant: the conjunction of these clauses holds initially and "
        "after every action from any state where it holds, for any number of requests and "
        "pages.</p>"
    )
    out.append(f'<ol class="clauses">{"".join(items)}</ol>')
    if result.cti is not None:
        out.append(cti_html(protocol, result.cti))
    return "".join(out)


def nondefault_cells(concrete: Concrete, state: Any) -> dict[str, str]:
    out = {}
    for var, cells in concrete.as_dict(state).items():
        default = concrete.protocol.var(var).default
        for args, value in cells.items():
            if value != default:
                out[concrete.inst.describe(var, args)] = "" if value is True else f"= {value}"
    return out


def cti_html(protocol: Protocol, cti: Any) -> str:
    """A counterexample to induction: which query, the action, pre- and post-state.
    ``protocol``: the one the CTI names (a ``Cti`` is plain data and holds only its name)."""
    head = (
        f'<h3 class="cti">Counterexample to induction: <code>{escape(cti.conjunct)}</code> '
        f"({escape(cti.query)})</h3>"
    )
    if cti.pre is None:
        return head
    concrete = Concrete(Instance(protocol, cti.sizes))
    pre = nondefault_cells(concrete, cti.pre)
    post = nondefault_cells(concrete, cti.post) if cti.post is not None else {}
    action = f"<p>Action: <code>{escape(str(cti.action))}</code></p>" if cti.action else ""
    names = sorted(set(pre) | set(post))
    rows = []
    for name in names:
        a, b = pre.get(name), post.get(name)
        changed = cti.post is not None and a != b
        cls = ' class="changed"' if changed else ""

        def show(v: str | None, name: str = name) -> str:
            return "—" if v is None else f"<code>{escape(name)} {escape(v)}</code>"

        rows.append(
            f"<tr{cls}><td>{show(a)}</td><td>{show(b) if cti.post is not None else ''}</td></tr>"
        )
    sizes = ", ".join(f"{n} {s}" for s, n in cti.sizes.items())
    return (
        f"{head}<p>A state satisfying every clause ({escape(sizes)}) that the action leads "
        f"out of <code>{escape(cti.conjunct)}</code>. Non-default cells; Δ marks a change.</p>"
        f'{action}<table class="cti-states"><thead><tr><th scope="col">pre-state</th>'
        f'<th scope="col">post-state</th></tr></thead><tbody>{"".join(rows)}</tbody></table>'
    )


# -- clauses: the DSL's logic with strings for terms -----------------------------------------

_LETTER = {"Req": "r", "Page": "p"}


class _Text(str):
    """A printed subformula; ``atom`` ones need no parentheses as operands."""

    atom: bool = False


def _atom(text: str) -> _Text:
    t = _Text(text)
    t.atom = True
    return t


def _show(x: Any) -> str:
    if x is True:
        return "true"
    if x is False:
        return "false"
    if isinstance(x, _Text):
        return x if x.atom else f"({x})"
    return str(x)


class PrintLogic:
    """The DSL's logic with strings for terms (constants folded)."""

    def __init__(self) -> None:
        self.bound: dict[str, int] = {}

    def and_(self, *xs: Any) -> Any:
        return fold(xs, absorbing=False, term=_text_term, join=one_or(_conj))

    def or_(self, *xs: Any) -> Any:
        return fold(xs, absorbing=True, term=_text_term, join=_disj)

    def not_(self, x: Any) -> Any:
        if isinstance(x, bool):
            return not x
        parts = _eq_parts(x)
        if parts is not None:
            return _atom(f"{parts[0]} ≠ {parts[1]}")
        if isinstance(x, _Text) and x.atom and " ∈ " in x:
            return _atom(x.replace(" ∈ ", " ∉ ", 1))
        return _atom(f"¬{_show(x)}")

    def implies(self, a: Any, b: Any) -> Any:
        if a is True:
            return b
        if a is False or b is True:
            return True
        return _Text(f"{_show(a)} → {_show(b)}")

    def ite(self, c: Any, a: Any, b: Any) -> Any:
        if isinstance(c, bool):
            return a if c else b
        return _atom(f"(if {c} then {_show(a)} else {_show(b)})")

    def eq(self, a: Any, b: Any) -> Any:
        if isinstance(a, bool) and isinstance(b, bool):
            return a == b
        if b is True:
            return a
        if b is False:
            return self.not_(a)
        t = _atom(f"{a} = {b}")
        t.eq = (str(a), str(b))  # type: ignore[attr-defined]
        return t

    def _bind(self, sort: str) -> str:
        base = _LETTER.get(sort, sort[:1].lower())
        n = self.bound.get(base, 0) + 1
        self.bound[base] = n
        return base if n == 1 else f"{base}{n}"

    def forall(self, sort: str, fn: Callable[[Any], Any]) -> Any:
        return self._quant("∀", sort, fn)

    def exists(self, sort: str, fn: Callable[[Any], Any]) -> Any:
        return self._quant("∃", sort, fn)

    def _quant(self, sym: str, sort: str, fn: Callable[[Any], Any]) -> Any:
        name = self._bind(sort)
        body = fn(_atom(name))
        if isinstance(body, bool):
            return body
        if body.startswith(sym + " ") and ": " in body:
            head, rest = body[2:].split(": ", 1)
            return _Text(f"{sym} {name}, {head}: {rest}")
        return _Text(f"{sym} {name}: {body}")


def _text_term(x: Any) -> Any | None:
    return None if isinstance(x, bool) else x


def _conj(*terms: Any) -> _Text:
    return _Text(" ∧ ".join(_show(x) for x in terms))


def _disj(terms: list[Any]) -> Any:
    """Equalities of one term read as a set (``x ∈ {a, b}``), even a single one."""
    eqs = [_eq_parts(x) for x in terms]
    if all(e is not None for e in eqs) and len({e[0] for e in eqs}) == 1:  # type: ignore[index]
        values = ", ".join(e[1] for e in eqs)  # type: ignore[index]
        return _atom(f"{eqs[0][0]} ∈ {{{values}}}")  # type: ignore[index]
    return terms[0] if len(terms) == 1 else _Text(" ∨ ".join(_show(x) for x in terms))


def _eq_parts(x: Any) -> tuple[str, str] | None:
    return getattr(x, "eq", None)


class _Reads:
    def read(self, var: str, args: tuple[Any, ...]) -> Any:
        return _atom(f"{var}({', '.join(map(str, args))})" if args else var)


def clause(inv: Invariant) -> str:
    """``inv`` as one line of logic."""
    out = inv.body(Ctx(PrintLogic(), _Reads()))
    return _show(out) if not isinstance(out, _Text) or out.atom else str(out)


def clauses(protocol: Protocol) -> list[tuple[Invariant, str]]:
    """Every safety invariant, then every strengthening conjunct, with its clause."""
    return [(inv, clause(inv)) for inv in (*protocol.safety, *protocol.strengthening)]
