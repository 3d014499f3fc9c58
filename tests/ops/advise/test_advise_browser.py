"""``kvproof advise --html`` opened in headless Chromium, as ``test_report_browser.py`` does.

Skips with the reason without Chromium, Playwright or the cached 0.5.22 wheel.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest

from kvproof.checker.cli import main

pytestmark = pytest.mark.slow
# The report tests' Chromium fixture and offline page opener (they skip the same way).
_SPEC = importlib.util.spec_from_file_location(
    "report_browser", Path(__file__).parents[2] / "checker" / "report" / "test_report_browser.py"
)
assert _SPEC is not None and _SPEC.loader is not None
browser_tests = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(browser_tests)
browser = browser_tests.browser
DEFERRED = "SGLANG_DISAGGREGATION_DEFERRED_DECODE_KV_RELEASE"


def test_advise_page_in_chromium(browser: Any, tmp_path: Path) -> None:
    from kvproof.checker.upstream import fetch
    from kvproof.spec.errors import KvproofInputError

    try:
        fetch.cached("0.5.22")
    except KvproofInputError as exc:
        pytest.skip(f"no cached sglang 0.5.22 wheel and no index: {exc}")
    out = tmp_path / "advise.html"
    argv = ["advise", "sglang==0.5.22", "--env", f"{DEFERRED}=false", "--traces", "50"]
    assert main([*argv, "--html", str(out)]) == 1
    page, fetched = browser_tests.open_offline(browser, out)
    assert fetched == [], f"the page fetched {fetched}"
    assert "UNSAFE" in page.locator("p.verdict").first.inner_text()
    assert page.locator("section.match code").first.inner_text() == "sglang-pd-early-free-abort"
    steps = page.locator("section.stories ol.engine-steps li")
    assert steps.count() >= 6 and "at once" in " ".join(steps.all_inner_texts())
    assert DEFERRED in page.locator("section.fix").inner_text()
    assert browser_tests.pixel_spread(page.screenshot(full_page=True)) > 20
    page.context.close()
