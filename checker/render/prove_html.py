"""``kvproof prove --html``: the inductive invariant as clauses, and a CTI's two states.

A proof is only as convincing as the invariant it certifies, so the report prints every
conjunct the prover used (``clauses.py``), safety invariants first. When induction fails,
the counterexample to induction is drawn as its pre-state and post-state side by side,
the changed cells marked (a "Δ" as well as bold), and the conjunct it breaks outlined.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from typing import Any

from kvproof import __version__
from kvproof.checker.report.clauses import clauses
from kvproof.checker.report.html_page import document, section, variant_box
from kvproof.model.lang.concrete import Concrete
from kvproof.model.lang.dsl import Protocol
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
