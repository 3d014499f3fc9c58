"""The audit and conform read one table of SGLang releases (``spec/releases.toml``).

Conform drives the releases the table gives an adapter (``fetch.RELEASES``); the audit maps
a node's version to the same rows and takes its defaults and fixes from them. The audit
keeps no release fact of its own: no environment name, no version it decides by (the
incident report's recommended release aside). The deferred-release default is the case
where a copy had drifted: the audit said "on from v0.5.22", the 0.5.21 wheel already
declares ``EnvBool(True)`` (``tests/spec/test_releases.py`` reads the wheels).
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from kvproof.checker.cli import main
from kvproof.checker.upstream import fetch
from kvproof.ops.audit import catalog, release, sglang_env
from kvproof.spec import releases

AUDIT = Path(__file__).resolve().parents[3] / "ops" / "audit"
FIX = Path(__file__).parent / "fixtures"


@pytest.mark.parametrize("version", fetch.RELEASES)
def test_conforms_releases_are_the_audits(version: str) -> None:
    row = releases.get("sglang", version)
    assert row is not None and row.adapter  # conform drives it
    assert release.release_of(version) is row
    assert release.release_of(f"v{version}.post1") is row
    for var in sglang_env.VARS:
        if row.env(var.fact) is None:  # not a setting of this release: no default ...
            off = var.fact == "deferred_release"  # ... but no deferred release is none at all
            assert not off or row.fact("deferred_release_machinery") is False
            assert release.default(var.fact, version) is (False if off else None)
            continue
        assert var.name == row.env(var.fact)
        assert release.default(var.fact, version) == row.default(var.fact)


def test_the_audits_thresholds_are_the_tables() -> None:
    on = [r.version for r in releases.sglang() if r.default("deferred_release") is True]
    retire = [r.version for r in releases.sglang() if r.fact("intake_retires_over_long") is True]
    assert sglang_env.DEFERRED_DEFAULT_ON == on[0] == "0.5.21"
    assert catalog.ADMISSION_FIX["sglang"] == releases.version_key(retire[0]) == (0, 5, 21)
    assert release.default("deferred_release", "0.5.20") is False
    assert release.default("deferred_release", "0.5.21") is True
    assert release.default("deferred_release", "0.5.15") is False  # no deferred release
    assert release.default("deferred_release", None) is None  # the releases disagree
    assert release.default("waiting_timeout_s", None) == 300  # they all agree


def _literals(path: Path) -> list[str]:
    """SGLang environment names and version triples written in ``path`` (docstrings apart)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docs = {
        id(n.body[0].value)
        for n in ast.walk(tree)
        if isinstance(n, ast.Module | ast.FunctionDef | ast.ClassDef)
        and n.body
        and isinstance(n.body[0], ast.Expr)
    }
    found = []
    for n in ast.walk(tree):
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs:
            if n.value.startswith("SGLANG_"):
                found.append(n.value)
        elif isinstance(n, ast.Tuple) and _int_triple(n):
            found.append(ast.unparse(n))
    return found


def _int_triple(n: ast.Tuple) -> bool:
    return len(n.elts) == 3 and all(
        isinstance(e, ast.Constant) and isinstance(e.value, int) for e in n.elts
    )


def test_the_audit_keeps_no_release_fact_of_its_own() -> None:
    found = {f"{p.name}: {x}" for p in sorted(AUDIT.glob("*.py")) for x in _literals(p)}
    assert found == {
        # The incident report's recommendation (docs/upstream.md#press-reports), not a wheel's.
        "catalog.py: (0, 5, 22)",
        # Not a PD setting: whether /server_info lists the environment at all.
        "sglang_env.py: SGLANG_EXPOSE_OWN_ENV_VARS",
        "sglang_rules.py: (0, 0, 0)",  # an unknown version sorts first
    }


def test_a_0_5_21_node_with_deferred_release_unset_has_it_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The drifted fact, end to end: an exposed 0.5.21 environment without the variable is
    resolved to the release's default (on), an unexposed one is said to assume v0.5.21's."""
    info = json.loads((FIX / "fixed" / "decode-0.server_info.json").read_text())
    info["version"] = "0.5.21"
    for state in info["internal_states"]:
        state["env_vars"].pop(sglang_env.DEFERRED, None)
    path = tmp_path / "decode-0.server_info.json"
    path.write_text(json.dumps(info))
    main(["audit", "--json", "--fail-on", "never", "--role", f"{path}=decode", str(path)])
    node = json.loads(capsys.readouterr().out)["nodes"][0]
    assert node["deferred_release"] is True
    for state in info["internal_states"]:
        state.pop("env_vars")  # not exposed: unknown, the release's default assumed
    path.write_text(json.dumps(info))
    main(["audit", "--json", "--fail-on", "never", "--role", f"{path}=decode", str(path)])
    found = json.loads(capsys.readouterr().out)["findings"]
    deferred = next(f for f in found if f["id"] == "deferred-release-disabled")
    assert deferred["severity"] == "info" and "default on from v0.5.21" in deferred["title"]
    assert "on by default from v0.5.21" in deferred["action"]
