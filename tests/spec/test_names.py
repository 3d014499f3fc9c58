"""Did you mean: a mistyped variant, invariant, assumption or switch gets the nearest name,
before Z3 or torch is loaded."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from kvproof.spec.errors import KvproofInputError
from kvproof.spec.names import did_you_mean, nearest
from kvproof.spec.variant import VARIANTS_DIR, load_variant, load_variant_file

SRC = Path(__file__).parents[2] / "src"


def test_nearest_puts_the_names_that_extend_the_typed_one_first() -> None:
    known = ["sglang-0.5.22-pd", "sglang-0.5.19-pd", "vllm-stale-block-lease"]
    assert nearest("sglang-0.5.19", known)[0] == "sglang-0.5.19-pd"
    assert did_you_mean("zzz", known) == ""


def test_unknown_variant_suggests_and_does_not_list_every_variant() -> None:
    with pytest.raises(KvproofInputError) as err:
        load_variant("sglang-0.5.19")
    text = str(err.value)
    assert "did you mean 'sglang-0.5.19-pd'" in text and "'kvproof variants'" in text
    assert "dynamo-prefill-early-free" not in text  # not all 22 on one line


def test_mistyped_switch_in_a_variant_file(tmp_path: Path) -> None:
    text = (VARIANTS_DIR / "sglang-0.5.19-pd.toml").read_text()
    bad = tmp_path / "v.toml"
    bad.write_text(text.replace("\n[switches]\n", "\n[switches]\ntransfer_checksumm = 'off'\n"))
    with pytest.raises(KvproofInputError, match="did you mean 'transfer_checksum'"):
        load_variant_file(bad)


@pytest.mark.parametrize(
    ("argv", "hint"),
    [
        (["check", "sglang-0.5.19"], "did you mean 'sglang-0.5.19-pd'"),
        (["prove", "sglang-0.5.22"], "did you mean 'sglang-0.5.22-pd'"),
        (["explore", "sglang-0.5.19"], "did you mean 'sglang-0.5.19-pd'"),
        (["fuzz", "sglang-0.5.19"], "did you mean 'sglang-0.5.19-pd'"),
        (["check", "sglang-0.5.19-pd", "--invariant", "isolaton"], "did you mean 'isolation'"),
        (
            ["check", "sglang-0.5.22-pd", "--without", "bounded_transf"],
            "did you mean 'bounded_transfer'",
        ),
    ],
)
def test_cli_suggests_before_loading_z3_or_torch(argv: list[str], hint: str) -> None:
    # A fresh interpreter: this test process may have loaded Z3 already.
    code = (
        "import sys; from kvproof.checker.cli import main; rc = main(sys.argv[1:]); "
        "heavy = sorted({'z3', 'torch'} & set(sys.modules)); print(rc, heavy)"
    )
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    done = subprocess.run(
        [sys.executable, "-c", code, *argv], capture_output=True, text=True, env=env, timeout=60
    )
    assert done.stdout.strip() == "2 []", done.stderr
    err = done.stderr.strip()
    assert hint in err and "\n" not in err
