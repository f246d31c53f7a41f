// Markdown for model replies: marked (Debian's libjs-marked) with GitHub tables,
// math by KaTeX and code by highlight.js — both loaded only when a reply has
// math or code. Raw HTML in a reply is shown as text, links are limited to
// http(s) / mailto, and images are shown as links (nothing is fetched).
import { el, escapeHtml, loadCss, loadScript } from "./common.js";

let configured = false;
let katexReady = false, hljsReady = false;

function configure() {
  if (configured) return;
  configured = true;
  const safeUrl = u => /^(https?:|mailto:|#)/i.test(u || "") ? u : null;
  window.marked.use({
    gfm: true,
    breaks: false,
    renderer: {
      html(html) { return escapeHtml(html); },
      link(href, title, text) {
        const u = safeUrl(href);
        return u ? `<a href="${escapeHtml(u)}" target="_blank" rel="noopener noreferrer">${text}</a>` : text;
      },
      image(href, title, text) {
        const u = safeUrl(href);
        return u ? `<a href="${escapeHtml(u)}" target="_blank" rel="noopener noreferrer">[image: ${escapeHtml(text || href)}]</a>`
                 : escapeHtml(text || "");
      },
      code(code, info) {
        const lang = (info || "").trim().split(/\s+/)[0];
        return `<div class="code"><div class="code-head"><span>${escapeHtml(lang || "text")}</span>` +
               `<button type="button" class="copy" aria-label="Copy code">Copy</button></div>` +
               `<pre><code class="${lang ? "language-" + escapeHtml(lang) : "nohighlight"}">${escapeHtml(code)}</code></pre></div>`;
      },
    },
  });
}

// Math spans taken out before marked sees them (it would eat backslashes and
// underscores) and put back as KaTeX's HTML: $$..$$, \[..\], \(..\) and $..$
// (not followed by a digit-only word like "$5").
const MATH = /\$\$([\s\S]+?)\$\$|\\\[([\s\S]+?)\\\]|\\\(([\s\S]+?)\\\)|(?<![\\$\w])\$(?!\s)([^$\n]+?)(?<!\s)\$(?![\w$])/g;

// Code spans and blocks are left alone: math inside them is code.
const CODE = /(```[\s\S]*?(?:```|$)|`[^`\n]*`)/g;

export function hasMath(text) {
  return text.split(CODE).some((part, i) => i % 2 === 0 && new RegExp(MATH.source).test(part));
}

export function renderMarkdown(text) {
  configure();
  const maths = [];
  const protectedText = text.split(CODE).map((part, i) => {
    if (i % 2 === 1) return part;
    return part.replace(MATH, (m, d1, d2, i1, i2) => {
      const display = d1 !== undefined || d2 !== undefined;
      maths.push({ tex: d1 ?? d2 ?? i1 ?? i2, display });
      return `KILNMATH${maths.length - 1}X`;
    });
  }).join("");
  let html = window.marked.parse(protectedText);
  if (maths.length) {
    html = html.replace(/KILNMATH(\d+)X/g, (m, i) => {
      const { tex, display } = maths[+i];
      if (!katexReady) return `<span class="math-pending">${escapeHtml(tex)}</span>`;
      try {
        return window.katex.renderToString(tex, { displayMode: display, throwOnError: false, output: "html" });
      } catch {
        return `<code>${escapeHtml(tex)}</code>`;
      }
    });
  }
  return html;
}

// Sets a node's content to the rendered Markdown and, where it has code or
// math, loads the libraries (then renders again). onReady runs after a
// library arrives, so a caller can re-render.
export function renderInto(node, text, onReady) {
  node.innerHTML = renderMarkdown(text);
  if (!katexReady && hasMath(text)) {
    loadCss("/vendor/katex/katex.min.css");
    loadScript("/vendor/katex/katex.min.js").then(() => { katexReady = true; onReady && onReady(); });
  }
  const blocks = node.querySelectorAll("pre code:not(.nohighlight)");
  if (blocks.length) {
    if (hljsReady) blocks.forEach(b => window.hljs.highlightElement ? window.hljs.highlightElement(b) : window.hljs.highlightBlock(b));
    else {
      loadCss("/vendor/hljs.css");
      loadScript("/vendor/highlight.min.js").then(() => { hljsReady = true; onReady && onReady(); });
    }
  }
}

// Copy buttons of code blocks (one listener on the thread).
export function installCopyHandler(root) {
  root.addEventListener("click", async e => {
    const b = e.target.closest("button.copy");
    if (!b) return;
    const code = b.closest(".code").querySelector("code").textContent;
    try {
      await navigator.clipboard.writeText(code);
    } catch {
      // No clipboard permission (plain http on another host): select the text instead.
      const r = document.createRange();
      r.selectNodeContents(b.closest(".code").querySelector("code"));
      getSelection().removeAllRanges();
      getSelection().addRange(r);
      document.execCommand && document.execCommand("copy");
    }
    b.textContent = "Copied";
    setTimeout(() => { b.textContent = "Copy"; }, 1200);
  });
}

export { el };
