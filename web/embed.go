// Package web owns the built browser Client: the files in dist/, produced
// from the TypeScript sources beside them by `npm run build` and committed.
// The gateway embeds them through [Files] and serves them; this package
// never serves anything itself, never builds at run time, and holds no Go
// logic beyond handing out the files.
package web

import (
	"embed"
	"io/fs"
)

//go:embed dist
var dist embed.FS

// Files returns the built Client rooted at dist/: index.html, app.js and
// app.css at its top level.
func Files() fs.FS {
	sub, err := fs.Sub(dist, "dist")
	if err != nil {
		// fs.Sub fails only for an invalid path; "dist" is a constant.
		panic(err)
	}
	return sub
}
