"""Each of 0.34.0's three open behaviours (issue 40) is a ``conform`` divergence against the
design that would be safe, and ``report --html`` draws the trace it writes: the verdict
line and the walk up to the step where the code left the model. Behaviour 2's safe design
is a variant written for the question (0.34.0's push with ``prefill_hold = "until_read"``),
not a catalog one: its trace carries it. Slow: each run loads the release."""

from __future__ import annotations

from pathlib import Path

import pytest
from abort_lasso import first_abort_lasso

from kvproof.checker.cli import main
from kvproof.checker.conform.vllm.run import conform
from kvproof.checker.traces.tracefile import read_jsonl
from kvproof.spec.variant import load_variant

pytestmark = pytest.mark.slow

IN_FLIGHT = "source_freed_in_flight: model False, code True"


def until_read(tmp_path: Path):
    """0.34.0's push with one claim changed: prefill holds its source until the WRITE is
    read (the safe push design's prefill_hold)."""
    text = load_variant("vllm-0.34-nixl-push").path.read_text()
    text = text.replace('prefill_hold = "lease"', 'prefill_hold = "until_read"')
    path = tmp_path / "vllm-0.34-push-until-read.toml"
    path.write_text(text.replace('name = "vllm-0.34-nixl-push"', f'name = "{path.stem}"'))
    return load_variant(str(path))


def drawn(trace: str, html: Path) -> str:
    """``report --html`` on the trace (exit 0), the page's text; the trace's own variant
    file is gone first: the page must come from the trace alone."""
    assert main(["report", trace, "--html", str(html), "--no-replay"]) == 0
    page = html.read_text()
    steps = read_jsonl(Path(trace)).steps
    last = steps[-1]
    args = ", ".join(_arg(a, i) for i, a in enumerate(last.args))
    label = f"step {len(steps)}: {last.action}({args})"
    assert f"DIVERGES after step {len(steps)}" in page
    assert label in page, label
    return page


def _arg(a: int, i: int) -> str:
    return f"r{a}" if i == 0 else f"p{a}"


def test_behaviour_1_push_abort_lasso_is_drawn(vllm_tree: Path, tmp_path: Path) -> None:
    run = first_abort_lasso(vllm_tree, tmp_path)
    assert run.exit_code == 1 and run.switch == "abort_notifies_prefill"
    assert run.decisions["blocks still held after 8 replayed engine steps"] >= 1
    page = drawn(run.files[0], tmp_path / "b1.html")
    assert "prefill ACKs the abort" in page


def test_behaviour_2_write_under_expired_lease_is_drawn(vllm_tree: Path, tmp_path: Path) -> None:
    """The first seed whose walk has prefill free its source with the WRITE in flight (a
    seed may meet the lease expiring before the WRITE was posted first: the same switch)."""
    variant = until_read(tmp_path)
    # The guide steers toward the rarest transition, so most seeds meet the lease expiring
    # before the WRITE was posted first (seeds 13, 16, 24, ... meet it under the WRITE).
    for seed in range(40):
        out = tmp_path / f"seed{seed}"
        run = conform(variant, str(vllm_tree), seed=seed, out=out)
        assert run.exit_code == 1 and run.switch == "prefill_hold", (seed, run.detail)
        if any(IN_FLIGHT in line for line in run.detail):
            break
    else:
        pytest.fail("no seed in 0-39 freed the source under an in-flight WRITE")
    variant.path.unlink()  # report reads the variant from the trace
    trace = read_jsonl(Path(run.files[0]))
    assert any(s.action == "post" for s in trace.steps)
    page = drawn(run.files[0], tmp_path / "b2.html")
    assert IN_FLIGHT in page and "switch `prefill_hold`" in page


def test_behaviour_3_pull_read_after_expiry_is_drawn(vllm_tree: Path, tmp_path: Path) -> None:
    run = conform(load_variant("vllm-nixl-fixed"), str(vllm_tree), out=tmp_path)
    assert run.exit_code == 1 and run.switch == "lease_outlives_read"
    page = drawn(run.files[0], tmp_path / "b3.html")
    assert "lease_outlives_read" in page
