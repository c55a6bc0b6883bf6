// @vitest-environment jsdom
import { describe, expect, it } from "vitest";
import { escapeHTML, renderMarkdown, safeHref } from "./markdown";
import cases from "./markdown-injections.json";

/** The rendered source as a DOM fragment, to ask about structure rather than exact text. */
function dom(source: string, headingBase?: number): HTMLElement {
  const div = document.createElement("div");
  div.innerHTML = renderMarkdown(source, headingBase);
  return div;
}

/** Everything that could run script or load from elsewhere, anywhere in the fragment. */
function dangers(root: HTMLElement): string[] {
  const out: string[] = [];
  for (const el of root.querySelectorAll("*")) {
    if (["SCRIPT", "IFRAME", "OBJECT", "EMBED", "STYLE", "IMG", "SVG", "MATH", "FORM", "LINK", "META", "BASE"].includes(el.tagName.toUpperCase())) out.push(el.tagName);
    for (const attr of el.attributes) {
      if (attr.name.startsWith("on") || attr.name === "style" || attr.name === "src" || attr.name === "srcdoc") out.push(`${el.tagName}[${attr.name}]`);
      if (/^\s*(javascript|data|vbscript):/i.test(attr.value)) out.push(`${el.tagName}[${attr.name}=${attr.value}]`);
    }
  }
  return out;
}

// The injection cases, shared with the real-browser test (integration/
// browser_markdown_test.go): the ones this renderer always had, and more
// that a library's raw-HTML and link handling must also refuse.
const injections: string[] = cases.cases;

describe("renderMarkdown: safety", () => {
  it.each(injections)("nothing in %j can run script or load from elsewhere", (source) => {
    expect(dangers(dom(source))).toEqual([]);
  });

  it("shows raw HTML as text, in paragraphs, code and link text", () => {
    expect(dom('<script>alert("x")</script>').textContent).toContain('<script>alert("x")</script>');
    expect(dom("`<b>`").querySelector("code")?.textContent).toBe("<b>");
    expect(dom("```\n<img src=x onerror=alert(1)>\n```").querySelector("pre code")?.textContent).toBe("<img src=x onerror=alert(1)>\n");
    expect(dom("[<i>hi</i>](https://example.test)").querySelector("a")?.textContent).toBe("<i>hi</i>");
  });

  it("keeps only absolute http(s) and mailto link targets, and opens them with rel=noopener", () => {
    const a = dom("[docs](https://example.test/a?b=1&c=2)").querySelector("a");
    expect([a?.getAttribute("href"), a?.getAttribute("target"), a?.getAttribute("rel")]).toEqual(["https://example.test/a?b=1&c=2", "_blank", "noopener noreferrer"]);
    for (const bad of ["[x](javascript:alert(1))", "[x](data:text/html,hi)", "[x](/relative)", "<https://>"]) {
      expect(dom(bad).querySelector("a[href]")).toBeNull();
    }
    expect(dom("[x](javascript:alert(1))").textContent?.trim()).toBe("x");
    expect(safeHref("mailto:ana@example.test")).toBe("mailto:ana@example.test");
    expect(safeHref('https://example.test/"onmouseover=')).toBe("https://example.test/%22onmouseover=");
  });

  it("an image becomes a link to its source: the page loads nothing from elsewhere", () => {
    const root = dom("![the chart](https://example.test/c.png)");
    expect(root.querySelector("img")).toBeNull();
    expect(root.querySelector("a")?.textContent).toBe("the chart");
  });

  it("escapes attribute quotes", () => {
    expect(escapeHTML(`a"b'c&<>`)).toBe("a&quot;b&#39;c&amp;&lt;&gt;");
  });
});

describe("renderMarkdown: blocks", () => {
  const tags = (source: string, headingBase?: number) => [...dom(source, headingBase).querySelectorAll("*")].map((e) => e.tagName.toLowerCase());

  it("headings sit below the card heading", () => {
    expect(tags("# Plan\n## Steps\n###### deep")).toEqual(["h3", "h4", "h6"]);
    expect(tags("# Top", 1)).toEqual(["h1"]);
  });

  it("joins paragraph lines and separates paragraphs by blank lines", () => {
    expect([...dom("one\ntwo\n\nthree").querySelectorAll("p")].map((p) => p.textContent)).toEqual(["one\ntwo", "three"]);
  });

  it("renders bullet and numbered lists, nested by indentation", () => {
    expect(tags("- a\n- b\n  - b1\n  - b2\n- c")).toEqual(["ul", "li", "li", "ul", "li", "li", "li"]);
    expect(dom("3. third\n4. fourth").querySelector("ol")?.getAttribute("start")).toBe("3");
  });

  it("renders fenced code with its language, indented code, quotes and rules", () => {
    expect(dom("```go\nfunc main() {}\n```").querySelector("pre code")?.className).toBe("language-go");
    expect(dom("    x := 1\n    y := 2").querySelector("pre code")?.textContent).toBe("x := 1\ny := 2\n");
    expect(tags("> quoted\n> more")).toEqual(["blockquote", "p"]);
    expect(tags("a\n\n---\n\nb")).toEqual(["p", "hr", "p"]);
  });

  it("renders tables with their alignment", () => {
    const root = dom("| Option | Cost |\n|:--|--:|\n| Postgres | $$ |\n| SQLite | free |");
    expect([...root.querySelectorAll("th")].map((th) => th.textContent)).toEqual(["Option", "Cost"]);
    expect(root.querySelectorAll("tbody tr")).toHaveLength(2);
    expect(root.querySelector("td:last-child")?.getAttribute("align")).toBe("right");
  });

  it("renders strong, emphasis, code and strikethrough; leaves snake_case alone", () => {
    expect(tags("**bold** and *it* and _it2_ and `x*y` and ~~old~~")).toEqual(["p", "strong", "em", "em", "code", "del"]);
    expect(dom("use snake_case_names").textContent?.trim()).toBe("use snake_case_names");
  });

  it("a task list's checkbox only shows", () => {
    const box = dom("- [x] done").querySelector("input");
    expect([box?.getAttribute("type"), box?.hasAttribute("disabled"), box?.hasAttribute("checked")]).toEqual(["checkbox", true, true]);
  });
});

describe("bidirectional controls", () => {
  it("show as markers and reorder nothing", () => {
    const root = dom("Approve **the \u202Eyalp\u202C** plan");
    expect(root.textContent?.trim()).toBe("Approve the ⟦U+202E⟧yalp⟦U+202C⟧ plan");
    expect(root.innerHTML).not.toMatch(/[\u202A-\u202E\u2066-\u2069\u200E\u200F\u061C]/);
  });
});
