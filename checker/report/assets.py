"""The report's stylesheet, inlined into every page (a report opens from disk, offline).

Every rule is scoped under ``.kvproof-report`` so the same markup can sit inside a Jupyter
output cell without restyling the notebook. Light and dark follow
``prefers-color-scheme``; ``@media print`` drops scrolling and keeps sections whole. Marks
never rely on colour alone: stale cells are hatched and say "STALE", the violating step
carries a warning sign and the invariant's name, in-flight writes an arrow.
"""

CSS = """
.kvproof-report {
  --fg: #1d232b; --bg: #ffffff; --muted: #5b6673; --line: #c7ced6; --panel: #f4f6f8;
  --accent: #1f5fbf; --bad: #b3261e; --bad-bg: #fde7e4; --ok: #1e6b34; --ok-bg: #e3f3e7;
  --warn-bg: #fff3cd; --own-bg: #e6eefb; --old-fg: #6d5a00;
  color: var(--fg); background: var(--bg);
  font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif;
  max-width: 1280px; margin: 0 auto; padding: 16px 20px 40px;
  -webkit-print-color-adjust: exact; print-color-adjust: exact;
}
@media (prefers-color-scheme: dark) {
  .kvproof-report {
    --fg: #e6e9ee; --bg: #14181d; --muted: #9aa5b1; --line: #3a434d; --panel: #1d232a;
    --accent: #7fb0ff; --bad: #ff8a80; --bad-bg: #4a1d1a; --ok: #8fd19e; --ok-bg: #183322;
    --warn-bg: #3d3314; --own-bg: #1d2c44; --old-fg: #e0c96a;
  }
}
.kvproof-report h1 { font-size: 22px; margin: 0 0 4px; }
.kvproof-report h2 { font-size: 17px; margin: 28px 0 8px; border-bottom: 1px solid var(--line);
  padding-bottom: 4px; }
.kvproof-report .subtitle { color: var(--muted); margin: 0 0 12px; }
.kvproof-report .verdict { font-weight: 600; padding: 8px 12px; border-radius: 6px;
  border-left: 6px solid var(--bad); background: var(--bad-bg); margin: 10px 0; }
.kvproof-report .verdict.holds { border-left-color: var(--ok); background: var(--ok-bg); }
.kvproof-report .why { background: var(--warn-bg); padding: 8px 12px; border-radius: 6px; }
.kvproof-report .note { color: var(--muted); font-size: 13px; }
.kvproof-report code { font: 12.5px/1.4 ui-monospace, SFMono-Regular, Menlo, Consolas,
  monospace; }
.kvproof-report table { border-collapse: collapse; }
.kvproof-report th, .kvproof-report td { border: 1px solid var(--line); padding: 4px 6px;
  vertical-align: top; text-align: left; }
.kvproof-report thead th { background: var(--panel); }
.kvproof-report .chart-scroll, .kvproof-report .grid-scroll { overflow-x: auto; }
/* message sequence chart */
.kvproof-report svg text { fill: var(--fg); font: 12px ui-monospace, Menlo, Consolas,
  monospace; }
.kvproof-report svg .lane-name { font: 600 13px system-ui, sans-serif; }
.kvproof-report svg .lifeline { stroke: var(--line); stroke-width: 2; stroke-dasharray: 4 3; }
.kvproof-report svg .arrow { stroke: var(--accent); stroke-width: 1.6; }
.kvproof-report svg .arrowhead { fill: var(--accent); }
.kvproof-report svg .step-no { fill: var(--muted); }
.kvproof-report svg .msg-extra { fill: var(--muted); font-size: 11px; }
.kvproof-report svg .msg-extra.status { fill: var(--fg); font-size: 14px; font-weight: 700; }
.kvproof-report svg .violation .msg-extra { fill: var(--bad); }
.kvproof-report svg .violation .band { fill: var(--bad-bg); stroke: var(--bad);
  stroke-width: 1.5; }
.kvproof-report svg .violation .arrow { stroke: var(--bad); stroke-width: 2.6; }
.kvproof-report svg .violation text { font-weight: 700; }
.kvproof-report svg .violation-mark { fill: var(--bad); }
.kvproof-report svg .stale-read .msg-label { text-decoration: underline wavy; }
.kvproof-report svg .fold text { fill: var(--muted); font-style: italic; }
/* a lasso's loop (issue #29): a dashed band, an arrow back up, "forever" in words too */
.kvproof-report svg .loop-band { fill: none; stroke: var(--accent); stroke-width: 1.4;
  stroke-dasharray: 6 4; }
.kvproof-report svg .loop-arrow { stroke: var(--accent); stroke-width: 2.2; }
.kvproof-report svg .loop-mark, .kvproof-report svg .loop-back { fill: var(--accent);
  font-weight: 700; }
.kvproof-report svg .forever-mark { fill: var(--bad); font-weight: 700; }
.kvproof-report .forever-mark { color: var(--bad); font-weight: 700; white-space: nowrap; }
.kvproof-report ul.forever-list { list-style: none; padding-left: 6px; }
.kvproof-report table.pool th.in-loop { border-top: 4px solid var(--accent); }
.kvproof-report table.pool th.loop-back { border-top: 4px solid var(--accent);
  color: var(--accent); }
.kvproof-report table.pool td.loop-back { color: var(--accent); font-weight: 700; }
.kvproof-report td.loop-back.forever { background: var(--bad-bg); }
/* page pool grid */
.kvproof-report table.pool td, .kvproof-report table.pool th { font-size: 11.5px;
  min-width: 64px; }
.kvproof-report table.pool thead th { font-weight: 500; }
.kvproof-report table.pool .col-no { display: block; font-weight: 700; }
.kvproof-report table.pool th.violation { background: var(--bad-bg); color: var(--bad);
  border: 2px solid var(--bad); }
.kvproof-report td.owned { background: var(--own-bg); }
.kvproof-report td.free .own { color: var(--muted); }
.kvproof-report td.old .kv { color: var(--old-fg); font-style: italic; }
.kvproof-report td.inflight { outline: 2px dashed var(--accent); outline-offset: -3px; }
.kvproof-report td.stale { background: repeating-linear-gradient(45deg, var(--bad-bg),
  var(--bad-bg) 5px, transparent 5px, transparent 10px); border: 2px solid var(--bad); }
.kvproof-report td.violation-col { border-left: 2px solid var(--bad);
  border-right: 2px solid var(--bad); }
.kvproof-report .stale-mark, .kvproof-report .leak-mark { color: var(--bad);
  font-weight: 700; }
.kvproof-report .wrong-mark { color: var(--fg); font-weight: 700; }
.kvproof-report .unwritten { color: var(--muted); }
.kvproof-report .read { font-weight: 600; }
.kvproof-report .stale-list { padding-left: 18px; }
/* engine side */
.kvproof-report table.responses td.text { max-width: 420px; word-break: break-all; }
.kvproof-report tr.leak th, .kvproof-report tr.leak td.status { background: var(--bad-bg); }
.kvproof-report tr.wrong th, .kvproof-report tr.wrong td.status { background: var(--warn-bg); }
.kvproof-report mark.canary { background: var(--warn-bg); color: var(--fg);
  border: 1px solid var(--line); padding: 0 2px; }
.kvproof-report mark.canary.foreign { background: var(--bad-bg); border: 2px solid var(--bad);
  font-weight: 700; }
.kvproof-report mark .flag { color: var(--bad); }
.kvproof-report .differs { color: var(--bad); font-weight: 600; }
.kvproof-report .same { color: var(--ok); }
/* proofs, legend, variant */
.kvproof-report ol.clauses li { margin: 4px 0; }
.kvproof-report .clause { display: block; }
.kvproof-report .failed-clause { border-left: 4px solid var(--bad); padding-left: 6px; }
.kvproof-report tr.changed td { font-weight: 700; }
.kvproof-report tr.changed > td:first-child::before { content: "Δ "; color: var(--bad); }
.kvproof-report dl.legend { display: grid; grid-template-columns: max-content 1fr;
  gap: 4px 12px; }
.kvproof-report dl.legend dt { font-weight: 600; }
.kvproof-report .swatch { display: inline-block; min-width: 60px; padding: 1px 4px;
  border: 1px solid var(--line); font-size: 11.5px; }
.kvproof-report svg.graph .node circle { fill: var(--panel); stroke: var(--accent);
  stroke-width: 1.5; }
.kvproof-report svg.graph .node.violated circle { fill: var(--bad-bg); stroke: var(--bad);
  stroke-width: 2.5; }
.kvproof-report svg.graph .node.deadlock circle { stroke-dasharray: 3 2; stroke-width: 2.5; }
.kvproof-report svg.graph .edge { stroke: var(--line); stroke-width: 1; fill: none; }
.kvproof-report svg.graph .node text { font-size: 10px; }
.kvproof-report svg.graph .ring { stroke: var(--accent); stroke-width: 1.2; }
.kvproof-report svg.graph .depth { fill: var(--muted); }
@media print {
  /* Paper is light whatever the screen's scheme. */
  .kvproof-report {
  --fg: #1d232b; --bg: #ffffff; --muted: #5b6673; --line: #c7ced6; --panel: #f4f6f8;
  --accent: #1f5fbf; --bad: #b3261e; --bad-bg: #fde7e4; --ok: #1e6b34; --ok-bg: #e3f3e7;
  --warn-bg: #fff3cd; --own-bg: #e6eefb; --old-fg: #6d5a00;
  }
  .kvproof-report { max-width: none; padding: 0; font-size: 11px; }
  .kvproof-report .chart-scroll, .kvproof-report .grid-scroll { overflow: visible; }
  .kvproof-report table.pool td, .kvproof-report table.pool th { min-width: 0; }
  .kvproof-report section { break-inside: avoid-page; }
  .kvproof-report svg { max-width: 100%; height: auto; }
  .kvproof-report a { color: inherit; }
  .kvproof-report a[href^="http"]::after { content: " (" attr(href) ")"; font-size: 10px; }
}
"""
