// A small, safe Markdown renderer for question `detail` and assistant text.
//
// Agents write the Markdown, so it is untrusted: every character of the
// source reaches the page escaped, and only the tags this file writes
// itself exist in the output. No raw HTML passes through, and a link keeps
// its target only when it is http(s) or mailto; every link opens in a new
// tab with rel="noopener noreferrer".
//
// Supported: ATX headings (shifted down so they sit below the card's own
// heading), paragraphs, bullet and numbered lists (nested by indentation),
// fenced and indented code blocks, block quotes, rules, inline code,
// **strong**, *emphasis* / _emphasis_ and [links](https://…).

/** Escapes text for use in HTML content and double-quoted attributes. */
export function escapeHTML(text: string): string {
  return text.replace(/[&<>"']/g, (c) => escapes[c] ?? c);
}

const escapes: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

/** The HTML of source. `headingBase` is the level a "#" heading becomes (default 3). */
export function renderMarkdown(source: string, headingBase = 3): string {
  const lines = source.replace(/\r\n?/g, "\n").split("\n");
  return blocks(lines, headingBase).join("");
}

const fence = /^ {0,3}(```|~~~)\s*([\w+-]*)\s*$/;
const heading = /^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$/;
const rule = /^ {0,3}([-*_])(\s*\1){2,}\s*$/;
const bullet = /^(\s*)([-*+])\s+(.*)$/;
const numbered = /^(\s*)(\d{1,9})[.)]\s+(.*)$/;
const quote = /^ {0,3}>\s?(.*)$/;

function blocks(lines: string[], headingBase: number): string[] {
  const out: string[] = [];
  let i = 0;
  while (i < lines.length) {
    const line = lines[i] ?? "";
    if (line.trim() === "") {
      i++;
      continue;
    }
    const f = fence.exec(line);
    if (f) {
      const close = f[1] ?? "```";
      const body: string[] = [];
      i++;
      while (i < lines.length && !(lines[i] ?? "").trim().startsWith(close)) body.push(lines[i++] ?? "");
      i++; // the closing fence, or past the end
      const lang = f[2] ? ` class="language-${escapeHTML(f[2])}"` : "";
      out.push(`<pre><code${lang}>${escapeHTML(body.join("\n"))}</code></pre>`);
      continue;
    }
    if (/^( {4}|\t)/.test(line)) {
      const body: string[] = [];
      while (i < lines.length && (/^( {4}|\t)/.test(lines[i] ?? "") || (lines[i] ?? "").trim() === "")) {
        body.push((lines[i++] ?? "").replace(/^( {4}|\t)/, ""));
      }
      while (body.length > 0 && (body[body.length - 1] ?? "").trim() === "") body.pop();
      out.push(`<pre><code>${escapeHTML(body.join("\n"))}</code></pre>`);
      continue;
    }
    const h = heading.exec(line);
    if (h) {
      const level = Math.min(6, headingBase - 1 + (h[1] ?? "#").length);
      out.push(`<h${level}>${inline(h[2] ?? "")}</h${level}>`);
      i++;
      continue;
    }
    if (rule.test(line)) {
      out.push("<hr>");
      i++;
      continue;
    }
    if (quote.test(line)) {
      const body: string[] = [];
      while (i < lines.length && quote.test(lines[i] ?? "")) body.push(quote.exec(lines[i++] ?? "")?.[1] ?? "");
      out.push(`<blockquote>${blocks(body, headingBase).join("")}</blockquote>`);
      continue;
    }
    if (bullet.test(line) || numbered.test(line)) {
      const end = listEnd(lines, i);
      out.push(list(lines.slice(i, end), headingBase));
      i = end;
      continue;
    }
    const para: string[] = [];
    while (i < lines.length && startsParagraphLine(lines[i] ?? "")) para.push((lines[i++] ?? "").trim());
    out.push(`<p>${inline(para.join(" "))}</p>`);
  }
  return out;
}

/** Whether line continues a paragraph: not blank and not the start of another block. */
function startsParagraphLine(line: string): boolean {
  if (line.trim() === "") return false;
  return !(fence.test(line) || heading.test(line) || rule.test(line) || quote.test(line) || bullet.test(line) || numbered.test(line));
}

/** The index after the list that starts at lines[start]: items, their indented continuations, single blank lines between items. */
function listEnd(lines: string[], start: number): number {
  let i = start + 1;
  while (i < lines.length) {
    const line = lines[i] ?? "";
    if (line.trim() === "") {
      const next = lines[i + 1] ?? "";
      if (bullet.test(next) || numbered.test(next) || /^\s{2,}\S/.test(next)) {
        i++;
        continue;
      }
      break;
    }
    if (bullet.test(line) || numbered.test(line) || /^\s+\S/.test(line)) {
      i++;
      continue;
    }
    break;
  }
  return i;
}

/** Renders list lines: items at the shallowest indentation, deeper lines nested inside the item before them. */
function list(lines: string[], headingBase: number): string {
  const first = lines[0] ?? "";
  const ordered = !bullet.test(first) && numbered.test(first);
  const indent = indentOf(first);
  const items: { text: string; children: string[] }[] = [];
  for (const line of lines) {
    const m = indentOf(line) <= indent ? (bullet.exec(line) ?? numbered.exec(line)) : null;
    if (m) items.push({ text: m[3] ?? "", children: [] });
    else if (line.trim() !== "") items[items.length - 1]?.children.push(line);
  }
  const start = ordered ? Number(numbered.exec(first)?.[2] ?? "1") : 1;
  const open = ordered ? (start !== 1 ? `<ol start="${start}">` : "<ol>") : "<ul>";
  const body = items
    .map((it) => {
      const nested = it.children.length === 0 ? "" : nestedBlock(it.children, headingBase);
      return `<li>${inline(it.text)}${nested}</li>`;
    })
    .join("");
  return `${open}${body}${ordered ? "</ol>" : "</ul>"}`;
}

/** An item's deeper lines: a nested list, or text continuing the item. */
function nestedBlock(children: string[], headingBase: number): string {
  const first = children[0] ?? "";
  if (bullet.test(first) || numbered.test(first)) return list(children, headingBase);
  return ` ${inline(children.map((c) => c.trim()).join(" "))}`;
}

function indentOf(line: string): number {
  return (/^\s*/.exec(line)?.[0] ?? "").replace(/\t/g, "    ").length;
}

/** Renders inline Markdown: code spans, links, strong and emphasis; everything else escaped. */
export function inline(text: string): string {
  let out = "";
  let i = 0;
  let plain = "";
  const flush = () => {
    out += escapeHTML(plain);
    plain = "";
  };
  while (i < text.length) {
    const c = text[i];
    if (c === "\\" && i + 1 < text.length && /[\\`*_[\]()#+\-.!>]/.test(text[i + 1] ?? "")) {
      plain += text[i + 1];
      i += 2;
      continue;
    }
    if (c === "`") {
      const run = /^`+/.exec(text.slice(i))?.[0] ?? "`";
      const close = text.indexOf(run, i + run.length);
      if (close > 0) {
        flush();
        out += `<code>${escapeHTML(text.slice(i + run.length, close).trim())}</code>`;
        i = close + run.length;
        continue;
      }
    }
    if (c === "[") {
      const link = readLink(text, i);
      if (link) {
        flush();
        out += link.html;
        i = link.end;
        continue;
      }
    }
    if (c === "*" || c === "_") {
      const strong = text.startsWith(c + c, i) ? readDelimited(text, i, c + c) : undefined;
      if (strong) {
        flush();
        out += `<strong>${inline(strong.inner)}</strong>`;
        i = strong.end;
        continue;
      }
      const wordInside = c === "_" && /\w/.test(text[i - 1] ?? "");
      const em = wordInside ? undefined : readDelimited(text, i, c);
      if (em) {
        flush();
        out += `<em>${inline(em.inner)}</em>`;
        i = em.end;
        continue;
      }
    }
    plain += c;
    i++;
  }
  flush();
  return out;
}

/** A `delim`…`delim` span starting at i whose inside neither starts nor ends with a space. */
function readDelimited(text: string, i: number, delim: string): { inner: string; end: number } | undefined {
  const from = i + delim.length;
  if (/\s/.test(text[from] ?? " ")) return undefined;
  let close = text.indexOf(delim, from);
  while (close > from && /\s/.test(text[close - 1] ?? "")) close = text.indexOf(delim, close + 1);
  if (close <= from) return undefined;
  if (delim.length === 1 && text[close + 1] === delim) return undefined; // "*a**" is not emphasis
  if (delim === "_" && /\w/.test(text[close + 1] ?? "")) return undefined; // snake_case_words
  return { inner: text.slice(from, close), end: close + delim.length };
}

/** A [text](url) link at i. An unsafe or malformed target renders the text alone. */
function readLink(text: string, i: number): { html: string; end: number } | undefined {
  let depth = 0;
  let j = i;
  for (; j < text.length; j++) {
    if (text[j] === "[") depth++;
    else if (text[j] === "]" && --depth === 0) break;
  }
  if (j >= text.length || text[j + 1] !== "(") return undefined;
  let close = j + 2;
  for (let open = 1; close < text.length; close++) {
    if (text[close] === "(") open++;
    else if (text[close] === ")" && --open === 0) break;
  }
  if (close >= text.length) return undefined;
  const label = inline(text.slice(i + 1, j));
  const target = text.slice(j + 2, close).trim().split(/\s+/)[0] ?? "";
  const href = safeHref(target);
  const html = href ? `<a href="${escapeHTML(href)}" target="_blank" rel="noopener noreferrer">${label}</a>` : label;
  return { html, end: close + 1 };
}

/** target when it is an absolute http(s) or mailto address, else undefined. */
export function safeHref(target: string): string | undefined {
  let url: URL;
  try {
    url = new URL(target);
  } catch {
    return undefined;
  }
  return url.protocol === "http:" || url.protocol === "https:" || url.protocol === "mailto:" ? url.href : undefined;
}
