"""``kvproof conform --vllm``: the faithful 0.34.0 variants conform, and each safe design
diverges on 0.34.0 with a trace ``report --html`` draws (issue 40). Slow: each run loads
the release and walks 200 times."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from abort_lasso import first_abort_lasso

from kvproof.checker.cli import main
from kvproof.checker.conform.vllm.run import conform
from kvproof.spec.variant import load_variant

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("name", ["vllm-0.34-nixl-pull", "vllm-0.34-nixl-push"])
def test_the_faithful_variants_conform(vllm_tree: Path, name: str, capsys) -> None:
    assert main(["conform", name, "--vllm", str(vllm_tree), "--json", "--quiet"]) == 0
    run = json.loads(capsys.readouterr().out)
    assert run["verdict"] == "conforms" and run["walks"] == 200
    assert run["coverage"]["ratio"] >= 0.9
    assert any("_reap_expired_send_leases" in f for f in run["exercised"])
    assert run["decisions"]["record_kv_expired_req"] > 0  # the lease path ran


def test_pull_lease_expiry_contradicts_lease_outlives_read(vllm_tree: Path, tmp_path) -> None:
    run = conform(load_variant("vllm-nixl-fixed"), str(vllm_tree), out=tmp_path)
    assert run.exit_code == 1 and run.switch == "lease_outlives_read"
    assert any("source: model [0], code []" in line for line in run.detail)
    html = tmp_path / "r.html"
    assert main(["report", run.files[0], "--html", str(html), "--no-replay"]) == 0
    assert html.stat().st_size > 0


def test_push_abort_lasso_replays_on_the_real_scheduler(vllm_tree: Path, tmp_path) -> None:
    """The safe push design's ACK frees an aborted request; 0.34.0's scheduler still holds
    its blocks after the replayed loop (#46283)."""
    run = first_abort_lasso(vllm_tree, tmp_path)
    assert run.exit_code == 1 and run.switch == "abort_notifies_prefill"
    assert any(line.endswith("code [1]") or "code [0]" in line for line in run.detail)
    assert run.decisions["blocks still held after 8 replayed engine steps"] >= 1
    assert main(["report", run.files[0], "--html", str(tmp_path / "l.html"), "--no-replay"]) == 0


def test_push_write_under_expired_lease_contradicts_until_read(vllm_tree: Path, tmp_path) -> None:
    """0.34.0's push with the one claim changed: prefill holds its source until the WRITE
    is read. The code frees at lease expiry, and the diagnosis names prefill_hold."""
    base = load_variant("vllm-0.34-nixl-push")
    text = base.path.read_text().replace('prefill_hold = "lease"', 'prefill_hold = "until_read"')
    toml = tmp_path / "vllm-0.34-push-until-read.toml"
    toml.write_text(
        text.replace('name = "vllm-0.34-nixl-push"', 'name = "vllm-0.34-push-until-read"')
    )
    run = conform(load_variant(str(toml)), str(vllm_tree), out=tmp_path)
    assert run.exit_code == 1 and run.switch == "prefill_hold"
    assert run.decisions["prefill freed source blocks"] >= 1
    # The trace carries the variant (not in the catalog): report --html draws it.
    assert main(["report", run.files[0], "--html", str(tmp_path / "h.html"), "--no-replay"]) == 0
