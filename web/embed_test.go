package web

import (
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// The embedded Client is complete: the page and the two files it loads.
func TestFilesHoldTheBuiltClient(t *testing.T) {
	files := Files()
	for _, name := range []string{"index.html", "app.js", "app.css", "icon.svg", "icon-1.svg", "icon-9plus.svg"} {
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
	for _, ref := range []string{`src="app.js"`, `href="app.css"`, `href="icon.svg"`} {
		if !strings.Contains(string(page), ref) {
			t.Errorf("index.html does not load %s", ref)
		}
	}
	for _, bad := range []string{"../embed.go", "/index.html", "src/main.ts", "dist/app.js"} {
		if _, err := files.Open(bad); err == nil {
			t.Errorf("Files opened %q, which is not a file of the Client", bad)
		}
	}
}

// A file server over Files serves the page at "/" and its files beside it,
// as the gateway does.
func TestFilesServeThePageAtTheRoot(t *testing.T) {
	srv := httptest.NewServer(http.FileServerFS(Files()))
	defer srv.Close()
	for path, want := range map[string]string{"/": `src="app.js"`, "/app.css": ":root", "/app.js": "function"} {
		res, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		body := new(strings.Builder)
		_, _ = io.Copy(body, res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK || !strings.Contains(body.String(), want) {
			t.Errorf("GET %s: %d, want a body with %q", path, res.StatusCode, want)
		}
	}
}
