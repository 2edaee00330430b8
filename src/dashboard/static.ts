/**
 * The dashboard's only script, served from its own origin so the
 * Content-Security-Policy can forbid inline script (the stylesheet is in
 * style.ts). The script is an enhancement: every page and action works without it.
 *  - [data-refresh]: every N seconds, unless paused, the page is fetched again
 *    and the box's content swapped in place (no reload: scroll position, open
 *    <details> and the pause state stay). The pause button's state is kept in
 *    localStorage. Nothing is swapped while a form field has the focus or rows
 *    are ticked for a bulk action. The box's data-updated says when it last was.
 *  - form[data-confirm]: ask before submitting (bulk actions also have a
 *    server-side confirmation page stating the count).
 *  - rows ticked for a bulk action: "select all", and the "… selected" buttons
 *    stay disabled until a row is ticked.
 * Listeners are on the document, so content swapped in keeps working.
 */

export const SCRIPT = `'use strict';
(function () {
  var KEY = 'jobvisor-refresh-paused';
  var box = document.querySelector('[data-refresh]');
  var paused = localStorage.getItem(KEY) === '1';
  var timer = null;
  var seconds = box ? Number(box.getAttribute('data-refresh')) || 5 : 0;
  var show = function () {
    var button = document.getElementById('refresh-toggle');
    if (button) {
      button.hidden = false;
      button.textContent = paused ? 'Resume auto-refresh' : 'Pause auto-refresh';
    }
    if (box) box.setAttribute('data-paused', paused ? '1' : '0');
  };
  var busy = function () {
    var active = document.activeElement;
    if (active && active !== document.body && /^(INPUT|SELECT|TEXTAREA)$/.test(active.tagName)) return true;
    return document.querySelector('input.select-row:checked') !== null;
  };
  var sync = function () {
    var rows = document.querySelectorAll('input.select-row');
    var n = document.querySelectorAll('input.select-row:checked').length;
    document.querySelectorAll('[data-needs-selection]').forEach(function (b) { b.disabled = n === 0; });
    var all = document.getElementById('select-all');
    if (all) {
      all.hidden = rows.length === 0;
      all.checked = n > 0 && n === rows.length;
    }
  };
  var swap = function (text) {
    var next = new DOMParser().parseFromString(text, 'text/html').querySelector('[data-refresh]');
    if (!next || !box || busy() || paused) return;
    var open = [];
    box.querySelectorAll('details[open]').forEach(function (d, i) { open.push(i); });
    box.innerHTML = next.innerHTML;
    box.querySelectorAll('details').forEach(function (d, i) { if (open.indexOf(i) >= 0) d.open = true; });
    box.setAttribute('data-updated', String(Date.now()));
    show();
    sync();
  };
  var arm = function () {
    if (timer) clearTimeout(timer);
    timer = paused || !box ? null : setTimeout(function () {
      if (busy()) { arm(); return; }
      fetch(location.href, { credentials: 'same-origin', headers: { 'X-Jobvisor-Refresh': '1' } })
        .then(function (res) { return res.ok && !res.redirected ? res.text() : null; })
        .then(function (text) { if (text) swap(text); })
        .catch(function () {})
        .then(arm);
    }, seconds * 1000);
  };
  document.addEventListener('click', function (e) {
    var t = e.target;
    if (t && t.id === 'refresh-toggle') {
      paused = !paused;
      localStorage.setItem(KEY, paused ? '1' : '0');
      show();
      arm();
    }
  });
  document.addEventListener('change', function (e) {
    var t = e.target;
    if (!t) return;
    if (t.id === 'select-all') {
      document.querySelectorAll('input.select-row').forEach(function (r) { r.checked = t.checked; });
    }
    if (t.id === 'select-all' || (t.classList && t.classList.contains('select-row'))) sync();
  });
  document.addEventListener('submit', function (e) {
    var form = e.target;
    var text = form && form.getAttribute && form.getAttribute('data-confirm');
    if (text && !confirm(text)) e.preventDefault();
  });
  show();
  sync();
  arm();
})();
`;

export { STYLE } from './style.ts';
