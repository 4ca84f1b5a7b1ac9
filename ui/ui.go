// Package ui is coopr's web UI: a React app in this folder (docs/ui.md),
// built by `make build` into dist/ and embedded in the coopr binary, which
// serves it at /. A fresh clone has only a placeholder in dist/, so the Go
// code builds without Node; the server then says how to build the UI.
package ui

import (
	"embed"
	"io/fs"
)

//go:embed all:dist
var dist embed.FS

// Dist is the built UI: index.html and its hashed assets under assets/.
func Dist() fs.FS {
	sub, err := fs.Sub(dist, "dist")
	if err != nil {
		panic(err) // dist is embedded: it exists
	}
	return sub
}

// Built reports whether fsys holds a built UI rather than the placeholder.
func Built(fsys fs.FS) bool {
	_, err := fs.Stat(fsys, "index.html")
	return err == nil
}
