"""The README stays a front page and the docs stay true (issue 41).

- the README is at most 300 lines, and every link it makes into ``docs/`` (or anywhere in
  the repository) resolves, anchors included;
- each reference section the README once held has a home in ``docs/`` the README links to;
- every list of the model's events (the README's, ``docs/model.md``'s) is ``spec/events.py``'s;
- the hero image's sidecar names the kvproof version it shows: this version;
- no doc tells a user to ``pip install kvproof`` from a package index (there is none).
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest

import kvproof
from kvproof.spec.events import EVENTS

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
LINK = re.compile(r"\]\(([^)\s]+)\)")

# The README's reference sections before issue 41, and the doc each one lives in now.
HOMES = {
    "Exit codes and the synopsis": "cli.md",
    "kvproof check": "cli.md",
    "Liveness": "liveness.md",
    "kvproof prove": "cli.md",
    "Inference and complete checking": "inference.md",
    "kvproof demo incident": "cli.md",
    "kvproof replay, validate, fuzz": "replay-fuzz.md",
    "kvproof conform": "cli.md",
    "kvproof report": "cli.md",
    "kvproof audit": "audit.md",
    "kvproof serve and kvproof probe": "audit.md",
    "Campaigns on Ray": "distributed.md",
    "Use kvproof as a CI gate": "ci.md",
    "User-defined protocols": "protocols.md",
    "The model in one paragraph": "model.md",
    "Figures": "benchmarks.md",
}


def _anchors(markdown: str) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens."""
    out = set()
    for heading in re.findall(r"^#+ (.+)$", markdown, flags=re.MULTILINE):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        out.add(slug)
    return out


def _links(path: Path) -> list[tuple[str, str]]:
    """(target file, anchor) of each relative link in ``path``."""
    out = []
    for target in LINK.findall(path.read_text(encoding="utf-8")):
        if target.startswith(("http://", "https://", "mailto:")):
            continue
        file, _, anchor = target.partition("#")
        out.append((file, anchor))
    return out


def test_readme_is_at_most_300_lines() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 300, f"README.md has {len(lines)} lines; move reference into docs/"


@pytest.mark.parametrize("page", [README, *sorted(DOCS.glob("*.md"))], ids=lambda p: p.name)
def test_every_relative_link_resolves(page: Path) -> None:
    for file, anchor in _links(page):
        target = (page.parent / file).resolve() if file else page
        assert target.exists(), f"{page.name} links to missing {file}"
        if anchor and target.suffix == ".md":
            anchors = _anchors(target.read_text(encoding="utf-8"))
            assert anchor in anchors, f"{page.name} links to #{anchor} not in {target.name}"


def test_every_dropped_section_has_a_home_the_readme_links_to() -> None:
    linked = {Path(file).name for file, _ in _links(README) if file.startswith("docs/")}
    for section, home in HOMES.items():
        assert (DOCS / home).exists(), f"{section}: docs/{home} is missing"
        assert home in linked, f"{section}: the README does not link docs/{home}"


def test_event_lists_are_the_models() -> None:
    names = [e.name for e in EVENTS]
    assert "crash" in names
    found = 0
    for page in (README, DOCS / "model.md"):
        text = page.read_text(encoding="utf-8")
        for listed in re.findall(r"\(`(arrive, [a-z_, \n]+)`", text):
            found += 1
            assert [n.strip() for n in listed.split(",")] == names, page.name
    assert found >= 1, "no event list found in docs/model.md"


def test_the_hero_image_shows_this_version() -> None:
    png = DOCS / "incident-report.png"
    sidecar = json.loads(png.with_suffix(".json").read_text(encoding="utf-8"))
    assert sidecar["sha256"] == hashlib.sha256(png.read_bytes()).hexdigest(), (
        "docs/incident-report.png changed without its sidecar: regenerate both with "
        "KVPROOF_UPDATE_GOLDEN=1 pytest tests/checker/report/test_report_browser.py"
    )
    shown = sidecar["kvproof_version"]
    assert shown == kvproof.__version__, (
        f"the README's picture shows kvproof {shown}, this is {kvproof.__version__}: "
        "KVPROOF_UPDATE_GOLDEN=1 pytest tests/checker/report/test_report_browser.py"
    )


def test_no_doc_installs_kvproof_from_an_index() -> None:
    for page in [README, *DOCS.glob("*.md")]:
        for line in page.read_text(encoding="utf-8").splitlines():
            assert not re.search(r"pip install (-\S+ )*kvproof\b", line), f"{page.name}: {line}"


def test_every_repository_path_the_docs_name_exists() -> None:
    """A file a doc names in backticks (``tests/ops/audit/test_audit_names.py``) is there:
    moves (``checker/audit`` to ``ops/audit``) leave no dead pointers."""
    roots = "spec|model|checker|ops|refimpl|kernels|tests|benchmarks|examples|notebooks|traces|docs"
    pattern = re.compile(rf"`((?:{roots})/[A-Za-z0-9_./-]*)`")
    for page in [README, *sorted(DOCS.glob("*.md"))]:
        for named in set(pattern.findall(page.read_text(encoding="utf-8"))):
            path = named.split("::")[0].rstrip("/")
            assert (ROOT / path).exists(), f"{page.name} names {named}, which is not there"
