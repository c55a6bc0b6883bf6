// Markdown for question `detail` and assistant text, rendered by marked
// (GitHub-flavoured: tables, fenced code, lists, quotes) and sanitized by
// DOMPurify before it reaches the page.
//
// Agents write the Markdown, so it is untrusted, and two layers keep it
// inert. First, marked is told to write raw HTML out as text: a <script>
// in the source shows as "<script>", as it always did here. Second,
// DOMPurify sanitizes what marked wrote, with an allow-list of the tags
// Markdown produces, so neither a marked bug nor a future option lets an
// element or attribute through that runs script. Links keep their target
// only when it is absolute http(s) or mailto, and open in a new tab with
// rel="noopener noreferrer"; images become links to their source, since
// the page loads nothing from other origins.
//
// Headings are shifted down (by default "#" becomes h3) so they sit below
// the card's own heading.

import DOMPurify from "dompurify";
import { Marked, type Tokens } from "marked";
import { shown } from "../questions/text";

/** Escapes text for use in HTML content and double-quoted attributes. */
export function escapeHTML(text: string): string {
  return text.replace(/[&<>"']/g, (c) => escapes[c] ?? c);
}

const escapes: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

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

/** The tags Markdown produces; nothing else survives sanitizing. */
const allowedTags = [
  "a", "blockquote", "br", "code", "del", "em", "h1", "h2", "h3", "h4", "h5", "h6", "hr", "input", "li", "ol", "p", "pre", "strong",
  "table", "tbody", "td", "th", "thead", "tr", "ul",
];
/** href on links, class for a code block's language, align on table cells, start on ordered lists, and a task list's checkbox. */
const allowedAttributes = ["href", "class", "align", "start", "type", "checked", "disabled", "target", "rel"];

function markedFor(headingBase: number): Marked {
  return new Marked({
    gfm: true,
    breaks: false,
    async: false,
    renderer: {
      // Raw HTML in the source is text, never markup.
      html: ({ text }: Tokens.HTML | Tokens.Tag) => escapeHTML(text),
      heading({ tokens, depth }: Tokens.Heading): string {
        const level = Math.min(6, headingBase - 1 + depth);
        return `<h${level}>${this.parser.parseInline(tokens)}</h${level}>\n`;
      },
      link({ href, tokens }: Tokens.Link): string {
        const label = this.parser.parseInline(tokens);
        const safe = safeHref(href);
        return safe ? `<a href="${escapeHTML(safe)}" target="_blank" rel="noopener noreferrer">${label}</a>` : label;
      },
      image({ href, text }: Tokens.Image): string {
        const safe = safeHref(href);
        const label = escapeHTML(text || href);
        return safe ? `<a href="${escapeHTML(safe)}" target="_blank" rel="noopener noreferrer">${label}</a>` : label;
      },
    },
  });
}

const renderers = new Map<number, Marked>();

let purifier: ReturnType<typeof DOMPurify> | undefined;

/** DOMPurify bound to this page's window, with the link rules as a hook. */
function sanitizer(): ReturnType<typeof DOMPurify> {
  if (purifier) return purifier;
  const p = DOMPurify(window);
  p.addHook("afterSanitizeAttributes", (node) => {
    if (node.tagName === "A") {
      const href = safeHref(node.getAttribute("href") ?? "");
      if (href) {
        node.setAttribute("href", href);
        node.setAttribute("target", "_blank");
        node.setAttribute("rel", "noopener noreferrer");
      } else {
        node.removeAttribute("href");
        node.removeAttribute("target");
      }
    } else if (node.tagName === "INPUT") {
      // Only a task list's checkbox, and it only shows.
      if (node.getAttribute("type") !== "checkbox") node.remove();
      else node.setAttribute("disabled", "");
    }
  });
  purifier = p;
  return p;
}

/**
 * The sanitized HTML of source, its bidirectional controls shown as markers
 * (shown). `headingBase` is the level a "#" heading becomes (default 3).
 */
export function renderMarkdown(source: string, headingBase = 3): string {
  let md = renderers.get(headingBase);
  if (!md) {
    md = markedFor(headingBase);
    renderers.set(headingBase, md);
  }
  const html = md.parse(shown(source)) as string;
  return sanitizer().sanitize(html, {
    ALLOWED_TAGS: allowedTags,
    ALLOWED_ATTR: allowedAttributes,
    ALLOW_DATA_ATTR: false,
    ALLOW_ARIA_ATTR: false,
  });
}
