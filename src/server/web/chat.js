// chat.js: the chat view. Conversations and settings are kept in
// localStorage ("q36.chats", "q36.current", "q36.settings"); a reply
// streams from /v1/chat/completions and is drawn as it comes: reasoning in
// a collapsible block, the text as Markdown, tool calls as their own
// blocks. Stop (or Escape) aborts the request; the server sees the
// connection close and frees the slot.

import { api, sse, AuthError } from './api.js';
import { renderMarkdown } from './markdown.js';

const $ = (id) => document.getElementById(id);

// Qwen3.5's card: thinking T=1.0, top_p 0.95, top_k 20.
export const DEFAULTS = {
  system: '', thinking: true, temperature: 1.0, top_p: 0.95, top_k: 20, min_p: 0,
  max_tokens: 1024, seed: '', tools: '',
};
const NUMERIC = ['temperature', 'top_p', 'top_k', 'min_p', 'max_tokens', 'seed'];

function load(key, fallback) {
  try {
    const v = JSON.parse(localStorage.getItem(key));
    return v == null ? fallback : v;
  } catch (_) {
    return fallback;
  }
}

let chats = load('q36.chats', []);
let current = load('q36.current', null);
let settings = Object.assign({}, DEFAULTS, load('q36.settings', {}));
let streaming = null;           // { ctrl, msg } while a reply streams
let modelId = '';

function save() {
  try {
    localStorage.setItem('q36.chats', JSON.stringify(chats));
    localStorage.setItem('q36.current', JSON.stringify(current));
  } catch (e) {
    showError(`could not save the conversation: ${e.message}`);
  }
}

function conv() {
  let c = chats.find((x) => x.id === current);
  if (!c) {
    c = { id: Date.now().toString(36) + Math.random().toString(36).slice(2, 6), title: 'New chat', messages: [] };
    chats.unshift(c);
    current = c.id;
  }
  return c;
}

export function setModel(id) { modelId = id; }

// ---- drawing -------------------------------------------------------------------------

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text != null) e.textContent = text;
  return e;
}

function prettyArgs(s) {
  try { return JSON.stringify(JSON.parse(s), null, 2); } catch (_) { return s; }
}

// Fills an assistant message's element from msg; keeps the reasoning
// block's open state when the user has toggled it.
function drawAssistant(e, msg, live) {
  e.dataset.state = live ? 'streaming' : 'done';
  e.setAttribute('aria-busy', String(live));   // screen readers read it once, when done
  let r = e.querySelector('details.reasoning');
  if (msg.reasoning) {
    if (!r) {
      r = el('details', 'reasoning');
      r.append(el('summary'), el('div', 'md'));
      // A toggle event from our own change of `open` (marked auto) is not the user's.
      r.addEventListener('toggle', () => { if (r.dataset.auto) delete r.dataset.auto; else r.dataset.touched = '1'; });
      if (live && !msg.content) {
        r.dataset.auto = '1';
        r.open = true;
      }
      e.querySelector('.body').prepend(r);
    }
    const words = msg.reasoning.trim().split(/\s+/).length;
    r.querySelector('summary').textContent = live && !msg.content ? `Thinking… (${words} words)` : `Reasoning (${words} words)`;
    r.querySelector('.md').innerHTML = renderMarkdown(msg.reasoning);
    if (!r.dataset.touched && r.open && (msg.content || !live)) {
      r.dataset.auto = '1';
      r.open = false;
    }
  }
  const content = e.querySelector('.content');
  content.innerHTML = renderMarkdown(msg.content);
  const calls = e.querySelector('.tool-calls');
  calls.replaceChildren();
  for (const t of msg.tool_calls || []) {
    const b = el('div', 'tool-call');
    b.append(el('div', 'tool-name', `Tool call: ${t.name || '…'}`), el('pre', 'tool-args', prettyArgs(t.arguments || '')));
    calls.append(b);
  }
  const meta = e.querySelector('.meta');
  const parts = [];
  if (msg.usage) parts.push(`${msg.usage.completion_tokens} tokens`);
  if (msg.tps) parts.push(`${msg.tps.toFixed(1)} tok/s`);
  if (msg.finish) parts.push(msg.finish);
  meta.textContent = parts.join(' · ');
  const err = e.querySelector('.error');
  err.textContent = msg.error || '';
  err.hidden = !msg.error;
}

function drawMessage(msg, live) {
  const e = el('article', `msg ${msg.role}`);
  e.append(el('div', 'role', msg.role === 'user' ? 'You' : 'Assistant'));
  const body = el('div', 'body');
  e.append(body);
  if (msg.role === 'user') {
    body.append(el('div', 'text', msg.content));
    return e;
  }
  const err = el('div', 'error');
  err.setAttribute('role', 'alert');
  body.append(el('div', 'md content'), el('div', 'tool-calls'), err, el('div', 'meta muted'));
  drawAssistant(e, msg, live);
  return e;
}

function drawList() {
  const ul = $('chat-list');
  ul.replaceChildren();
  for (const c of chats) {
    const li = el('li');
    if (c.id === current) li.className = 'current';
    const open = el('button', 'chat-open', c.title);
    open.type = 'button';
    if (c.id === current) open.setAttribute('aria-current', 'true');
    open.addEventListener('click', () => { if (!streaming) { current = c.id; save(); drawAll(); closeSidebar(); } });
    const del = el('button', 'chat-delete icon', '×');
    del.type = 'button';
    del.setAttribute('aria-label', `Delete “${c.title}”`);
    del.addEventListener('click', () => {
      if (streaming) return;
      chats = chats.filter((x) => x !== c);
      if (current === c.id) current = chats.length ? chats[0].id : null;
      save();
      drawAll();
    });
    li.append(open, del);
    ul.append(li);
  }
}

function drawAll() {
  const box = $('messages');
  box.replaceChildren();
  const c = chats.find((x) => x.id === current);
  if (!c || !c.messages.length) {
    box.append(el('p', 'empty muted', 'Send a message to start.'));
  } else {
    for (const m of c.messages) box.append(drawMessage(m, m === streaming?.msg));
  }
  drawList();
  box.scrollTop = box.scrollHeight;
}

function showError(text) {
  const box = $('messages');
  const e = el('div', 'error', text);
  e.setAttribute('role', 'alert');
  box.append(e);
}

// ---- sending -------------------------------------------------------------------------

function readSettings() {
  const s = {};
  for (const k of Object.keys(DEFAULTS)) {
    const f = $(`set-${k}`);
    if (k === 'thinking') s[k] = f.checked;
    else if (NUMERIC.includes(k)) s[k] = f.value === '' ? '' : Number(f.value);
    else s[k] = f.value;
  }
  return s;
}

function writeSettings() {
  for (const k of Object.keys(DEFAULTS)) {
    const f = $(`set-${k}`);
    if (k === 'thinking') f.checked = !!settings[k];
    else f.value = settings[k];
  }
}

function request(c) {
  const messages = [];
  if (settings.system.trim()) messages.push({ role: 'system', content: settings.system });
  for (const m of c.messages) {
    if (m === streaming?.msg) continue;
    if (m.role === 'user') messages.push({ role: 'user', content: m.content });
    if (m.role !== 'assistant') continue;
    // Only calls whose arguments are whole JSON go back (a stopped reply's are cut).
    const calls = (m.tool_calls || []).filter((t) => { try { JSON.parse(t.arguments); return !!t.name; } catch (_) { return false; } });
    if (!m.content && !m.reasoning && !calls.length) continue;
    const a = { role: 'assistant', content: m.content || '' };
    if (m.reasoning) a.reasoning_content = m.reasoning;
    if (calls.length) a.tool_calls = calls.map((t) => ({ id: t.id, type: 'function', function: { name: t.name, arguments: t.arguments } }));
    messages.push(a);
  }
  const body = {
    messages, stream: true, stream_options: { include_usage: true },
    chat_template_kwargs: { enable_thinking: !!settings.thinking },
  };
  if (modelId) body.model = modelId;
  for (const k of NUMERIC) if (settings[k] !== '' && Number.isFinite(settings[k])) body[k] = settings[k];
  if (settings.tools.trim()) body.tools = JSON.parse(settings.tools);
  return body;
}

function setBusy(busy) {
  $('send').disabled = busy;
  $('stop').disabled = !busy;
  document.body.classList.toggle('busy', busy);
}

export async function send() {
  const input = $('input');
  const text = input.value;
  if (!text.trim() || streaming) return;
  settings = readSettings();
  const c = conv();
  let body;
  const user = { role: 'user', content: text };
  c.messages.push(user);
  const msg = { role: 'assistant', content: '', reasoning: '', tool_calls: [] };
  try {
    body = request(c);
  } catch (e) {
    c.messages.pop();
    showError(`Tools: ${e.message}`);
    return;
  }
  if (c.title === 'New chat') c.title = text.trim().slice(0, 48);
  input.value = '';
  c.messages.push(msg);
  const ctrl = new AbortController();
  streaming = { ctrl, msg };
  drawAll();
  const box = $('messages');
  const e = box.lastElementChild;
  setBusy(true);
  save();
  let pending = false, saved = performance.now();
  const redraw = () => {
    if (pending) return;
    pending = true;
    requestAnimationFrame(() => {
      pending = false;
      if (performance.now() - saved > 2000) {   // a reply cut by a closed tab keeps most of itself
        save();
        saved = performance.now();
      }
      const stick = box.scrollHeight - box.scrollTop - box.clientHeight < 40;
      drawAssistant(e, msg, !!streaming);
      if (stick) box.scrollTop = box.scrollHeight;
    });
  };
  let tFirst = 0, nChunks = 0;
  try {
    const r = await api('/v1/chat/completions', { method: 'POST', body, signal: ctrl.signal });
    for await (const ch of sse(r)) {
      if (ch.error) throw new Error(ch.error.message || JSON.stringify(ch.error));
      const choice = ch.choices && ch.choices[0];
      if (choice) {
        const d = choice.delta || {};
        if (d.reasoning_content || d.content || d.tool_calls) {
          if (!tFirst) tFirst = performance.now();
          nChunks++;
        }
        if (d.reasoning_content) msg.reasoning += d.reasoning_content;
        if (d.content) msg.content += d.content;
        for (const tc of d.tool_calls || []) {
          const t = msg.tool_calls[tc.index] || (msg.tool_calls[tc.index] = { id: '', name: '', arguments: '' });
          if (tc.id) t.id = tc.id;
          if (tc.function && tc.function.name) t.name = tc.function.name;
          if (tc.function && tc.function.arguments) t.arguments += tc.function.arguments;
        }
        if (choice.finish_reason) msg.finish = choice.finish_reason;
      }
      if (ch.usage) msg.usage = ch.usage;
      redraw();
    }
  } catch (err) {
    if (err.name === 'AbortError') msg.finish = 'stopped';
    else if (err instanceof AuthError) msg.error = 'The server needs its API key: set it with the Key button.';
    else msg.error = err.message;
  }
  const n = msg.usage ? msg.usage.completion_tokens : nChunks;
  const dt = (performance.now() - tFirst) / 1000;
  if (tFirst && n > 1 && dt > 0) msg.tps = (n - 1) / dt;
  streaming = null;
  drawAssistant(e, msg, false);
  setBusy(false);
  save();
  drawList();
}

export function stop() {
  if (streaming) streaming.ctrl.abort();
}

export function isStreaming() { return !!streaming; }

// ---- the sidebar on a narrow screen ----------------------------------------------------

function closeSidebar() {
  document.body.classList.remove('sidebar-open');
  $('chats-toggle').setAttribute('aria-expanded', 'false');
}

// ---- wiring ----------------------------------------------------------------------------

export function initChat() {
  writeSettings();
  for (const k of Object.keys(DEFAULTS)) {
    $(`set-${k}`).addEventListener('change', () => {
      settings = readSettings();
      localStorage.setItem('q36.settings', JSON.stringify(settings));
    });
  }
  $('set-reset').addEventListener('click', () => {
    settings = Object.assign({}, DEFAULTS);
    localStorage.setItem('q36.settings', JSON.stringify(settings));
    writeSettings();
  });
  $('composer').addEventListener('submit', (ev) => { ev.preventDefault(); send(); });
  $('input').addEventListener('keydown', (ev) => {
    if (ev.key === 'Enter' && !ev.shiftKey && !ev.isComposing) {
      ev.preventDefault();
      send();
    } else if (ev.key === 'Escape' && streaming) {
      ev.preventDefault();
      stop();
    }
  });
  $('stop').addEventListener('click', () => { stop(); $('input').focus(); });
  $('new-chat').addEventListener('click', () => {
    if (streaming) return;
    const c = chats.find((x) => x.id === current);
    if (!c || c.messages.length) current = null;
    conv();
    save();
    drawAll();
    closeSidebar();
    $('input').focus();
  });
  $('chats-toggle').addEventListener('click', () => {
    const open = document.body.classList.toggle('sidebar-open');
    $('chats-toggle').setAttribute('aria-expanded', String(open));
  });
  window.addEventListener('storage', (ev) => {
    if (ev.key === 'q36.chats' && !streaming) {
      chats = load('q36.chats', []);
      drawAll();
    }
  });
  drawAll();
}
