"""Every assumption and variant an audit finding can name is declared (issue 12).

Two walks over the rules: statically, every ``AuditFinding(...)`` in ``ops/audit/``
(its ``variant=`` and ``assumption=`` literals, module constants and both arms of a
conditional; anything computed must be on a short reviewed list); and by running the audit
on every fixture deployment, plus edits that trigger the rules no fixture triggers. A named
variant must load from ``spec/variants``; a named assumption must be declared in
``spec/assumptions.py`` and listed in the ``[assume]`` of the fixed counterpart of the
variant it comes with (the assumption that variant's environment breaks).
"""

from __future__ import annotations

import ast
import json
import shutil
from pathlib import Path

import pytest

from kvproof.checker.cli import main
from kvproof.ops.audit import catalog
from kvproof.spec.assumptions import ASSUMPTIONS
from kvproof.spec.variant import list_variants, load_variant

ROOT = Path(__file__).parents[3]
AUDIT = ROOT / "ops" / "audit"
FIX = Path(__file__).parent / "fixtures"
NAMED = ("variant", "assumption")
# Computed names, each reviewed: the window's variant comes from ``catalog.match``, which
# picks among ``list_variants()`` (checked below by ``test_catalog_matches_load``).
COMPUTED = {"findings.py variant: m.variant"}


def _constants(tree: ast.Module) -> dict[str, str]:
    out = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
            for target in node.targets:
                if isinstance(target, ast.Name) and isinstance(node.value.value, str):
                    out[target.id] = node.value.value
    return out


def _collect(node: ast.expr, consts: dict[str, str], into: set[str], other: set[str]) -> None:
    if isinstance(node, ast.Constant):
        if node.value is not None:
            into.add(str(node.value))
    elif isinstance(node, ast.Name) and node.id in consts:
        into.add(consts[node.id])
    elif isinstance(node, ast.IfExp):
        _collect(node.body, consts, into, other)
        _collect(node.orelse, consts, into, other)
    else:
        other.add(ast.unparse(node))


def emitted() -> tuple[dict[str, set[str]], set[str], int]:
    """(names per keyword, computed expressions, number of AuditFinding calls)."""
    names: dict[str, set[str]] = {k: set() for k in NAMED}
    computed: set[str] = set()
    calls = 0
    for path in sorted(AUDIT.glob("*.py")):
        tree = ast.parse(path.read_text())
        consts = _constants(tree)
        for call in ast.walk(tree):
            if not isinstance(call, ast.Call):
                continue
            func = call.func
            name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
            if name == "replace":  # dataclasses.replace(finding, variant=...) counts too
                assert not {k.arg for k in call.keywords} & set(NAMED), path
            if name != "AuditFinding":
                continue
            calls += 1
            assert all(k.arg is not None for k in call.keywords), f"{path.name}: **kwargs"
            for kw in call.keywords:
                if kw.arg in NAMED:
                    other: set[str] = set()
                    _collect(kw.value, consts, names[kw.arg], other)
                    computed |= {f"{path.name} {kw.arg}: {e}" for e in other}
    return names, computed, calls


def test_every_name_a_rule_can_emit_is_declared() -> None:
    names, computed, calls = emitted()
    assert calls >= 15  # every rule module was read
    assert computed == COMPUTED, "a computed name: review it and add a check here"
    for variant in names["variant"]:
        assert load_variant(variant).name == variant
    undeclared = names["assumption"] - set(ASSUMPTIONS)
    assert not undeclared, f"named by the audit, not in spec/assumptions.py: {undeclared}"
    assert names["assumption"]  # the scan saw the assumptions the rules do name


def test_catalog_matches_load() -> None:
    for engine in ("sglang", "vllm"):
        for version in (None, "garbage", "0.4.0", "0.5.19", "0.5.20", "0.5.22", "0.6.1"):
            m = catalog.match(engine, version)
            if m is None:
                continue
            assert load_variant(m.variant).name == m.variant
            assert m.fixed is None or not load_variant(m.fixed).buggy


def _findings(args: list[str], capsys: pytest.CaptureFixture[str]) -> list[dict]:
    capsys.readouterr()
    if main(["audit", "--json", *args]) == 2:  # a truncated fixture: bad input, no report
        return []
    return json.loads(capsys.readouterr().out)["findings"]


def _edited(tmp_path: Path, name: str, edits: dict[str, list[tuple[str, str]]]) -> str:
    root = tmp_path / name
    shutil.copytree(FIX / "fixed", root / "fixed")
    shutil.copy(FIX / "fixed.toml", root / "fixed.toml")
    for file, pairs in edits.items():
        text = (root / file).read_text()
        for old, new in pairs:
            assert old in text, (file, old)
            text = text.replace(old, new)
        (root / file).write_text(text)
    return str(root / "fixed.toml")


CHECKSUM_OFF = [
    ("'disaggregation_enable_kv_checksum': True", "'disaggregation_enable_kv_checksum': False"),
]
CHECKSUM_OFF_JSON = [
    ('"disaggregation_enable_kv_checksum": true', '"disaggregation_enable_kv_checksum": false'),
]


def test_every_finding_on_the_fixtures_names_declared_things(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = [[str(p)] for p in sorted(FIX.glob("*.toml"))]
    runs += [[str(p)] for p in sorted((ROOT / "examples" / "audit").glob("*.toml"))]
    runs += [[str(p)] for p in sorted(FIX.glob("*.log")) + sorted(FIX.glob("*.json"))]
    # The checksum on decode only: the one-sided case the catalog has a variant for.
    decode_only = {
        "fixed/prefill-0.log": CHECKSUM_OFF,
        "fixed/prefill-0.server_info.json": CHECKSUM_OFF_JSON,
        "fixed/prefill-0.launch.sh": [("  --disaggregation-enable-kv-checksum \\\n", "")],
    }
    runs.append([_edited(tmp_path, "decode-only", decode_only)])
    seen: dict[str, tuple[str | None, str | None]] = {}
    for args in runs:
        for f in _findings(args, capsys):
            seen[f["id"]] = (f["variant"], f["assumption"])
    assert seen["checksum-one-sided"] == ("sglang-pd-checksum-decode-only", None)
    assert seen["lease-read-after-expiry"] == ("vllm-stale-block-lease", "lease_outlives_read")
    fixed_of = {v.name: v.counterpart for v in list_variants()}
    for rule, (variant, assumption) in seen.items():
        if variant is not None:
            assert load_variant(variant).name == variant, rule
        if assumption is None:
            continue
        assert assumption in ASSUMPTIONS, rule
        # The assumption the fixed counterpart relies on and the variant's setting breaks.
        assert variant is not None, rule
        counterpart = load_variant(fixed_of[variant])
        assert assumption in counterpart.assume, (rule, variant, counterpart.name)
