// Package web owns the browser Client: the page static/index.html and the
// files in dist/ it loads (app.js and app.css), produced from the sources
// in src/ by `npm run build` and committed. The gateway embeds them
// through [Files] and serves them; this package never serves anything
// itself, never builds at run time, and holds no Go logic beyond handing
// out the files.
package web

import (
	"embed"
	"errors"
	"io/fs"
	"path"
)

//go:embed dist static
var embedded embed.FS

// Files returns the Client with index.html, app.js and app.css at its top
// level: the built files from dist/, and the page from static/, which
// needs no build and so has no copy in dist/.
func Files() fs.FS { return client{} }

// client looks a name up in dist/ first, then in static/. Its root
// directory is dist/.
type client struct{}

func (client) Open(name string) (fs.File, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	f, err := embedded.Open(path.Join("dist", name))
	if errors.Is(err, fs.ErrNotExist) {
		return embedded.Open(path.Join("static", name))
	}
	return f, err
}
