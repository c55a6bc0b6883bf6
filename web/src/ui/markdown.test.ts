import { describe, expect, it } from "vitest";
import { escapeHTML, inline, renderMarkdown, safeHref } from "./markdown";

describe("renderMarkdown: safety", () => {
  it("escapes raw HTML everywhere, including inside code and link text", () => {
    expect(renderMarkdown('<script>alert("x")</script>')).toBe("<p>&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;</p>");
    expect(renderMarkdown("`<b>`")).toBe("<p><code>&lt;b&gt;</code></p>");
    expect(renderMarkdown("```\n<img src=x onerror=alert(1)>\n```")).toBe("<pre><code>&lt;img src=x onerror=alert(1)&gt;</code></pre>");
    expect(renderMarkdown("[<i>hi</i>](https://example.test)")).toContain(">&lt;i&gt;hi&lt;/i&gt;</a>");
  });

  it("keeps only http(s) and mailto link targets, and opens them with rel=noopener", () => {
    expect(renderMarkdown("[docs](https://example.test/a?b=1&c=2)")).toBe(
      '<p><a href="https://example.test/a?b=1&amp;c=2" target="_blank" rel="noopener noreferrer">docs</a></p>',
    );
    expect(renderMarkdown("[x](javascript:alert(1))")).toBe("<p>x</p>");
    expect(renderMarkdown("[x](data:text/html,hi)")).toBe("<p>x</p>");
    expect(renderMarkdown("[x](/relative)")).toBe("<p>x</p>");
    expect(safeHref("mailto:ana@example.test")).toBe("mailto:ana@example.test");
    expect(safeHref('https://example.test/"onmouseover=')).toBe("https://example.test/%22onmouseover=");
  });

  it("escapes attribute quotes", () => {
    expect(escapeHTML(`a"b'c&<>`)).toBe("a&quot;b&#39;c&amp;&lt;&gt;");
  });
});

describe("renderMarkdown: blocks", () => {
  it("headings sit below the card heading", () => {
    expect(renderMarkdown("# Plan\n## Steps\n###### deep")).toBe("<h3>Plan</h3><h4>Steps</h4><h6>deep</h6>");
    expect(renderMarkdown("# Top", 1)).toBe("<h1>Top</h1>");
  });

  it("joins paragraph lines and separates paragraphs by blank lines", () => {
    expect(renderMarkdown("one\ntwo\n\nthree")).toBe("<p>one two</p><p>three</p>");
  });

  it("renders bullet and numbered lists, nested by indentation", () => {
    expect(renderMarkdown("- a\n- b\n  - b1\n  - b2\n- c")).toBe("<ul><li>a</li><li>b<ul><li>b1</li><li>b2</li></ul></li><li>c</li></ul>");
    expect(renderMarkdown("1. first\n2. second")).toBe("<ol><li>first</li><li>second</li></ol>");
    expect(renderMarkdown("3. third\n4. fourth")).toBe('<ol start="3"><li>third</li><li>fourth</li></ol>');
    expect(renderMarkdown("- a\n  continued")).toBe("<ul><li>a continued</li></ul>");
  });

  it("renders fenced code with its language, indented code, quotes and rules", () => {
    expect(renderMarkdown("```go\nfunc main() {}\n```")).toBe('<pre><code class="language-go">func main() {}</code></pre>');
    expect(renderMarkdown("    x := 1\n    y := 2")).toBe("<pre><code>x := 1\ny := 2</code></pre>");
    expect(renderMarkdown("> quoted\n> more")).toBe("<blockquote><p>quoted more</p></blockquote>");
    expect(renderMarkdown("a\n\n---\n\nb")).toBe("<p>a</p><hr><p>b</p>");
  });

  it("an unclosed fence runs to the end", () => {
    expect(renderMarkdown("```\ncode")).toBe("<pre><code>code</code></pre>");
  });
});

describe("inline", () => {
  it("renders strong, emphasis and code", () => {
    expect(inline("**bold** and *it* and _it2_ and `x*y`")).toBe("<strong>bold</strong> and <em>it</em> and <em>it2</em> and <code>x*y</code>");
  });

  it("leaves stray markers and snake_case alone", () => {
    expect(inline("2 * 3 * 4")).toBe("2 * 3 * 4");
    expect(inline("use snake_case_names")).toBe("use snake_case_names");
    expect(inline("\\*not em\\*")).toBe("*not em*");
  });

  it("nests emphasis inside links and links inside strong", () => {
    expect(inline("**see [the *plan*](https://example.test)**")).toBe(
      '<strong>see <a href="https://example.test/" target="_blank" rel="noopener noreferrer">the <em>plan</em></a></strong>',
    );
  });
});
