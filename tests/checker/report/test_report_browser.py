"""The HTML reports opened in a real browser: headless Chromium driven by Playwright.

Uses the system Chromium (Debian's ``chromium`` package, ``/usr/bin/chromium``; never a
Playwright browser download). Every request other than the report file itself is aborted
and recorded, so "opens offline" is checked, not assumed. Without Chromium or Playwright
the tests skip with the reason; the markup tests in ``test_html_report.py`` still run.

``KVPROOF_UPDATE_GOLDEN=1`` rewrites the README's screenshot, ``docs/incident-report.png``,
and its sidecar ``docs/incident-report.json`` (the kvproof version it shows and the image's
hash; ``tests/test_docs.py`` fails when the version moves on without a new picture).
"""

from __future__ import annotations

import io
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kvproof.checker.cli import main

ROOT = Path(__file__).resolve().parents[3]
INCIDENT = ROOT / "traces" / "sglang-0.5.19-pd.isolation.jsonl"
GOLDEN = ROOT / "docs" / "incident-report.png"
CHROMIUM = os.environ.get("KVPROOF_CHROMIUM", "/usr/bin/chromium")
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

pytestmark = pytest.mark.slow
sync_api = pytest.importorskip(
    "playwright.sync_api", reason="playwright is not installed (pip install -e '.[dev]')"
)
if not (Path(CHROMIUM).exists() or shutil.which(CHROMIUM)):
    pytest.skip(
        f"no Chromium at {CHROMIUM} (apt-get install -y chromium, or set KVPROOF_CHROMIUM)",
        allow_module_level=True,
    )


def write_golden_sidecar(png: Path) -> None:
    """What the picture shows, for ``tests/test_docs.py``: the version in its footer."""
    import hashlib
    import json

    from kvproof import __version__

    facts = {
        "kvproof_version": __version__,
        "sha256": hashlib.sha256(png.read_bytes()).hexdigest(),
        "made_by": "KVPROOF_UPDATE_GOLDEN=1 pytest tests/checker/report/test_report_browser.py",
        "shows": "kvproof report traces/sglang-0.5.19-pd.isolation.jsonl --html incident.html",
    }
    png.with_suffix(".json").write_text(json.dumps(facts, indent=2) + "\n", encoding="utf-8")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with sync_api.sync_playwright() as p:
        try:
            b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        except Exception as exc:  # a broken install: say why, do not fail the suite
            pytest.skip(f"Chromium at {CHROMIUM} does not start: {exc}")
        yield b
        b.close()


@pytest.fixture(scope="module")
def incident_html(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``kvproof report`` of the incident's trace, replayed on the engine."""
    out = tmp_path_factory.mktemp("report") / "incident.html"
    assert main(["report", str(INCIDENT), "--html", str(out)]) == 0
    return out


def open_offline(browser: Any, path: Path, **context: Any) -> tuple[Any, list[str]]:
    ctx = browser.new_context(viewport={"width": 1300, "height": 1400}, **context)
    page = ctx.new_page()
    fetched: list[str] = []

    def block(route: Any) -> None:
        if route.request.url == path.as_uri():
            route.continue_()
        else:
            fetched.append(route.request.url)
            route.abort()

    page.route("**/*", block)
    page.goto(path.as_uri())
    page.wait_for_load_state("load")
    return page, fetched


def pixel_spread(png: bytes) -> float:
    """Standard deviation of grey levels: near 0 for a blank page."""
    image = pytest.importorskip("PIL.Image")
    grey = image.open(io.BytesIO(png)).convert("L")
    hist = grey.histogram()
    n = sum(hist)
    mean = sum(i * c for i, c in enumerate(hist)) / n
    return (sum(c * (i - mean) ** 2 for i, c in enumerate(hist)) / n) ** 0.5


def test_incident_report_in_chromium(browser: Any, incident_html: Path) -> None:
    page, fetched = open_offline(browser, incident_html)
    assert fetched == [], f"the report fetched {fetched}"
    lanes = page.locator("svg.msc g.lane").evaluate_all("els => els.map(e => e.dataset.lane)")
    assert lanes == ["client", "router", "prefill", "transfer engine", "decode"]
    bad = page.locator("svg.msc g.msg.violation")
    assert bad.count() == 1 and bad.get_attribute("data-step") == "7"
    assert "violates isolation" in bad.text_content()
    assert "HTTP 200" in bad.text_content()
    stale = page.locator("table.pool td.stale")
    assert stale.count() == 1 and "STALE" in stale.inner_text()
    assert page.locator('table.pool tr[data-page="p0"] td.stale').count() == 1
    canary = page.locator("table.responses tr.leak mark.canary.foreign")
    assert canary.count() >= 1 and "CANARY-W-" in canary.first.inner_text()
    assert "foreign" in canary.first.inner_text()  # a word, not colour alone
    assert page.locator("section.legend-section dl.legend dt").count() >= 8
    assert page.locator("section.variant-section a[href^='https://github.com/']").count() >= 1
    shot = page.screenshot(full_page=True)
    assert pixel_spread(shot) > 20, "the screenshot looks blank"
    if os.environ.get("KVPROOF_UPDATE_GOLDEN"):
        # The README's picture: the incident at a glance (chart, pool, responses).
        engine = page.locator("section.engine-section").bounding_box()
        height = int(engine["y"] + engine["height"] + 12)
        GOLDEN.parent.mkdir(exist_ok=True)
        page.screenshot(path=str(GOLDEN), clip={"x": 0, "y": 0, "width": 1300, "height": height})
        write_golden_sidecar(GOLDEN)
    page.context.close()


def test_dark_mode_and_print(browser: Any, incident_html: Path) -> None:
    page, fetched = open_offline(browser, incident_html, color_scheme="dark")
    assert fetched == []
    bg = page.evaluate(
        "getComputedStyle(document.querySelector('.kvproof-report')).backgroundColor"
    )
    channels = [int(x) for x in bg[bg.index("(") + 1 : bg.index(")")].split(",")[:3]]
    assert max(channels) < 80, f"dark mode background is {bg}"
    assert pixel_spread(page.screenshot()) > 10
    pdf = page.pdf(format="A4", print_background=True)
    assert pdf.startswith(b"%PDF") and len(pdf) > 10_000
    page.context.close()


def test_proof_and_graph_reports_open(browser: Any, tmp_path: Path) -> None:
    proof, graph = tmp_path / "proof.html", tmp_path / "graph.html"
    main(["prove", "sglang-pd-early-free-abort", "--html", str(proof)])
    main(["explore", "sglang-0.5.19-pd", "--requests", "1", "--pages", "1", "--html", str(graph)])
    page, fetched = open_offline(browser, proof)
    assert fetched == [] and page.locator("ol.clauses li").count() >= 10
    assert page.locator("li.failed-clause").count() == 1
    page.context.close()
    page, fetched = open_offline(browser, graph)
    assert fetched == [] and page.locator("svg.graph g.node").count() > 3
    assert page.locator("svg.graph g.node.violated").count() >= 1
    assert pixel_spread(page.screenshot()) > 10
    page.context.close()


def test_lasso_report_draws_the_loop_in_chromium(browser: Any, tmp_path: Path) -> None:
    """The loop's arrow spans its steps, right of every label, and "forever" is visible."""
    lasso = Path(__file__).parent / "fixtures" / "lasso" / "starved.answered.jsonl"
    out = tmp_path / "lasso.html"
    assert main(["report", str(lasso), "--html", str(out), "--no-replay"]) == 0
    page, fetched = open_offline(browser, out)
    assert fetched == []
    arrow = page.locator("svg.msc g.loop path.loop-arrow").bounding_box()
    steps = page.locator("svg.msc g.msg.in-loop")
    assert steps.count() == 1 and steps.get_attribute("data-step") == "9"
    row = steps.first.bounding_box()
    assert arrow["y"] <= row["y"] + row["height"] and arrow["y"] + arrow["height"] >= row["y"]
    labels = page.locator("svg.msc text.msg-label, svg.msc text.msg-extra").evaluate_all(
        "els => els.map(e => e.getBoundingClientRect().right)"
    )
    assert arrow["x"] > max(labels), "the loop's arrow overlaps a step's label"
    forever = page.locator("svg.msc text.forever-mark[data-forever='r1']")
    assert forever.is_visible() and "never answered" in forever.text_content()
    assert page.locator("ul.forever-list li[data-forever='r1']").is_visible()
    page.context.close()
