/**
 * The dashboard's only script and stylesheet, served from its own origin so
 * the Content-Security-Policy can forbid inline script and style. The script
 * is an enhancement: every page and action works without it.
 *  - [data-refresh]: reload every N seconds unless paused (the pause button's
 *    state is kept in localStorage, so it survives the reload) or a form
 *    field has the focus.
 *  - form[data-confirm]: ask before submitting (bulk actions also have a
 *    server-side confirmation page stating the count).
 */

export const SCRIPT = `'use strict';
(function () {
  var KEY = 'jobvisor-refresh-paused';
  var box = document.querySelector('[data-refresh]');
  if (box) {
    var seconds = Number(box.getAttribute('data-refresh')) || 5;
    var button = document.getElementById('refresh-toggle');
    var paused = localStorage.getItem(KEY) === '1';
    var timer = null;
    var show = function () {
      if (button) button.textContent = paused ? 'Resume auto-refresh' : 'Pause auto-refresh';
      box.setAttribute('data-paused', paused ? '1' : '0');
    };
    var arm = function () {
      if (timer) clearTimeout(timer);
      timer = paused ? null : setTimeout(function () {
        // Never reload under someone typing a filter.
        // Nor under rows ticked for a bulk action.
        var active = document.activeElement;
        if (active && /^(INPUT|SELECT|TEXTAREA)$/.test(active.tagName)) arm();
        else if (document.querySelector('input.select-row:checked')) arm();
        else location.reload();
      }, seconds * 1000);
    };
    if (button) {
      button.hidden = false;
      button.addEventListener('click', function () {
        paused = !paused;
        localStorage.setItem(KEY, paused ? '1' : '0');
        show();
        arm();
      });
    }
    show();
    arm();
  }
  var all = document.getElementById('select-all');
  var rows = document.querySelectorAll('input.select-row');
  var needs = document.querySelectorAll('[data-needs-selection]');
  var sync = function () {
    var n = document.querySelectorAll('input.select-row:checked').length;
    needs.forEach(function (b) { b.disabled = n === 0; });
    if (all) all.checked = n > 0 && n === rows.length;
  };
  if (all) {
    all.hidden = false;
    all.addEventListener('change', function () {
      rows.forEach(function (r) { r.checked = all.checked; });
      sync();
    });
  }
  rows.forEach(function (r) { r.addEventListener('change', sync); });
  if (rows.length) sync();
  document.querySelectorAll('form[data-confirm]').forEach(function (form) {
    form.addEventListener('submit', function (e) {
      if (!confirm(form.getAttribute('data-confirm'))) e.preventDefault();
    });
  });
})();
`;

export const STYLE = `
:root { --fg:#1d2330; --muted:#667085; --line:#e4e7ec; --bg:#f7f8fa; --bad:#b42318; --ok:#067647; --accent:#1f4fd1; }
* { box-sizing: border-box; }
body { margin:0; font:14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color:var(--fg); background:var(--bg); }
header { display:flex; gap:1.5rem; align-items:center; padding:.6rem 1.2rem; background:#101828; color:#fff; }
header a { color:#d0d5dd; text-decoration:none; } header a:hover, header a.on { color:#fff; }
header .brand { font-weight:700; color:#fff; margin-right:1rem; }
header form { margin-left:auto; }
main { padding:1rem 1.2rem 3rem; max-width:1400px; }
h1 { font-size:1.3rem; margin:.2rem 0 1rem; } h2 { font-size:1.05rem; margin:1.6rem 0 .6rem; }
table { border-collapse:collapse; width:100%; background:#fff; border:1px solid var(--line); }
th, td { text-align:left; padding:.35rem .6rem; border-bottom:1px solid var(--line); vertical-align:top; }
th { background:#f2f4f7; font-weight:600; font-size:.85rem; color:#344054; }
td.num, th.num { text-align:right; font-variant-numeric:tabular-nums; }
a { color:var(--accent); }
.muted { color:var(--muted); }
.status { display:inline-block; padding:0 .45rem; border-radius:9px; font-size:.8rem; background:#eaecf0; }
.status-failed { background:#fee4e2; color:var(--bad); } .status-done { background:#dcfae6; color:var(--ok); }
.status-running { background:#d1e9ff; color:#175cd3; } .status-pending { background:#fef0c7; color:#93370d; }
.status-paused { background:#f4ebff; color:#6941c6; } .status-scheduled { background:#e0f2fe; color:#026aa2; border:1px dashed #7cd4fd; }
.status-cancelled { background:#f2f4f7; color:#475467; }
.err { color:var(--bad); white-space:pre-wrap; word-break:break-word; font-family:ui-monospace, monospace; font-size:.8rem; }
pre { background:#fff; border:1px solid var(--line); padding:.8rem; overflow:auto; font-size:.85rem; }
form.filters { display:flex; flex-wrap:wrap; gap:.5rem; align-items:end; margin-bottom:.8rem; }
form.filters label { display:flex; flex-direction:column; font-size:.78rem; color:var(--muted); }
input, select, button { font:inherit; padding:.25rem .45rem; }
button { cursor:pointer; border:1px solid #d0d5dd; background:#fff; border-radius:4px; }
button.danger { border-color:#fda29b; color:var(--bad); }
.actions { display:flex; gap:.5rem; flex-wrap:wrap; margin:.6rem 0; } .actions form { margin:0; }
.cards { display:flex; gap:1rem; flex-wrap:wrap; } .card { background:#fff; border:1px solid var(--line); padding:.6rem .9rem; min-width:11rem; }
.card b { display:block; font-size:1.4rem; }
.flash { background:#dcfae6; border:1px solid #abefc6; padding:.5rem .8rem; margin-bottom:.8rem; }
.flash.error { background:#fee4e2; border-color:#fecdca; }
.flash.warn { background:#fffaeb; border-color:#fedf89; color:#93370d; } .flash p { margin:.2rem 0; }
.status-unserved { background:#fffaeb; color:#b54708; border:1px solid #fedf89; }
button.warn { border-color:#fedf89; color:#b54708; } form.inline { display:inline; margin:0; }
dl.facts { display:grid; grid-template-columns:max-content 1fr; gap:.2rem 1rem; background:#fff; border:1px solid var(--line); padding:.6rem .9rem; }
dl.facts dt { color:var(--muted); } dl.facts dd { margin:0; }
svg.chart { background:#fff; border:1px solid var(--line); }
svg.chart .done { fill:#32d583; } svg.chart .failed { fill:#f97066; } svg.chart text { font-size:10px; fill:var(--muted); }
.legend .done { color:#067647; } .legend .failed { color:var(--bad); }
.pager { margin:.6rem 0; }
`;
