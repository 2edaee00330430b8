/**
 * The dashboard's stylesheet, served from its own origin (the CSP forbids
 * inline style). Colours are variables: `prefers-color-scheme: dark` swaps the
 * palette. Below 640 px wide, tables marked `stack` show each row as a card
 * (labels from data-label), so no page scrolls sideways on a phone.
 */
export const STYLE = `
:root { color-scheme: light dark;
  --fg:#1d2330; --muted:#667085; --line:#e4e7ec; --bg:#f7f8fa; --panel:#fff; --head:#f2f4f7; --head-fg:#344054;
  --bad:#b42318; --ok:#067647; --accent:#1f4fd1; --bar:#101828; --bar-fg:#d0d5dd; --btn-line:#d0d5dd;
  --s-bg:#eaecf0; --s-failed:#fee4e2; --s-done:#dcfae6; --s-running:#d1e9ff; --s-running-fg:#175cd3;
  --s-pending:#fef0c7; --s-pending-fg:#93370d; --s-paused:#f4ebff; --s-paused-fg:#6941c6;
  --s-sched:#e0f2fe; --s-sched-fg:#026aa2; --s-sched-line:#7cd4fd; --s-blocked:#e0e7ff; --s-blocked-fg:#3538cd;
  --ok-bg:#dcfae6; --ok-line:#abefc6; --warn-bg:#fffaeb; --warn-line:#fedf89; --warn-fg:#93370d; --err-bg:#fee4e2; --err-line:#fecdca; }
@media (prefers-color-scheme: dark) { :root {
  --fg:#e4e7ec; --muted:#98a2b3; --line:#344054; --bg:#0c111d; --panel:#161b26; --head:#1f242f; --head-fg:#cecfd2;
  --bad:#f97066; --ok:#47cd89; --accent:#84adff; --bar:#000; --bar-fg:#94969c; --btn-line:#475467;
  --s-bg:#333741; --s-failed:#55160c; --s-done:#053321; --s-running:#102a56; --s-running-fg:#84caff;
  --s-pending:#4e1d09; --s-pending-fg:#fec84b; --s-paused:#2c1c5f; --s-paused-fg:#bdb4fe;
  --s-sched:#0b2a3f; --s-sched-fg:#7cd4fd; --s-sched-line:#0086c9; --s-blocked:#1f235b; --s-blocked-fg:#a4bcfd;
  --ok-bg:#053321; --ok-line:#085d3a; --warn-bg:#4e1d09; --warn-line:#93370d; --warn-fg:#fec84b; --err-bg:#55160c; --err-line:#912018; } }
* { box-sizing: border-box; }
body { margin:0; font:14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color:var(--fg); background:var(--bg); }
header { display:flex; flex-wrap:wrap; gap:.4rem 1.5rem; align-items:center; padding:.6rem 1.2rem; background:var(--bar); color:#fff; }
header a { color:var(--bar-fg); text-decoration:none; } header a:hover, header a.on { color:#fff; }
header .brand { font-weight:700; color:#fff; margin-right:1rem; }
header form { margin-left:auto; }
header button { color:var(--bar-fg); background:transparent; border-color:var(--bar-fg); } header button:hover { color:#fff; border-color:#fff; }
main { padding:1rem 1.2rem 3rem; max-width:1400px; }
h1 { font-size:1.3rem; margin:.2rem 0 1rem; overflow-wrap:anywhere; } h2 { font-size:1.05rem; margin:1.6rem 0 .6rem; } h3 { font-size:.95rem; }
table { border-collapse:collapse; width:100%; background:var(--panel); border:1px solid var(--line); }
th, td { text-align:left; padding:.35rem .6rem; border-bottom:1px solid var(--line); vertical-align:top; }
th { background:var(--head); font-weight:600; font-size:.85rem; color:var(--head-fg); }
td { overflow-wrap:anywhere; }
td.num, th.num { text-align:right; font-variant-numeric:tabular-nums; }
a { color:var(--accent); }
.muted { color:var(--muted); }
tr.group th, tr.group td { background:var(--head); color:var(--head-fg); text-align:left; font-weight:600; }
.status { display:inline-block; padding:0 .45rem; border-radius:9px; font-size:.8rem; background:var(--s-bg); }
.status-failed { background:var(--s-failed); color:var(--bad); } .status-done { background:var(--s-done); color:var(--ok); }
.status-running, .status-active { background:var(--s-running); color:var(--s-running-fg); }
.status-pending { background:var(--s-pending); color:var(--s-pending-fg); }
.status-paused { background:var(--s-paused); color:var(--s-paused-fg); }
.status-scheduled { background:var(--s-sched); color:var(--s-sched-fg); border:1px dashed var(--s-sched-line); }
.status-cancelled { color:var(--muted); }
.status-blocked { background:var(--s-blocked); color:var(--s-blocked-fg); }
.status-unserved { background:var(--warn-bg); color:var(--warn-fg); border:1px solid var(--warn-line); }
.err { color:var(--bad); white-space:pre-wrap; word-break:break-word; font-family:ui-monospace, monospace; font-size:.8rem; }
pre { background:var(--panel); border:1px solid var(--line); padding:.8rem; overflow:auto; font-size:.85rem; max-width:100%; }
details.stack summary, details.signal summary { cursor:pointer; color:var(--muted); }
td.result code { white-space:pre-wrap; word-break:break-all; font-size:.8rem; } details.signal { margin:1rem 0; }
form.filters { display:flex; flex-wrap:wrap; gap:.5rem; align-items:end; margin-bottom:.8rem; }
form.filters label { display:flex; flex-direction:column; font-size:.78rem; color:var(--muted); max-width:100%; }
input, select, textarea, button { font:inherit; padding:.25rem .45rem; max-width:100%; color:inherit; background:var(--panel); border:1px solid var(--btn-line); }
button { cursor:pointer; border-radius:4px; }
button:disabled { opacity:.5; cursor:default; }
button.danger { border-color:var(--err-line); color:var(--bad); }
button.warn { border-color:var(--warn-line); color:var(--warn-fg); } form.inline { display:inline; margin:0; }
.actions { display:flex; gap:.5rem; flex-wrap:wrap; align-items:center; margin:.6rem 0; } .actions form { margin:0; }
.cards { display:flex; gap:1rem; flex-wrap:wrap; } .card { background:var(--panel); border:1px solid var(--line); padding:.6rem .9rem; min-width:11rem; }
.card b { display:block; font-size:1.4rem; }
.flash { background:var(--ok-bg); border:1px solid var(--ok-line); padding:.5rem .8rem; margin-bottom:.8rem; }
.flash.warn { background:var(--warn-bg); border-color:var(--warn-line); color:var(--warn-fg); } .flash p { margin:.2rem 0; }
.flash.error { background:var(--err-bg); border-color:var(--err-line); }
dl.facts { display:grid; grid-template-columns:max-content 1fr; gap:.2rem 1rem; background:var(--panel); border:1px solid var(--line); padding:.6rem .9rem; }
dl.facts dt { color:var(--muted); } dl.facts dd { margin:0; overflow-wrap:anywhere; }
svg.chart { background:var(--panel); border:1px solid var(--line); max-width:100%; height:auto; }
svg.chart .done { fill:#32d583; } svg.chart .failed { fill:#f97066; } svg.chart text { font-size:10px; fill:var(--muted); }
.legend .done { color:var(--ok); } .legend .failed { color:var(--bad); }
.pager { margin:.6rem 0; display:flex; gap:1.5rem; }
.graph-scroll { overflow:auto; max-height:80vh; max-width:100%; border:1px solid var(--line); background:var(--panel); }
svg.graph { display:block; max-width:none; } svg.graph text { font-size:11px; fill:var(--fg); pointer-events:none; }
svg.graph text.kind { font-weight:600; } svg.graph .edge { fill:none; stroke:var(--muted); stroke-width:1.2; }
svg.graph .arrow { fill:var(--muted); } svg.graph text.edge-count { fill:var(--muted); font-size:10px; }
svg.graph rect { stroke:var(--line); fill:var(--s-bg); } svg.graph rect.root { stroke:var(--accent); stroke-width:3; }
svg.graph .n-done { fill:var(--s-done); } svg.graph .n-failed { fill:var(--s-failed); }
svg.graph .n-running { fill:var(--s-running); } svg.graph .n-pending { fill:var(--s-pending); }
svg.graph .n-blocked { fill:var(--s-blocked); } svg.graph .n-cancelled { fill:var(--s-bg); stroke-dasharray:4 3; }
svg.graph .n-group { fill:var(--panel); stroke:var(--muted); } svg.graph a:hover rect { stroke:var(--accent); }
figure { margin:.6rem 0; max-width:100%; } .scroll { max-width:100%; }
@media (max-width: 640px) {
  header { padding:.5rem .8rem; gap:.3rem 1rem; } header .brand { margin-right:0; }
  main { padding:.8rem .6rem 2rem; }
  table.stack, table.stack tbody, table.stack tr, table.stack td { display:block; width:100%; }
  table.stack thead { display:none; }
  table.stack tr { border-bottom:1px solid var(--line); padding:.3rem 0; }
  table.stack td { border:0; padding:.1rem .6rem; text-align:left; }
  table.stack td[data-label]::before { content:attr(data-label) ": "; color:var(--muted); font-size:.8rem; }
  .card { min-width:0; flex:1 1 8rem; }
  dl.facts { grid-template-columns:1fr; }
}
`;
