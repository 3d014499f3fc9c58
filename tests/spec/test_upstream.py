"""The ``[upstream]`` table and the key lines the loader records."""

from __future__ import annotations

from pathlib import Path

import pytest

from kvproof.checker.cli import main
from kvproof.spec.errors import KvproofInputError
from kvproof.spec.lines import key_lines
from kvproof.spec.variant import VARIANTS_DIR, list_variants, load_variant, load_variant_file

INCIDENT = VARIANTS_DIR / "sglang-0.5.19-pd.toml"
TABLE = (
    '[upstream]\nengine = "sglang"\nreleases = ["0.5.15", "0.5.16", "0.5.17", "0.5.18", "0.5.19"]\n'
)


def _with_table(tmp_path: Path, table: str) -> Path:
    src = INCIDENT.read_text()
    assert TABLE in src
    path = tmp_path / "sglang-0.5.19-pd.toml"
    path.write_text(src.replace(TABLE, table))
    return path


def test_every_sglang_and_vllm_variant_names_its_releases_or_why_none() -> None:
    for v in list_variants():
        if v.engine in ("sglang", "vllm"):
            assert v.upstream is not None, v.name
            assert bool(v.upstream.releases) != bool(v.upstream.exempt), v.name
        else:
            assert v.upstream is None, v.name


def test_the_vllm_releases_and_their_connector_settings() -> None:
    upstream = {v.name: v.upstream for v in list_variants() if v.upstream}
    for mode in ("pull", "push"):
        table = upstream[f"vllm-0.34-nixl-{mode}"]
        assert table.releases == ("0.33.0", "0.34.0")
        assert table.kv_transfer_config == {"kv_load_failure_policy": "fail"}
        assert table.kv_connector_extra_config["transfer_mode"] == mode
    assert upstream["vllm-nixl-fixed"].exempt and upstream["vllm-nixl-push-fixed"].exempt


@pytest.mark.parametrize(
    ("engine", "table", "says"),
    [
        ("sglang", "[upstream.kv_transfer_config]\nkv_connector = 'X'\n", "of sglang"),
        ("vllm", "[upstream.server_args]\nx = 1\n", "not a setting of vllm"),
    ],
)
def test_each_engine_takes_its_own_settings_tables(
    tmp_path: Path, engine: str, table: str, says: str
) -> None:
    name = "sglang-0.5.22-pd" if engine == "sglang" else "vllm-0.34-nixl-pull"
    src = (VARIANTS_DIR / f"{name}.toml").read_text()
    path = tmp_path / f"{name}.toml"
    path.write_text(src.replace("\n[switches]", "\n" + table + "\n[switches]", 1))
    with pytest.raises(KvproofInputError, match=says):
        load_variant_file(path)


def test_the_catalog_mapping() -> None:
    newer = ("0.5.21", "0.5.22", "0.5.23")
    upstream = {v.name: v.upstream for v in list_variants() if v.upstream}
    older = ("0.5.15", "0.5.16", "0.5.17", "0.5.18")
    assert upstream["sglang-0.5.19-pd"].releases == (*older, "0.5.19")
    # 0.5.20 downgrades a late Success and retires the stub after its forward.
    assert upstream["sglang-0.5.20-pd"].releases == ("0.5.20",)
    # 0.5.21 counts a late ABORT_ACK of an earlier abort of the room (ack_generation).
    assert upstream["sglang-0.5.21-pd"].releases == ("0.5.21",)
    assert upstream["sglang-0.5.22-pd"].releases == newer[1:]
    assert upstream["sglang-pd-deferred-timeout"].releases == newer[1:]
    early = upstream["sglang-pd-early-free-abort"]
    assert early.releases == newer
    assert early.env == {"SGLANG_DISAGGREGATION_DEFERRED_DECODE_KV_RELEASE": False}
    assert upstream["sglang-0.5.22-pd"].latest == "0.5.23"
    for exempt in ("sglang-0.5.22-pd-guarded", "sglang-pd-decode-radix-fixed"):
        assert upstream[exempt].exempt and upstream[exempt].latest is None
    assert "38355" in (upstream["sglang-pd-decode-radix-fixed"].exempt or "")


@pytest.mark.parametrize(
    ("table", "says"),
    [
        (TABLE + "release = '0.5.19'\n", "unknown key 'upstream.release'; did you mean 'releases'"),
        ('[upstream]\nengine = "sglang"\nreleases = "0.5.19"\n', "must be a list of version"),
        ('[upstream]\nengine = "sglang"\nreleases = ["v0.5.19"]\n', "'v0.5.19', which is not"),
        ('[upstream]\nengine = "sglang"\nreleases = ["0.5.19", "0.5.19"]\n', "twice"),
        ('[upstream]\nengine = "vllm"\nreleases = ["0.5.19"]\n', "variant's engine is 'sglang'"),
        ('[upstream]\nreleases = ["0.5.19"]\n', "'upstream.engine' must be a string"),
        ('[upstream]\nengine = "sglang"\n', "needs 'releases'"),
        ('[upstream]\nengine = "sglang"\nexempt = ""\n', "'upstream.exempt' must be a string"),
        (TABLE + 'exempt = "a proposal"\n', "both given"),
        ('[upstream]\nengine = "sglang"\nreleases = ["0.5.21"]\n', "'version' is '0.5.19'"),
        (TABLE + "[upstream.env]\nlower_case = 1\n", "'upstream.env.lower_case' is not shaped"),
        (TABLE + "[upstream.env]\nSGLANG_X = [1]\n", "'upstream.env.SGLANG_X' must be a"),
        (TABLE + "[upstream.server_args]\nBAD = 1\n", "'upstream.server_args.BAD'"),
        ("upstream = 3\n", "'upstream' must be a"),
    ],
)
def test_a_bad_table_is_one_line_naming_file_and_key(
    tmp_path: Path, table: str, says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    if table.startswith("upstream ="):  # a top-level key, before any table
        path = tmp_path / "sglang-0.5.19-pd.toml"
        path.write_text(table + INCIDENT.read_text().replace(TABLE, ""))
    else:
        path = _with_table(tmp_path, table)
    with pytest.raises(KvproofInputError) as err:
        load_variant_file(path)
    assert says in str(err.value) and str(path) in str(err.value)
    assert main(["check", str(path)]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and says in lines[0]


def test_releases_are_sorted_and_env_kept(tmp_path: Path) -> None:
    table = (
        '[upstream]\nengine = "sglang"\nreleases = ["0.5.20", "0.5.19"]\n\n'
        "[upstream.env]\nSGLANG_DISAGGREGATION_WAITING_TIMEOUT = 60\n\n"
        '[upstream.server_args]\ndisaggregation_transfer_backend = "mooncake"\n'
    )
    upstream = load_variant_file(_with_table(tmp_path, table)).upstream
    assert upstream is not None and upstream.releases == ("0.5.19", "0.5.20")
    assert upstream.env == {"SGLANG_DISAGGREGATION_WAITING_TIMEOUT": 60}
    assert upstream.server_args == {"disaggregation_transfer_backend": "mooncake"}


def test_key_lines_point_at_the_key() -> None:
    variant = load_variant("sglang-0.5.22-pd")
    text = variant.path.read_text().splitlines()
    keys = ("name", "sources", "upstream", "upstream.releases", "switches.release")
    keys += ("assume.bounded_transfer", "expect", "expect.isolation", "engine_sizes.page_size")
    for key in keys:
        line = text[variant.lines[key] - 1]
        leaf = key.rsplit(".", 1)[-1]
        assert line.startswith(f"[{key}]") or line.startswith(f"{leaf} ="), (key, line)


def test_key_lines_skip_multiline_values() -> None:
    text = (
        'summary = """one\nfake = 1\n"""\nsources = [\n  "a ] [b",\n  "c",\n]\n'
        "[t]\nk = 2 # [x]\n[t.sub]\nk = 3\n"
    )
    assert key_lines(text) == {"summary": 1, "sources": 4, "t": 8, "t.k": 9, "t.sub": 10,
                               "t.sub.k": 11}  # fmt: skip
