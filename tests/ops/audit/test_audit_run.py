"""``audit_deployment`` is the whole command: the run's exit code and document are the CLI's."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kvproof.checker.cli import main
from kvproof.ops.audit import Severity
from kvproof.ops.audit.run import audit_deployment
from kvproof.spec.errors import KvproofInputError

INCIDENT = str(Path(__file__).parent / "fixtures" / "incident.toml")


def test_the_run_is_what_the_cli_prints(capsys: pytest.CaptureFixture[str]) -> None:
    run = audit_deployment([INCIDENT], fail_on="critical")
    assert run.fail_on == Severity.CRITICAL and run.exit_code == 1
    capsys.readouterr()
    assert main(["audit", "--json", "--fail-on", "critical", INCIDENT]) == run.exit_code
    assert json.loads(capsys.readouterr().out) == run.to_json()


def test_never_fails_on_nothing() -> None:
    run = audit_deployment([INCIDENT], fail_on="never")
    assert run.fail_on is None and run.exit_code == 0
    assert run.to_json()["fail_on"] == "never"


def test_roles_are_the_cli_strings() -> None:
    with pytest.raises(KvproofInputError):
        audit_deployment([INCIDENT], ["prefill-0=leader"])


def test_the_run_loads_neither_torch_nor_the_model() -> None:
    """An operator audits on a laptop: the run object must not pull the checker's weight."""
    code = (
        "import sys; from kvproof.checker.cli import main; main(sys.argv[1:]); "
        "print(sorted(m for m in sys.modules if m == 'torch' or m.startswith('kvproof.model')))"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[3] / "src")}
    done = subprocess.run(
        [sys.executable, "-c", code, "audit", "--json", INCIDENT],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.stdout.strip().splitlines()[-1] == "[]", done.stderr
