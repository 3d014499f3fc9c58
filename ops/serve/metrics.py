"""``GET /metrics``: the engine's counters in the Prometheus text format (version 0.0.4)."""

from __future__ import annotations

from kvproof.ops.serve.runner import EngineStats


def prometheus(s: EngineStats) -> str:
    rows: list[tuple[str, str, str, list[tuple[str, int]]]] = [
        ("kvproof_page_size_tokens", "gauge", "tokens per KV page", [("", s.page_size)]),
        (
            "kvproof_pool_pages",
            "gauge",
            "KV pool size in pages, per node",
            [('{node="decode"}', s.decode_pages), ('{node="prefill"}', s.prefill_pages)],
        ),
        (
            "kvproof_pool_pages_in_use",
            "gauge",
            "KV pages allocated now, per node",
            [
                ('{node="decode"}', s.decode_pages_in_use),
                ('{node="prefill"}', s.prefill_pages_in_use),
            ],
        ),
        (
            "kvproof_transfers_in_flight",
            "gauge",
            "RDMA writes posted and not landed",
            [("", s.transfers_in_flight)],
        ),
        ("kvproof_requests_running", "gauge", "requests in the engine", [("", s.requests_live)]),
        (
            "kvproof_requests_waiting",
            "gauge",
            "requests queued for pool space",
            [("", s.requests_waiting)],
        ),
        (
            "kvproof_responses_total",
            "counter",
            "finished requests by status",
            [(f'{{status="{k}"}}', v) for k, v in sorted(s.responses.items())],
        ),
        (
            "kvproof_rejects_total",
            "counter",
            "requests rejected (400)",
            [("", s.responses.get("400", 0))],
        ),
        (
            "kvproof_aborts_total",
            "counter",
            "requests aborted (client disconnect)",
            [("", s.responses.get("aborted", 0))],
        ),
        (
            "kvproof_guard_trips_total",
            "counter",
            "decode reads stopped by a page-tag mismatch",
            [("", s.guard_trips)],
        ),
        ("kvproof_engine_events_total", "counter", "engine events applied", [("", s.events)]),
        (
            "kvproof_oracle_stray_writes_total",
            "counter",
            "oracle (reference engine ground truth): writes landed in a page not owned",
            [("", s.stray_writes)],
        ),
        (
            "kvproof_oracle_stale_reads_total",
            "counter",
            "oracle (reference engine ground truth): 200 answers that read stale KV",
            [("", s.stale_reads)],
        ),
    ]
    lines = [f'kvproof_info{{variant="{s.variant}"}} 1']
    for name, kind, help_text, samples in rows:
        lines += [f"# HELP {name} {help_text}", f"# TYPE {name} {kind}"]
        lines += [f"{name}{labels} {value}" for labels, value in samples]
    return "\n".join(lines) + "\n"


def parse_prometheus(text: str) -> dict[str, float]:
    """``name{labels}`` -> value, for tests and the probe (no HELP/TYPE lines)."""
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            key, _, value = line.rpartition(" ")
            out[key] = float(value)
    return out
