// markdown.js: model text to HTML. markdown-it with raw HTML off (so text
// the model writes is escaped, never markup), code blocks highlighted by
// highlight.js's core with the languages registered below.

import MarkdownIt from 'markdown-it';
import hljs from 'highlight.js/lib/core';
import bash from 'highlight.js/lib/languages/bash';
import c from 'highlight.js/lib/languages/c';
import cpp from 'highlight.js/lib/languages/cpp';
import css from 'highlight.js/lib/languages/css';
import diff from 'highlight.js/lib/languages/diff';
import go from 'highlight.js/lib/languages/go';
import javascript from 'highlight.js/lib/languages/javascript';
import json from 'highlight.js/lib/languages/json';
import python from 'highlight.js/lib/languages/python';
import rust from 'highlight.js/lib/languages/rust';
import sql from 'highlight.js/lib/languages/sql';
import typescript from 'highlight.js/lib/languages/typescript';
import xml from 'highlight.js/lib/languages/xml';
import yaml from 'highlight.js/lib/languages/yaml';

const langs = { bash, c, cpp, css, diff, go, javascript, json, python, rust, sql, typescript, xml, yaml };
for (const [name, def] of Object.entries(langs)) hljs.registerLanguage(name, def);

const escapeHtml = (s) => s.replace(/[&<>"]/g, (ch) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' }[ch]));

const md = new MarkdownIt({
  html: false,
  linkify: true,
  highlight(code, lang) {
    try {
      let out;
      if (lang && hljs.getLanguage(lang)) {
        out = hljs.highlight(code, { language: lang, ignoreIllegals: true });
      } else {
        out = hljs.highlightAuto(code);
        if (out.relevance < 5) return '';     // markdown-it escapes it plain
      }
      return `<pre><code class="hljs language-${escapeHtml(out.language || lang || '')}">${out.value}</code></pre>`;
    } catch (_) {
      return '';
    }
  },
});

// Links open in a new tab and tell the target nothing.
const linkOpen = md.renderer.rules.link_open || ((t, i, o, e, self) => self.renderToken(t, i, o));
md.renderer.rules.link_open = (tokens, idx, options, env, self) => {
  tokens[idx].attrSet('target', '_blank');
  tokens[idx].attrSet('rel', 'noopener noreferrer');
  return linkOpen(tokens, idx, options, env, self);
};

export function renderMarkdown(text) { return md.render(text || ''); }
