"""``kvproof probe`` against the reference server: finds the incident's leak, stays quiet on
the fixed release, refuses what is not an OpenAI endpoint."""

from __future__ import annotations

import json

import pytest

from kvproof.checker.cli import main
from kvproof.ops.probe.findings import Sample
from kvproof.ops.probe.fit import fit_ttft, too_fast
from kvproof.ops.serve.config import ServeConfig
from kvproof.ops.serve.server import BackgroundServer


def _probe(variant: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, dict]:
    with BackgroundServer(ServeConfig.for_variant(variant)) as srv:
        code = main(
            [
                "probe",
                srv.url,
                "--api-key",
                "secret-key-a",
                "--second-key",
                "secret-key-b",
                "--json",
                "--max-seconds",
                "60",
            ]
        )
    out = capsys.readouterr().out
    assert "secret-key" not in out  # keys are never reported
    return code, json.loads(out)


@pytest.mark.slow
def test_probe_finds_the_incident_leak(capsys: pytest.CaptureFixture[str]) -> None:
    code, report = _probe("sglang-0.5.19-pd", capsys)
    kinds = {f["kind"] for f in report["findings"]}
    assert code == 1
    assert "foreign_canary" in kinds and "fast_ttft" in kinds
    assert report["boundary_tokens"] == 506  # decode's limit: prefill's 330 was not honoured
    assert report["requests"] <= 120


@pytest.mark.slow
def test_probe_is_clean_on_the_fixed_release(capsys: pytest.CaptureFixture[str]) -> None:
    code, report = _probe("sglang-0.5.22-pd", capsys)
    assert (code, report["findings"]) == (0, [])
    assert report["boundary_tokens"] == 330  # prefill's limit, honoured


def test_unreachable_and_non_openai_urls_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["probe", "http://127.0.0.1:9", "--timeout", "2"]) == 2
    with BackgroundServer(ServeConfig.for_variant("sglang-0.5.22-pd")) as srv:
        assert main(["probe", srv.url + "/metrics", "--timeout", "5"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 2 and "Traceback" not in err


def _sample(tokens: int, ttft: float) -> Sample:
    return Sample("B", "ttft", tokens, tokens, 200, "", ttft)


def test_ttft_fit_flags_an_answer_faster_than_its_prefill() -> None:
    normal = [_sample(n, 0.005 + 0.0002 * n) for n in (64, 128, 192, 256)]
    fit = fit_ttft([*normal, _sample(400, 0.006), _sample(450, 0.006)])
    assert fit is not None and fit.slope_s_per_token == pytest.approx(0.0002)
    assert too_fast(fit, _sample(400, 0.006)) == pytest.approx(0.085)
    assert too_fast(fit, _sample(400, 0.080)) is None
