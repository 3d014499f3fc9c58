"""``kvproof explore`` as one library call: ``explore_variant(...)`` returns an ``ExploreRun``.

Breadth-first search of every reachable state of a small instance
(``model/search/explore.py``), and the state graph written as DOT, GraphML or HTML/SVG
when asked (``checker/render/explore_graph.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kvproof.spec.errors import KvproofInputError


@dataclass(frozen=True)
class ExploreOptions:
    """What ``kvproof explore`` takes besides the variant (its flags, by the same names)."""

    requests: int = 2
    pages: int = 3
    max_states: int | None = None
    max_seconds: float | None = None
    symmetry: bool = True  # reduce states under the protocol's symmetry
    stop_at_violation: bool = False
    protocol: str | None = None  # a user protocol's 'module:attr'
    dot: str | Path | None = None
    graphml: str | Path | None = None
    html: str | Path | None = None


@dataclass(frozen=True)
class ExploreRun:
    result: Any  # kvproof.model.search.explore.ExploreResult
    protocol: Any  # the protocol explored (names the cells of the traces)
    files: tuple[str, ...] = ()  # as given (the --json document lists them so)

    @property
    def exit_code(self) -> int:
        return 1 if self.result.violated else 0

    def to_json(self) -> dict[str, Any]:
        from kvproof.checker.render.explore import as_json

        return {**as_json(self.result, self.protocol), "files": list(self.files)}


def explore_variant(
    name: str,
    *,
    variants_dir: Path | None = None,
    options: ExploreOptions = ExploreOptions(),
    on_progress: Callable[[int, int, int], None] | None = None,
) -> ExploreRun:
    """Explore the variant ``name``; ``on_progress(states, depth, left)`` as it goes."""
    from kvproof.checker.verify.protocols import load_protocol, resolve_variants
    from kvproof.spec.files import write_text_atomic

    user = load_protocol(options.protocol) if options.protocol else None
    (variant,) = resolve_variants([name], False, variants_dir, user)
    # Loaded after the name is known good: a typo is exit 2 before Z3 loads.
    from kvproof.model.search.explore import explore

    if user:
        protocol = user.factory(variant.switches)
    else:  # kvproof's handoff under the variant's assumptions
        from kvproof.model.handoff import protocol_of

        protocol = protocol_of(variant)
    if set(protocol.sorts) != {"Req", "Page"}:
        raise KvproofInputError(
            f"--requests/--pages size the sorts Req and Page; this protocol's sorts are "
            f"{', '.join(protocol.sorts)}",
            "--protocol",
        )
    result = explore(
        protocol,
        {"Req": options.requests, "Page": options.pages},
        variant=variant.name,
        symmetry=None if options.symmetry else (),  # None: the protocol's explore_symmetry
        stop_at_violation=options.stop_at_violation,
        max_states=options.max_states,
        max_seconds=options.max_seconds,
        graph=bool(options.dot or options.graphml or options.html),
        progress=on_progress,
    )
    if options.dot:
        from kvproof.checker.render.explore_graph import to_dot

        write_text_atomic(options.dot, to_dot(result))
    if options.graphml:
        import networkx as nx

        from kvproof.checker.render.explore_graph import graphml_graph

        graphml = nx.generate_graphml(graphml_graph(result, protocol))
        write_text_atomic(options.graphml, "\n".join(graphml))
    if options.html:
        from kvproof.checker.render.explore_graph import graph_page

        write_text_atomic(options.html, graph_page(result, protocol, variant))
    files = tuple(str(f) for f in (options.dot, options.graphml, options.html) if f)
    return ExploreRun(result, protocol, files)
