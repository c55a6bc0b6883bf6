package web

import (
	"io/fs"
	"strings"
	"testing"
)

// The embedded Client is complete: the page and the two files it loads.
func TestFilesHoldTheBuiltClient(t *testing.T) {
	files := Files()
	for _, name := range []string{"index.html", "app.js", "app.css"} {
		info, err := fs.Stat(files, name)
		if err != nil {
			t.Fatalf("embedded Client lacks %s: %v", name, err)
		}
		if info.Size() == 0 {
			t.Fatalf("embedded %s is empty", name)
		}
	}
	page, err := fs.ReadFile(files, "index.html")
	if err != nil {
		t.Fatal(err)
	}
	for _, ref := range []string{`src="app.js"`, `href="app.css"`} {
		if !strings.Contains(string(page), ref) {
			t.Errorf("index.html does not load %s", ref)
		}
	}
}
