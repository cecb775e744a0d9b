// web.mjs: q36 serve's page in Debian's headless Chromium, driven by
// puppeteer-core (pinned in package-lock.json). One line per case:
// "ok NAME" or "FAIL NAME: why". The default model is tiny and not trained
// on chat: the cases check behaviour (a reply streams, stop stops it, the
// monitor follows a slot), never words.
//   node tests/web/web.mjs URL KEY CHROMIUM [SHOTS_DIR]
// SHOTS_DIR, when given, receives a PNG of each view.
import puppeteer from 'puppeteer-core';
import path from 'node:path';

const [url, key, chromium, shots] = process.argv.slice(2);
const auth = { Authorization: `Bearer ${key}` };
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

let failed = 0;
async function check(name, fn, ms = 30000) {
  let timer;
  try {
    await Promise.race([fn(), new Promise((_, rej) => { timer = setTimeout(() => rej(new Error(`timed out after ${ms} ms`)), ms); })]);
    console.log(`ok ${name}`);
  } catch (e) {
    failed++;
    console.log(`FAIL ${name}: ${String(e.message || e).split('\n')[0]}`);
  } finally {
    clearTimeout(timer);
  }
}
function assert(cond, why) { if (!cond) throw new Error(why); }
async function shot(page, name) {
  if (shots) await page.screenshot({ path: path.join(shots, name) });
}
async function slots() {
  return (await (await fetch(`${url}/slots`, { headers: auth })).json());
}
async function until(what, fn, ms = 5000, every = 50) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`${what}: not within ${ms} ms`);
    await sleep(every);
  }
}

// ---- the HTTP side, without a browser -----------------------------------------------------

await check('web_static_public', async () => {
  for (const [p, type] of [['/', 'text/html'], ['/app.js', 'text/javascript'], ['/style.css', 'text/css']]) {
    const r = await fetch(url + p);
    assert(r.status === 200, `${p}: status ${r.status}`);
    assert((r.headers.get('content-type') || '').startsWith(type), `${p}: content-type ${r.headers.get('content-type')}`);
    assert((await r.text()).length > 100, `${p}: short body`);
  }
  const csp = (await fetch(url + '/')).headers.get('content-security-policy') || '';
  assert(csp.includes("script-src 'self'"), `CSP: '${csp}'`);
});

await check('web_monitor_needs_key', async () => {
  const r = await fetch(`${url}/monitor`);
  assert(r.status === 401, `without the key: status ${r.status}`);
  const m = await (await fetch(`${url}/monitor`, { headers: auth })).json();
  assert(m.slots && m.slots.length === 2, `slots: ${JSON.stringify(m.slots)}`);
  assert(m.memory.per_slot > 0 && m.model.n_params > 0, 'no memory plan or model');
  assert(m.mtp === null && m.gpu === null, 'an unmeasured field is not null');
  const pc = m.prefix_cache;
  assert(pc && pc.budget_bytes > 0 && pc.bytes <= pc.budget_bytes && pc.hits <= pc.lookups,
    `prefix cache: ${JSON.stringify(pc)}`);
});

// ---- the browser ----------------------------------------------------------------------------

const browser = await puppeteer.launch({
  executablePath: chromium,
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run',
    '--disable-extensions', '--disable-background-networking'],
});
const errors = [];
const elsewhere = new Set();             // requests to anything but the server: none, offline
function watch(page, allow401) {
  page.on('request', (r) => { if (!r.url().startsWith(url + '/') && !r.url().startsWith('data:')) elsewhere.add(r.url()); });
  page.on('pageerror', (e) => errors.push(`page error: ${e.message}`));
  page.on('console', (m) => {
    if (m.type() !== 'error') return;
    if (allow401 && /status of 401/.test(m.text())) return;
    errors.push(`console: ${m.text()}`);
  });
  page.on('requestfailed', (r) => {
    // A stream the page aborted (Stop) is a failed request by design.
    if (r.failure() && /ERR_ABORTED/.test(r.failure().errorText) && r.url().endsWith('/v1/chat/completions')) return;
    errors.push(`request failed: ${r.url()} ${r.failure() && r.failure().errorText}`);
  });
}

try {
  // A first visit: no key stored, the page asks for it.
  const ctx0 = await browser.createBrowserContext();
  const p0 = await ctx0.newPage();
  watch(p0, true);
  await check('web_asks_for_key', async () => {
    await p0.goto(url + '/', { waitUntil: 'load' });
    await p0.waitForSelector('#key-dialog[open]', { timeout: 5000 });
    await p0.type('#key-input', key);
    await p0.keyboard.press('Enter');
    await p0.waitForFunction(() => document.getElementById('model-name').textContent === 'default.gguf', { timeout: 5000 });
    const stored = await p0.evaluate(() => localStorage.getItem('q36.key'));
    assert(stored === key, 'the key was not stored');
  });
  await ctx0.close();

  const ctx = await browser.createBrowserContext();
  const page = await ctx.newPage();
  watch(page, false);
  await page.setViewport({ width: 1100, height: 760 });
  await page.evaluateOnNewDocument((k) => { localStorage.setItem('q36.key', k); }, key);
  const bodies = [];
  page.on('request', (r) => { if (r.url().endsWith('/v1/chat/completions')) bodies.push(r.postData()); });
  const lastReply = () => page.evaluate(() => {
    const m = [...document.querySelectorAll('.msg.assistant')].pop();
    if (!m) return null;
    return { state: m.dataset.state, text: (m.querySelector('.content').textContent + (m.querySelector('details.reasoning .md')?.textContent || '')).length,
      meta: m.querySelector('.meta').textContent, reasoning: !!m.querySelector('details.reasoning'), error: m.querySelector('.error').textContent };
  });
  const setField = (id, v) => page.evaluate((i, val) => {
    const f = document.getElementById(i);
    if (f.type === 'checkbox') f.checked = val; else f.value = val;
    f.dispatchEvent(new Event('change'));
  }, id, v);

  await check('web_loads_clean', async () => {
    await page.goto(url + '/', { waitUntil: 'load' });
    await page.waitForFunction(() => document.getElementById('model-name').textContent === 'default.gguf', { timeout: 5000 });
    const open = await page.evaluate(() => document.getElementById('key-dialog').open);
    assert(!open, 'the key dialog opened although the key is stored');
    await sleep(200);
    assert(errors.length === 0, errors.join('; '));
  });

  await check('web_keyboard', async () => {
    await page.focus('#input');
    await page.keyboard.type('line one');
    await page.keyboard.down('Shift');
    await page.keyboard.press('Enter');
    await page.keyboard.up('Shift');
    await page.keyboard.type('line two');
    const v = await page.$eval('#input', (e) => e.value);
    assert(v === 'line one\nline two', `Shift+Enter: the input holds ${JSON.stringify(v)}`);
    assert((await page.$$('.msg')).length === 0, 'Shift+Enter sent the message');
    await page.keyboard.press('Tab');
    const a1 = await page.evaluate(() => document.activeElement.id);
    assert(a1 === 'send', `Tab from the input went to '${a1}', not the Send button`);
    await page.keyboard.down('Shift');
    await page.keyboard.press('Tab');
    await page.keyboard.up('Shift');
    assert(await page.evaluate(() => document.activeElement.id) === 'input', 'Shift+Tab did not come back to the input');
    // From the top: the selected tab, the key button, New chat.
    // A click on the title puts the focus navigation's start at the top.
    await page.click('header h1');
    const order = [];
    for (let i = 0; i < 3; i++) {
      await page.keyboard.press('Tab');
      order.push(await page.evaluate(() => document.activeElement.id));
    }
    assert(order.join(',') === 'tab-chat,key-button,new-chat', `focus order from the top: ${order.join(',')}`);
    // Arrows move between the tabs.
    await page.focus('#tab-chat');
    await page.keyboard.press('ArrowRight');
    assert(await page.evaluate(() => !document.getElementById('view-monitor').hidden && document.activeElement.id === 'tab-monitor'),
      'ArrowRight did not select the Monitor tab');
    await page.keyboard.press('ArrowLeft');
    assert(await page.evaluate(() => !document.getElementById('view-chat').hidden), 'ArrowLeft did not come back to Chat');
    await page.$eval('#input', (e) => { e.value = ''; });
  });

  await check('web_reply_streams', async () => {
    await setField('set-max_tokens', '200');
    await page.evaluate(() => {
      // Every length the reply is drawn at, to tell a stream from one block.
      window.__lengths = [];
      new MutationObserver(() => {
        const m = [...document.querySelectorAll('.msg.assistant')].pop();
        if (m) window.__lengths.push(m.textContent.length);
      }).observe(document.getElementById('messages'), { subtree: true, childList: true, characterData: true });
    });
    await page.focus('#input');
    await page.keyboard.type('Write a haiku');
    await page.keyboard.press('Enter');
    await page.waitForSelector('.msg.assistant[data-state=done]', { timeout: 20000 });
    const r = await lastReply();
    assert(!r.error, `error: ${r.error}`);
    assert(r.text > 0, `empty reply: ${JSON.stringify(r)}`);
    assert(r.reasoning, 'thinking is on, yet no reasoning block');
    assert(/tokens/.test(r.meta), `meta: '${r.meta}'`);
    const lens = await page.evaluate(() => [...new Set(window.__lengths)]);
    assert(lens.length >= 3, `the reply was drawn at ${lens.length} lengths: not streamed`);
    const saved = await page.evaluate(() => JSON.parse(localStorage.getItem('q36.chats')));
    assert(saved.length === 1 && saved[0].messages.length === 2 && saved[0].messages[1].reasoning.length > 0,
      'the conversation is not in localStorage');
    assert(await page.$eval('#input', (e) => e.value) === '', 'the input was not cleared');
  });

  await check('web_settings_sent', async () => {
    await setField('set-thinking', false);
    await setField('set-temperature', '0');
    await setField('set-max_tokens', '8');
    await setField('set-system', 'You are terse.');
    const n = bodies.length;
    await page.focus('#input');
    await page.keyboard.type('Again');
    await page.keyboard.press('Enter');
    await until('the second reply', async () => (await page.$$('.msg.assistant[data-state=done]')).length === 2, 8000);
    const b = JSON.parse(bodies[n]);
    assert(b.chat_template_kwargs.enable_thinking === false, 'thinking off was not sent');
    assert(b.temperature === 0 && b.max_tokens === 8, `sampling: ${b.temperature} ${b.max_tokens}`);
    assert(b.messages[0].role === 'system' && b.messages[0].content === 'You are terse.', 'no system prompt');
    assert(b.messages.length === 4 && b.messages[2].role === 'assistant', `history: ${b.messages.map((m) => m.role)}`);
    const r = await lastReply();
    assert(!r.reasoning, 'thinking off, yet a reasoning block');
    const s = await page.evaluate(() => JSON.parse(localStorage.getItem('q36.settings')));
    assert(s.thinking === false && s.max_tokens === 8, 'settings not kept');
  });

  await check('web_tools', async () => {
    // A tools array that is not JSON is refused before any request; a good one is sent.
    await setField('set-tools', '[{"type": "function"');
    const n = bodies.length;
    await page.focus('#input');
    await page.keyboard.type('Weather in Paris?');
    await page.keyboard.press('Enter');
    await page.waitForFunction(() => [...document.querySelectorAll('#messages > .error')].some((e) => /^Tools:/.test(e.textContent)),
      { timeout: 3000 });
    assert(bodies.length === n, 'a request went out with broken tools');
    assert(await page.$eval('#input', (e) => e.value) === 'Weather in Paris?', 'the input was lost');
    await setField('set-tools', JSON.stringify([{ type: 'function', function: { name: 'get_weather', description: 'The weather of a city',
      parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } }]));
    await page.focus('#input');
    await page.keyboard.press('Enter');
    await until('the reply', async () => (await page.$$('.msg.assistant[data-state=done]')).length === 3, 8000);
    const b = JSON.parse(bodies[n]);
    assert(b.tools && b.tools[0].function.name === 'get_weather', 'the tools were not sent');
    await setField('set-tools', '');
  });

  await check('web_stop', async () => {
    // The model may end a reply on its own before the click (a random
    // model's end token): then another seed, up to four times.
    await setField('set-max_tokens', '4000');
    await setField('set-thinking', true);
    await setField('set-temperature', '1');
    let r, dt;
    for (let seed = 1; seed <= 4; seed++) {
      await setField('set-seed', String(seed));
      await page.focus('#input');
      await page.keyboard.type(`A long one ${seed}`);
      await page.keyboard.press('Enter');
      // (the first token, after the prompt of every earlier test's turns:
      // seconds on a loaded 2-core machine, so a generous bound)
      // (or ends: a reply of no text at all, the end token drawn first, is
      // one that ended on its own; CI once waited out the 15 s on one)
      await until('the reply starts', async () => {
        const l = (await lastReply()) || {};
        return l.text > 0 || l.state === 'done';
      }, 15000, 20);
      if (await page.$eval('#stop', (e) => e.disabled)) { // it ended on its own already
        r = await lastReply();
        continue;
      }
      const t0 = Date.now();
      await page.click('#stop');
      await page.waitForSelector('.msg.assistant:last-of-type[data-state=done]', { timeout: 3000 });
      r = await lastReply();
      await until('the slot frees', async () => (await slots()).every((s) => s.state === 'idle'), 3000);
      dt = Date.now() - t0;
      if (/stopped/.test(r.meta) || !/stop$/.test(r.meta)) break;
    }
    await setField('set-seed', '');
    assert(r && /stopped/.test(r.meta), `meta after Stop: '${r && r.meta}' (every seed's reply ended on its own before the click)`);
    assert(await page.$eval('#send', (e) => !e.disabled), 'Send stays disabled');
    const m = await (await fetch(`${url}/monitor`, { headers: auth })).json();
    assert(m.totals.cancelled >= 1, `cancelled: ${m.totals.cancelled}`);
    assert(dt < 3000, `the slot took ${dt} ms to free`);
  });

  await check('web_markdown_reasoning_tools', async () => {
    // A stored conversation drawn on load: Markdown with code, reasoning,
    // a tool call, and HTML in the text that must stay text.
    await page.evaluate(() => {
      const chat = { id: 'fixture', title: 'Rendering', messages: [
        { role: 'user', content: 'Show me <b>code</b>' },
        { role: 'assistant', reasoning: 'The user wants **code**.', content:
          '# Title\n\nSome `inline` and a list:\n\n- one\n- two\n\n```python\ndef f(x):\n    return x + 1\n```\n\n<img src=x onerror="window.__xss=1">',
          tool_calls: [{ id: 'call_1', name: 'get_weather', arguments: '{"city":"Paris"}' }], finish: 'tool_calls',
          usage: { completion_tokens: 42 } },
      ] };
      const all = JSON.parse(localStorage.getItem('q36.chats') || '[]');
      localStorage.setItem('q36.chats', JSON.stringify([chat, ...all]));
      localStorage.setItem('q36.current', JSON.stringify('fixture'));
    });
    await page.reload({ waitUntil: 'load' });
    await page.waitForSelector('.msg.assistant');
    const got = await page.evaluate(() => {
      const m = document.querySelector('.msg.assistant');
      return {
        h1: m.querySelector('.content h1')?.textContent,
        li: m.querySelectorAll('.content li').length,
        kw: m.querySelectorAll('pre code.hljs .hljs-keyword').length,
        reasoningOpen: m.querySelector('details.reasoning')?.open,
        reasoningStrong: m.querySelector('details.reasoning strong')?.textContent,
        tool: m.querySelector('.tool-call .tool-name')?.textContent,
        args: m.querySelector('.tool-call .tool-args')?.textContent,
        img: document.querySelectorAll('#messages img').length,
        userBold: document.querySelectorAll('.msg.user b').length,
        xss: window.__xss,
      };
    });
    assert(got.h1 === 'Title' && got.li === 2, `markdown: ${JSON.stringify(got)}`);
    assert(got.kw >= 2, `highlighting: ${got.kw} keywords`);
    assert(got.reasoningOpen === false && got.reasoningStrong === 'code', `reasoning: ${JSON.stringify(got)}`);
    assert(/get_weather/.test(got.tool) && /"city": "Paris"/.test(got.args), `tool call: ${got.tool} ${got.args}`);
    assert(got.img === 0 && got.userBold === 0 && !got.xss, 'HTML in text became markup');
    await page.click('.msg.assistant details.reasoning summary');
    assert(await page.$eval('.msg.assistant details.reasoning', (d) => d.open), 'the reasoning does not open');
    await shot(page, 'chat.png');
  });

  await check('web_monitor_busy_then_idle', async () => {
    await page.click('#tab-monitor');
    await page.waitForFunction(() => document.querySelectorAll('#mon-slots tbody tr').length === 2, { timeout: 5000 });
    const text = await page.$eval('#view-monitor', (e) => e.textContent);
    assert(/default\.gguf/.test(text) && /K\/V per slot/.test(text), 'model or memory plan missing');
    const na = await page.$$eval('.card.unavailable', (c) => c.map((x) => x.querySelector('h2').textContent));
    assert(na.length === 2, `not-available cards (MTP and GPU power expected): ${na}`);
    // Long requests from outside the page, one after another (a reply may
    // end early on the model's end token), until the monitor shows a slot
    // generating; then the last one is cut.
    const ctrl = new AbortController();
    let busy = false;
    const load = (async () => {
      for (let seed = 1; !busy && seed <= 20; seed++) {
        await fetch(`${url}/v1/chat/completions`, {
          method: 'POST', headers: { ...auth, 'Content-Type': 'application/json' }, signal: ctrl.signal,
          body: JSON.stringify({ messages: [{ role: 'user', content: 'busy' }], max_tokens: 4000, stream: true, seed }),
        }).then((res) => res.text()).catch(() => {});
      }
    })();
    try {
      await page.waitForSelector('#mon-slots tbody tr[data-state=generating]', { timeout: 8000 });
      await sleep(4500);                   // a few reads, so the plots have rates
      const row = await page.$eval('#mon-slots tbody tr[data-state=generating]', (tr) => [...tr.cells].map((c) => c.textContent))
        .catch(() => null);
      assert(!row || Number(row[4]) > 0, `generated count in the busy row: ${row}`);
      await shot(page, 'monitor.png');
    } finally {
      busy = true;
      ctrl.abort();
      await load;
    }
    await page.waitForFunction(() => [...document.querySelectorAll('#mon-slots tbody tr')].every((tr) => tr.dataset.state === 'idle'),
      { timeout: 5000 });
    const now = await page.$eval('#plot-decode-now', (e) => e.textContent);
    assert(/^now \d/.test(now), `decode plot: '${now}'`);
  });

  await check('web_narrow_375', async () => {
    await page.setViewport({ width: 375, height: 740 });
    await page.click('#tab-chat');
    await sleep(100);
    const fits = await page.evaluate(() => {
      const r = (id) => document.getElementById(id).getBoundingClientRect().toJSON();
      return { sw: document.documentElement.scrollWidth, input: r('input'), send: r('send'),
        sidebar: getComputedStyle(document.getElementById('sidebar')).display };
    });
    assert(fits.sw <= 375, `page is ${fits.sw}px wide at 375`);
    assert(fits.input.left >= 0 && fits.send.right <= 375 && fits.input.width > 150, `composer: ${JSON.stringify(fits)}`);
    assert(fits.sidebar === 'none', 'the conversation list covers the chat');
    await shot(page, 'chat-375.png');
    await page.click('#chats-toggle');
    assert(await page.$eval('#sidebar', (e) => getComputedStyle(e).display !== 'none'), 'the drawer does not open');
    await page.click('#chats-toggle');
    await page.click('#tab-monitor');
    await page.waitForSelector('#mon-slots tbody tr');
    const sw = await page.evaluate(() => document.documentElement.scrollWidth);
    assert(sw <= 375, `monitor is ${sw}px wide at 375`);
    await shot(page, 'monitor-375.png');
    await page.click('#tab-chat');
  });

  await check('web_no_console_errors', async () => {
    assert(errors.length === 0, errors.join('; '));
  });

  await check('web_only_its_server', async () => {
    assert(elsewhere.size === 0, `requests elsewhere: ${[...elsewhere].join(' ')}`);
  });
} finally {
  await browser.close();
}
process.exit(failed ? 1 : 0);
