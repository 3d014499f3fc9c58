"""Changes planted in a copy of a cached release, as an SGLang developer's branch would have.

An exception raised inside the release's own code during a walk is a finding (exit 1, the
upstream file:line and the walk step, the traceback written), not a kvproof bug; a refactor
of ``Scheduler.abort_request`` that reads more of the real ``Scheduler`` still runs."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest
from release_copy import copy_release

from kvproof.checker.cli import main
from kvproof.checker.upstream import fetch
from kvproof.checker.upstream.run import conform
from kvproof.spec.errors import KvproofInputError
from kvproof.spec.variant import load_variant


def plant(file: Path, anchor: str, line: str) -> int:
    """Insert ``line`` as the first statement of the ``def`` at ``anchor``; its number."""
    lines = file.read_text().splitlines(keepends=True)
    start = next(i for i, text in enumerate(lines) if anchor in text)
    indent = " " * (len(lines[start]) - len(lines[start].lstrip()) + 4)
    at = next(i for i in range(start, len(lines)) if lines[i].split("#")[0].rstrip().endswith(":"))
    lines.insert(at + 1, f"{indent}{line}\n")
    file.write_text("".join(lines))
    return at + 2


def test_a_raise_in_defer_release_is_exit_1_with_file_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tree = copy_release("0.5.22", tmp_path / "python")
    decode = tree / "sglang" / "srt" / "disaggregation" / "decode.py"
    line = plant(decode, "def _defer_release(self", "raise RuntimeError('planted')")
    out = tmp_path / "out"
    rc = main(
        ["conform", "sglang-0.5.22-pd", "--sglang", str(tree), "--traces", "200",
         "--out", str(out), "--json"]
    )  # fmt: skip
    got = json.loads(capsys.readouterr().out)
    assert rc == 1 and got["verdict"] == "raised", got
    where = f"sglang/srt/disaggregation/decode.py:{line}"
    assert where in got["raised"] and "RuntimeError: planted" in got["raised"]
    assert "(_defer_release)" in got["raised"] and "during step " in got["raised"]
    text = next(p for p in map(Path, got["files"]) if p.name.endswith(".traceback.txt"))
    assert where.split(":")[0] in text.read_text() and "RuntimeError" in text.read_text()
    jsonl = next(p for p in map(Path, got["files"]) if p.suffix == ".jsonl")
    header = json.loads(jsonl.read_text().splitlines()[0])
    assert header["meta"]["finding"] == "upstream_exception"
    assert main(["replay", str(jsonl)]) in (0, 1)  # the walk up to the raise is a model walk


def test_a_raise_at_prefill_intake_is_exit_1_too(tmp_path: Path) -> None:
    tree = copy_release("0.5.22", tmp_path)
    utils = tree / "sglang" / "srt" / "managers" / "utils.py"
    line = plant(utils, "def validate_input_length(", "raise KeyError('planted')")
    run = conform(load_variant("sglang-0.5.22-pd"), str(tree), traces=5, out=tmp_path / "o")
    assert run.exit_code == 1 and run.raised is not None
    assert f"sglang/srt/managers/utils.py:{line}" in run.raised and "intake" in run.raised


def test_kvproof_s_own_exception_is_not_blamed_on_sglang(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An exception with no frame in the loaded tree propagates (exit 3 at the CLI)."""
    from kvproof.checker.upstream import drive

    tree = copy_release("0.5.22", tmp_path)

    def broken(self: object, r: int, p: int) -> None:
        raise ZeroDivisionError("kvproof's own")

    monkeypatch.setattr(drive.Harness, "_alloc", broken)
    with pytest.raises(ZeroDivisionError):
        conform(load_variant("sglang-0.5.22-pd"), str(tree), traces=20)


ABORT_SENT = "# an ack racing back is never dropped."  # 0.5.22's transfer-queue abort


def _plant_after(file: Path, anchor: str, lines: list[str]) -> None:
    text = file.read_text().splitlines(keepends=True)
    at = next(i for i, line in enumerate(text) if anchor in line) + 1  # the abort() call
    indent = " " * (len(text[at]) - len(text[at].lstrip()))
    text[at + 1 : at + 1] = [f"{indent}{line}\n" for line in lines]
    file.write_text("".join(text))


def test_a_refactor_reading_more_scheduler_fields_still_conforms(tmp_path: Path) -> None:
    """The abort path reads the real Scheduler's pools and cache (no behaviour change):
    conform runs it and agrees (a stand-in ``self`` without these fields exited 3)."""
    tree = copy_release("0.5.22", tmp_path)
    sched = tree / "sglang" / "srt" / "managers" / "scheduler.py"
    _plant_after(sched, ABORT_SENT, [
        "_pools = (self.tree_cache, self.req_to_token_pool, self.token_to_kv_pool_allocator)",
        "if self.enable_hierarchical_cache and self.server_args.page_size and _pools:",
        "    self.tree_cache.dec_lock_ref(decode_req.req)",
    ])  # fmt: skip
    variant = load_variant("sglang-0.5.22-pd")
    run = conform(variant, str(tree), traces=200, faults=True)
    assert run.exit_code == 0, (run.raised, run.detail)


@pytest.mark.parametrize(
    "free",
    [
        "release_kv_cache(decode_req.req, self.tree_cache)",
        "self.tree_cache.cache_finished_req(decode_req.req)",
        "self.token_to_kv_pool_allocator.free("
        "self.req_to_token_pool.req_to_token[decode_req.req.req_pool_idx])",
    ],
)
def test_freeing_through_the_scheduler_s_cache_is_a_divergence(tmp_path: Path, free: str) -> None:
    """Freeing an aborted transfer's pages at once through ``self.tree_cache`` (or the
    pools) is the early free 0.5.22 fixed: a divergence on ``release``, not a crash."""
    tree = copy_release("0.5.22", tmp_path)
    sched = tree / "sglang" / "srt" / "managers" / "scheduler.py"
    _plant_after(sched, ABORT_SENT, [free])
    run = conform(load_variant("sglang-0.5.22-pd"), str(tree), traces=200)
    assert run.raised is None and run.exit_code == 1 and run.switch == "release", run.detail


def test_an_sglang_tree_with_no_adapter_is_named_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """0.5.1 is SGLang, just older than every adapter: exit 2, "no adapter", the module
    that differs (not "is this an SGLang tree?"). By version it is refused before fetching."""
    import os
    import zipfile

    wheels = sorted(Path(os.environ.get("KVPROOF_SGLANG_WHEELS", "/nonexistent")).glob(
        "sglang-0.5.1-*.whl"
    ))  # fmt: skip
    if not wheels:
        pytest.skip("no sglang 0.5.1 wheel in $KVPROOF_SGLANG_WHEELS")
    with zipfile.ZipFile(wheels[0]) as zf:
        zf.extractall(tmp_path, [n for n in zf.namelist() if n.startswith("sglang/srt/")])
    rc = main(["conform", "sglang-0.5.19-pd", "--sglang", str(tmp_path), "--traces", "1"])
    err = capsys.readouterr().err
    assert rc == 2 and "no conform adapter for this SGLang code" in err, err
    assert re.search(r"sglang/srt/\S+\.py is missing", err) and "SGLang tree?" not in err
    assert main(["conform", "sglang-0.5.19-pd", "--sglang", "0.5.1"]) == 2
    assert "no adapter for SGLang 0.5.1: " in capsys.readouterr().err


def test_a_changed_signature_names_it_once(tmp_path: Path) -> None:
    tree = copy_release("0.5.22", tmp_path)
    conn = tree / "sglang" / "srt" / "disaggregation" / "common" / "conn.py"
    text = conn.read_text().replace("def abort(self):", "def abort(self, why):")
    conn.write_text(text)
    with pytest.raises(KvproofInputError) as info:
        conform(load_variant("sglang-0.5.22-pd"), str(tree), traces=1)
    msg = str(info.value)
    assert "CommonKVReceiver.abort(self, why) differs from the closest adapter's" in msg
    assert "is missing differs" not in msg


def test_prefill_sending_one_page_fewer_is_a_page_count_divergence(tmp_path: Path) -> None:
    """``_num_pages_to_send`` one short (the page count the incident's fix relies on): the
    request that fits gets 16 of its 17 reserved pages, named in the page counts."""
    tree = copy_release("0.5.22", tmp_path)
    prefill = tree / "sglang" / "srt" / "disaggregation" / "prefill.py"
    text = prefill.read_text()
    old = (
        "        return kv_to_page_num(\n            len(req.origin_input_ids) - decode_prefix_len,"
    )
    assert old in text
    prefill.write_text(
        text.replace(old, old.replace("return kv_to_page_num(", "return -1 + kv_to_page_num("))
    )
    run = conform(load_variant("sglang-0.5.22-pd"), str(tree), traces=50)
    assert run.exit_code == 1 and run.switch == "decode_reserve", run.detail
    assert "pages_sent_of_reserved: model whole, code short (16 of 17 reserved" in run.detail[0]
    assert run.pages is not None and run.pages["fits"].sent == 16


def test_prefill_counting_one_token_fewer_is_a_page_count_divergence(tmp_path: Path) -> None:
    """A token off-by-one in the count (``len(origin_input_ids) - prefix - 1``) changes the
    page count only when the prompt is one token past a page boundary: the prompt that fits
    is 1,025 tokens (16 pages and one), so prefill sends 16 of the 17 decode reserved."""
    tree = copy_release("0.5.22", tmp_path)
    prefill = tree / "sglang" / "srt" / "disaggregation" / "prefill.py"
    text = prefill.read_text()
    old = "            len(req.origin_input_ids) - decode_prefix_len,"
    assert old in text
    prefill.write_text(text.replace(old, old.replace(",", " - 1,")))
    run = conform(load_variant("sglang-0.5.22-pd"), str(tree), traces=50)
    assert run.exit_code == 1, run.detail
    assert "code short (16 of 17 reserved, 1025-token prompt)" in run.detail[0]


def test_0_5_19_shows_the_incident_s_page_counts(capsys: pytest.CaptureFixture[str]) -> None:
    try:
        fetch.cached("0.5.19")
    except KvproofInputError as exc:
        pytest.skip(str(exc))
    assert main(["conform", "sglang-0.5.19-pd", "--sglang", "0.5.19", "--traces", "20"]) == 0
    out = capsys.readouterr().out
    assert "40000-token prompt (over-long): decode reserves 625, prefill sends 1" in out
    # 0.5.22's model on 0.5.19's code: with deferred release on and client aborts only, the
    # abort paths agree, and with decode's door as 0.5.19's (it queues a prompt over its
    # limit) the first difference is at the over-long prompt's arrival.
    deferred = {"SGLANG_DISAGGREGATION_DEFERRED_DECODE_KV_RELEASE": True}
    v = load_variant("sglang-0.5.22-pd")
    v = dataclasses.replace(
        v, switches=dataclasses.replace(v.switches, decode_admission="queue_reject")
    )
    run = conform(v, "0.5.19", traces=20, faults=False, env=deferred)
    got = run.to_json()
    assert run.exit_code == 1 and got["pages"]["over_long"]["prefill_sent_pages"] == 1
    assert got["detail"][0].startswith("r") and "code short (1 of 625 reserved" in got["detail"][0]


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("return len(acks) >= required_acks", "return len(acks) >= 1"),
        ("else len(decode_req.kv_receiver.bootstrap_infos)", "else 1"),
    ],
)
def test_one_ack_per_request_instead_of_per_rank_is_caught(
    tmp_path: Path, old: str, new: str
) -> None:
    """Two prefill ranks: a hold released on the first rank's ABORT_ACK is a divergence."""
    tree = copy_release("0.5.22", tmp_path)
    disagg = tree / "sglang" / "srt" / "disaggregation"
    for file in (disagg / "common" / "conn.py", disagg / "decode.py"):
        text = file.read_text()
        if old in text:
            file.write_text(text.replace(old, new))
            break
    else:
        raise AssertionError(f"{old!r} not in the release")
    run = conform(load_variant("sglang-0.5.22-pd"), str(tree), traces=300, faults=True)
    assert run.exit_code == 1, run.detail
    assert any("released_after_acks: model all, code 1 of 2" in d for d in run.detail)
    # The model's ``ack`` is every rank's at once: no single switch flip explains it.
    assert run.diagnosis is not None and "no single switch explains it" in run.diagnosis.headline


def test_a_dropped_failed_status_is_a_decode_status_divergence(tmp_path: Path) -> None:
    """``update_status`` ignoring Failed (``max`` keeps the higher status): the abort that
    the receiver records leaves decode's room pending where the model's poll is failed."""
    tree = copy_release("0.5.22", tmp_path)
    conn = tree / "sglang" / "srt" / "disaggregation" / "common" / "conn.py"
    text = conn.read_text()
    old = "        if status == KVPoll.Failed:\n            self.request_status[bootstrap_room] = "
    assert text.count(old) == 1
    conn.write_text(text.replace(old, old.replace("if status == KVPoll.Failed:", "if False:")))
    run = conform(load_variant("sglang-0.5.22-pd"), str(tree), traces=50)
    assert run.exit_code == 1, run.detail
    # Prefill's ranks run the same ``update_status`` (status.py): whichever side's room the
    # walk fails first shows it.
    assert any(f"{side}_status: model failed, code pending" in run.detail[0]
               for side in ("decode", "prefill"))  # fmt: skip
