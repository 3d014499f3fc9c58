"""The engine's state seen as a model state, and the comparison of the two.

``abstract`` reads ``Cluster.view()`` (fields named after ``model/handoff/protocol.py``'s VARS) and
builds a model ``State`` for the requests and pages of the instance. ``compare`` lists the
cells where model and engine disagree, skipping the cells that carry no meaning:

- ``over_p``/``over_d`` before ``arrive``: rigid in the model, decided at arrival by the engine;
- ``filled`` and ``at_pos`` of a page nobody owns on either side: the flags only mean
  something for the current allocation (``alloc`` resets them), and the warm-up left them
  set on free pages;
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kvproof.model.lang.concrete import Concrete, State
from kvproof.refimpl.cluster import Cluster


@dataclass(frozen=True)
class Mismatch:
    var: str
    args: tuple[int, ...]
    model: Any
    engine: Any


def page_stale(cluster: Cluster, rid: int) -> bool:
    """Staleness as the model counts it: a page read that did not hold the request's own
    KV written in this allocation, at its position in every slot read (``at_pos``: a
    placeholder's page carries prefill's leftovers in all slots but the first)."""
    return any(r.writer != rid or not r.filled or not r.at_pos for r in cluster.truth.reads_of(rid))


# The model's per-request and per-page flags, read off the view's field of the same name;
# a build without one (``hit``, ``p_dead`` of a liveness build, ``at_pos``, the radix
# cache's ``cached``, ``prefix_ok``, ``shared_write``) leaves it out.
REQ_FIELDS = ["over_p", "over_d", "dphase", "pphase", "poll", "resp", "pend", "abort_msg"]
REQ_FIELDS += ["src_ok", "hit", "p_dead"]
PAGE_FIELDS = ("filled", "stray", "at_pos", "cached", "prefix_ok", "shared_write")
# (Req, Page) relations: the page is in the request's field of the view.
PAGE_SETS = {"owns": "table", "dst": "dst", "posted": "posted", "inflight": "inflight"}
PAGE_SETS["shares"] = "shared"  # decode's radix cache (issue 12 item 4)


def abstract(cluster: Cluster, concrete: Concrete, offset: int) -> State:
    view = cluster.view()
    n_req, n_page = concrete.inst.sizes["Req"], concrete.inst.sizes["Page"]
    values: dict[str, dict[tuple[int, ...], Any]] = {v.name: {} for v in concrete.protocol.vars}
    req_fields = [n for n in REQ_FIELDS if n in values]
    page_sets = [(n, f) for n, f in PAGE_SETS.items() if n in values]
    for r in range(n_req):
        rv = view.requests[r + offset]
        for name in req_fields:
            values[name][(r,)] = getattr(rv, name)
        values["leaked"][(r,)] = page_stale(cluster, r + offset)
        sets = [(name, getattr(rv, field)) for name, field in page_sets]
        for p in range(n_page):
            for name, pages in sets:
                values[name][(r, p)] = p in pages
    for p in range(n_page):
        pv = view.pages[p]
        for r in range(n_req):
            values["holds"][(p, r)] = pv.writer == r + offset
        for name in PAGE_FIELDS:
            if name in values:
                values[name][(p,)] = getattr(pv, name)
    return concrete.make_state(values)


def compare(concrete: Concrete, model: State, engine: State) -> list[Mismatch]:
    m, e = concrete.as_dict(model), concrete.as_dict(engine)
    n_req = concrete.inst.sizes["Req"]

    def owned(p: int) -> bool:
        return any(m["owns"][(r, p)] or e["owns"][(r, p)] for r in range(n_req))

    out = []
    for var, args, mv, ev in concrete.diff(model, engine):
        if var in ("over_p", "over_d", "hit") and e["dphase"][args] == "idle":
            continue
        if var == "hit" and e["resp"][args] == "rejected":  # never reached the cache
            continue
        if var in ("filled", "at_pos") and not owned(args[0]):
            continue
        out.append(Mismatch(var, args, mv, ev))
    return out


def side_by_side(
    concrete: Concrete, model: State, engine: State, mismatches: list[Mismatch]
) -> list[tuple[str, str, str, bool]]:
    """(cell, model, engine, differs) rows: every cell that differs, plus the request and
    page rows they belong to, for context."""
    m, e = concrete.as_dict(model), concrete.as_dict(engine)
    bad = {(x.var, x.args) for x in mismatches}
    reqs = {x.args[0] for x in mismatches if concrete.protocol.var(x.var).args[:1] == ("Req",)}
    pages = {x.args[0] for x in mismatches if concrete.protocol.var(x.var).args[:1] == ("Page",)}
    rows = []
    for v in concrete.protocol.vars:
        for args, mv in m[v.name].items():
            head = args[0] if args else None
            related = (v.args[:1] == ("Req",) and head in reqs) or (
                v.args[:1] == ("Page",) and head in pages
            )
            differs = (v.name, args) in bad
            if not differs and not (related and (mv or e[v.name][args]) and mv not in ("idle",)):
                continue
            cell = concrete.inst.describe(v.name, args)
            rows.append((cell, repr(mv), repr(e[v.name][args]), differs))
    return rows
