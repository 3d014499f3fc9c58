"""``kvproof variants``: the catalog as a table for people, or as JSON."""

from __future__ import annotations

import json
from typing import Any


def variants_json(variants: list[Any]) -> list[dict[str, Any]]:
    return [
        {
            "name": v.name,
            "engine": v.engine,
            "version": v.version,
            "buggy": v.buggy,
            "summary": v.summary,
            "sources": list(v.sources),
            "expect": dict(v.expect),
            # issue #29: the liveness properties and their expected verdicts
            "liveness": dict(v.expect_liveness),
            "counterpart": v.counterpart,
            "assume": dict(v.assume),
            "role": v.role,
            # issue 41: the releases whose code it is (``[upstream]``)
            "releases": list(v.upstream.releases) if v.upstream else [],
        }
        for v in variants
    ]


def render(console: Any, variants: list[Any], *, as_json: bool) -> None:
    if as_json:
        print(json.dumps(variants_json(variants), indent=2))
        return
    from rich.table import Table

    from kvproof.checker.report.tables import print_table

    # No source column: a URL a row made the table 260 characters wide in a pipe (issue 41);
    # the sources are in --json and each variant's file.
    columns = ("variant", "kind", "releases", "expected violations", "assumes")
    table = Table(*columns, title="kvproof variants")
    notes: dict[str, str] = {}
    for v in variants:
        bad = [k for k, x in v.expect.items() if x == "violated"]
        table.add_row(
            v.name,
            ("[red]buggy[/]" if v.buggy else "[green]fixed[/]") + ROLE_MARKS.get(v.role or "", ""),
            _releases(v, notes),
            ", ".join(bad) or "none",
            ", ".join(v.assume) or "-",
        )
    print_table(console, table)
    for mark, env in notes.items():
        console.print(f"{mark} with {env}", highlight=False, markup=False)
    console.print(
        "releases: `kvproof check sglang==0.5.20` checks the variant that release is; "
        "sources: `kvproof variants --json` or spec/variants/NAME.toml",
        highlight=False,
        markup=False,
    )


def _releases(variant: Any, notes: dict[str, str]) -> str:
    """``sglang 0.5.15-0.5.19`` (its code is those releases: ``kvproof check sglang==0.5.19``
    resolves to it); ``-`` when no release is it. The env it needs, if any, is a note under
    the table (``notes``: mark -> settings), marked ``*``, ``**``, ..."""
    from kvproof.spec.by_release import release_span

    span = release_span(variant)
    if not span:
        return "-"
    own = {**variant.upstream.env, **variant.upstream.server_args}
    if not own:
        return f"{variant.upstream.engine} {span}"
    mark = "*" * (len(notes) + 1)
    notes[mark] = ", ".join(f"{k}={v}" for k, v in own.items())
    return f"{variant.upstream.engine} {span}{mark}"


# The marks of a variant's ``role`` (its file says which; ``spec/variant.py`` checks it).
ROLE_MARKS = {"incident": " (the incident)", "recommended": " (recommended)"}
