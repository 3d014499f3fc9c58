"""A user protocol written from scratch, with no strengthening: its bug is deeper than its
``bmc_depth``, so plain ``kvproof check`` reports "holds" and only ``--complete`` (or an
inferred proof of the fixed variant) settles it.

A request allocates pages, then moves through five pipeline stages; at stage ``s3`` a
writer may start writing into its pages; at ``s5`` the request is released and its pages
freed. The tempting shortcut ("a request at s5 has finished writing") is wrong: a write
started at s3 may still be in flight. With ``release_waits_for_writes`` the release waits.

    kvproof check --all --protocol examples/deep_bug/pipeline.py:Pipeline --complete \\
        --requests 2 --pages 2
    kvproof prove --all --protocol examples/deep_bug/pipeline.py:Pipeline
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kvproof.model.lang.dsl import BOOL, Action, Enum, Invariant, Protocol, Var

VARIANTS_DIR = Path(__file__).resolve().parent / "variants"
Stage = Enum("Stage", ("idle", "s1", "s2", "s3", "s4", "s5", "done"))
NEXT = {"s1": "s2", "s2": "s3", "s3": "s4", "s4": "s5"}


@dataclass(frozen=True)
class PipelineSwitches:
    release_waits_for_writes: bool


def build(sw: PipelineSwitches) -> Protocol:
    def alloc(s: Any, r: Any, p: Any) -> None:
        s.require(s.eq(s.stage(r), "idle"))
        s.require(s.forall("Req", lambda x: s.not_(s.owns(x, p))))
        s.set("owns", (r, p), True)

    def begin(s: Any, r: Any) -> None:
        s.require(s.eq(s.stage(r), "idle"))
        s.require(s.exists("Page", lambda p: s.owns(r, p)))
        s.set("stage", (r,), "s1")

    def advance(s: Any, r: Any) -> None:
        s.require(s.isin(s.stage(r), *NEXT))
        nxt: Any = "s5"
        for a in ("s3", "s2", "s1"):
            nxt = s.ite(s.eq(s.stage(r), a), NEXT[a], nxt)
        s.set("stage", (r,), nxt)

    def write(s: Any, r: Any, p: Any) -> None:
        s.require(s.eq(s.stage(r), "s3"))
        s.require(s.owns(r, p))
        s.set("writing", (r, p), True)

    def land(s: Any, r: Any, p: Any) -> None:
        s.require(s.writing(r, p))
        s.set("writing", (r, p), False)
        s.set("stray", (p,), s.or_(s.stray(p), s.not_(s.owns(r, p))))

    def release(s: Any, r: Any) -> None:
        s.require(s.eq(s.stage(r), "s5"))
        if sw.release_waits_for_writes:
            s.require(s.forall("Page", lambda p: s.not_(s.writing(r, p))))
        s.set("stage", (r,), "done")
        s.update("owns", lambda x, q, old: s.ite(s.eq(x, r), False, old))

    return Protocol(
        name="pipeline",
        sorts=("Req", "Page"),
        vars=(
            Var("stage", ("Req",), Stage),
            Var("owns", ("Req", "Page"), BOOL),
            Var("writing", ("Req", "Page"), BOOL),
            Var("stray", ("Page",), BOOL, ghost=True),
        ),
        actions=(
            Action("alloc", ("Req", "Page"), alloc),
            Action("begin", ("Req",), begin),
            Action("advance", ("Req",), advance),
            Action("write", ("Req", "Page"), write),
            Action("land", ("Req", "Page"), land),
            Action("release", ("Req",), release),
        ),
        invariants=(
            Invariant("no_stray_write", lambda s: s.forall("Page", lambda p: s.not_(s.stray(p)))),
        ),
        init=lambda s: True,
        switches=sw,
        symmetric=("Req", "Page"),
    )


class Pipeline:
    SWITCHES = PipelineSwitches
    VARIANTS_DIR = VARIANTS_DIR
    build = staticmethod(build)
