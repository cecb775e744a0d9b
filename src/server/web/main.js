// main.js: the page's entry (esbuild bundles it and what it imports into
// app.js): the two views as tabs, the API key dialog, the model's name.

import { api, getKey, setKey, setAuthHandler, AuthError } from './api.js';
import { initChat, setModel } from './chat.js';
import { startMonitor, stopMonitor } from './monitor.js';

const $ = (id) => document.getElementById(id);

// ---- views (the WAI-ARIA tabs pattern: arrows move between the tabs) ----------------------

const tabs = ['chat', 'monitor'];

function show(view, focus) {
  for (const v of tabs) {
    const on = v === view;
    const tab = $(`tab-${v}`);
    tab.setAttribute('aria-selected', String(on));
    tab.tabIndex = on ? 0 : -1;
    $(`view-${v}`).hidden = !on;
    if (on && focus) tab.focus();
  }
  if (view === 'monitor') startMonitor(); else stopMonitor();
  if (location.hash !== `#${view}`) history.replaceState(null, '', `#${view}`);
}

// ---- the API key ---------------------------------------------------------------------------

function askKey(why) {
  const d = $('key-dialog');
  $('key-why').textContent = why;
  $('key-input').value = getKey();
  if (!d.open) d.showModal();
  $('key-input').focus();
}

async function loadModel() {
  try {
    const r = await (await api('/v1/models')).json();
    const id = r.data && r.data[0] && r.data[0].id;
    setModel(id || '');
    $('model-name').textContent = id || '';
  } catch (e) {
    if (!(e instanceof AuthError)) $('model-name').textContent = `(${e.message})`;
  }
}

function init() {
  setAuthHandler(() => askKey(getKey()
    ? 'The server refused this key. Enter its API key; it is kept in this browser\'s storage.'
    : 'This server needs its API key. It is kept in this browser\'s storage.'));
  $('key-form').addEventListener('submit', () => {
    setKey($('key-input').value.trim());
    loadModel();
    if (!$('view-monitor').hidden) startMonitor();
  });
  $('key-cancel').addEventListener('click', () => $('key-dialog').close());
  $('key-button').addEventListener('click', () => askKey('The key this page sends to the server (empty for none). It is kept in this browser\'s storage.'));

  tabs.forEach((v, i) => {
    const tab = $(`tab-${v}`);
    tab.addEventListener('click', () => show(v, false));
    tab.addEventListener('keydown', (ev) => {
      const d = { ArrowRight: 1, ArrowLeft: -1 }[ev.key];
      if (d) {
        ev.preventDefault();
        show(tabs[(i + d + tabs.length) % tabs.length], true);
      }
    });
  });
  initChat();
  show(location.hash === '#monitor' ? 'monitor' : 'chat', false);
  loadModel();
  if ($('view-chat').hidden === false) $('input').focus();
}

if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', init);
else init();
