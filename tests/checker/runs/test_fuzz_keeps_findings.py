"""A second ``kvproof fuzz`` keeps the first finding (issue 41: it overwrote
``kvproof-out/V.fuzz-0.jsonl``): each run's trace and report get a name no earlier file has."""

from __future__ import annotations

from pathlib import Path

from kvproof.checker.cli import main
from kvproof.spec.files import unused_stem


def test_a_second_fuzz_run_keeps_the_first_finding(tmp_path: Path) -> None:
    out, html = tmp_path / "out", tmp_path / "html"
    argv = ["fuzz", "sglang-0.5.19-pd", "--traces", "20", "--out", str(out), "--html", str(html)]
    argv += ["--quiet"]
    assert main(argv) == 1
    first = out / "sglang-0.5.19-pd.fuzz-0.jsonl"
    # stand in for an earlier, different finding under the name the next run would take
    first.write_text(first.read_text(encoding="utf-8") + "\n", encoding="utf-8")
    kept = first.read_bytes()
    assert main(argv) == 1
    assert first.read_bytes() == kept
    second = out / "sglang-0.5.19-pd.fuzz-0.run2.jsonl"
    assert second.exists() and second.read_bytes() != kept
    assert sorted(p.name for p in html.iterdir()) == [
        "sglang-0.5.19-pd.fuzz-0.html",
        "sglang-0.5.19-pd.fuzz-0.run2.html",
    ]
    assert main(argv) == 1
    assert (out / "sglang-0.5.19-pd.fuzz-0.run3.jsonl").exists()


def test_unused_stem_looks_at_every_place(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    assert unused_stem([(a, ".jsonl"), (b, ".html")], "v.fuzz-0") == "v.fuzz-0"
    (b / "v.fuzz-0.html").write_text("x")
    assert unused_stem([(a, ".jsonl"), (b, ".html")], "v.fuzz-0") == "v.fuzz-0.run2"
    assert unused_stem([(a, ".jsonl")], "v.fuzz-0") == "v.fuzz-0"
