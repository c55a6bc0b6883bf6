package integration

import (
	"encoding/json"
	"fmt"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover"
)

// browserDangers lists, in the page, whatever under css could run script
// or load from elsewhere: the same check as web/src/ui/markdown.test.ts.
func browserDangers(css string) string {
	return `(() => { const out = []; for (const el of document.querySelectorAll(` + browserString(css+" *") + `)) {
		if (["SCRIPT","IFRAME","OBJECT","EMBED","STYLE","IMG","SVG","MATH","FORM","LINK","META","BASE"].includes(el.tagName.toUpperCase())) out.push(el.tagName);
		for (const a of el.attributes) {
			if (a.name.startsWith("on") || a.name === "style" || a.name === "src" || a.name === "srcdoc") out.push(el.tagName + "[" + a.name + "]");
			if (/^\s*(javascript|data|vbscript):/i.test(a.value)) out.push(el.tagName + "[" + a.name + "=" + a.value + "]");
		} } return out; })()`
}

func TestBrowserMarkdownDetailRendersTablesAndCodeAndNoInjectionRuns(t *testing.T) {
	// Issue 13 item 5: question detail is Markdown rendered by marked and sanitized by DOMPurify.
	// Every injection case of web/src/ui/markdown-injections.json (the unit tests' too) is one
	// question's detail; in Chromium none leaves an element or attribute that could run script
	// or load from elsewhere, and none ran. A table and a code block render styled.
	t.Parallel()
	raw, err := os.ReadFile("../web/src/ui/markdown-injections.json")
	require.NoError(t, err)
	var file struct {
		Cases []string `json:"cases"`
	}
	require.NoError(t, json.Unmarshal(raw, &file))
	require.NotEmpty(t, file.Cases)

	w := newBrowserWorld(t, browserSayMovedOn)
	const sid = "s-markdown"
	p := w.open(sid, "user", false)
	questions := []holdover.Question{{
		ID: "plan", Header: "Plan", Question: "Which option?",
		Detail:  "## Options\n\n| Option | Cost | Notes |\n|:--|--:|---|\n| Postgres | $$ | needs a server |\n| SQLite | free | one file |\n\n```go\nfunc main() { fmt.Println(\"hi\") }\n```\n\nSee [the notes](https://example.test/notes).",
		Options: []holdover.Option{{Label: "Postgres"}, {Label: "SQLite"}},
	}}
	for i, c := range file.Cases {
		questions = append(questions, holdover.Question{ID: fmt.Sprintf("m%d", i), Question: fmt.Sprintf("Case %d", i), Detail: c})
	}
	done := make(chan error, 1)
	go func() {
		_, err := w.user.Ask(w.ctx, holdover.AskRequest{Session: sid, Questions: questions})
		done <- err
	}()

	p.waitFor("the card", browserQuery(browserCard+` .detail table`)+` !== null`)
	require.Equal(t, 2, p.count(browserCard+` .detail tbody tr`))
	require.Equal(t, "right", p.str(browserQuery(browserCard+` .detail td:nth-child(2)`)+`.getAttribute("align")`))
	require.Equal(t, "language-go", p.str(browserQuery(browserCard+` .detail pre code`)+`.className`))
	require.Equal(t, "noopener noreferrer", p.str(browserQuery(browserCard+` .detail a`)+`.rel`))
	require.NotEqual(t, "auto", p.str(`getComputedStyle(`+browserQuery(browserCard+` .detail td`)+`).borderTopStyle`), "table cells are styled")
	p.shot("table-and-code")

	for i, c := range file.Cases {
		p.click(fmt.Sprintf(`%s .pager li:nth-child(%d) button`, browserCard, i+2))
		p.waitFor(fmt.Sprintf("case %d", i), browserQuery(fmt.Sprintf(`%s .question[data-question-id="m%d"]`, browserCard, i))+` !== null`)
		var dangers []string
		p.eval(browserDangers(browserCard+` .detail`), &dangers)
		require.Empty(t, dangers, "case %d %q left something that could run", i, c)
	}
	require.False(t, p.bool(`window.__pwned`), "no injection ran")
	p.click(browserCard + ` .dismiss-all`)
	require.Equal(t, holdover.CodeAskCancelled, holdover.CodeOf(<-done))
}
