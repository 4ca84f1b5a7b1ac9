// Package playground serves coopr's GraphQL playground: GraphiQL with all
// its scripts and styles built into the binary, so that it works with no
// network beyond the server (no CDN), under a Content-Security-Policy that
// allows no inline or foreign script.
//
// The files under assets/ other than playground.js and playground.css are
// GraphiQL's and React's published builds, unchanged (see README.md for
// their versions and how to update them); their licenses are served beside
// them.
package playground

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"sync"
	"time"
)

//go:embed index.html
var indexHTML string

//go:embed assets
var assets embed.FS

// Page and asset locations, relative to the page so that a proxy may mount
// the server under a prefix.
const (
	// Path is where the page is served.
	Path = "/playground"
	// AssetsPath is the prefix of the files the page loads.
	AssetsPath = "/playground/assets/"
	assetsRel  = "playground/assets/"
)

// csp lets the page run its own scripts only. GraphiQL sets style
// attributes and embeds its fonts and icons as data: URLs.
const csp = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; " +
	"img-src 'self' data:; font-src 'self' data:; connect-src 'self'; " +
	"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// asset is one embedded file, with its digest for ETag and integrity.
type asset struct {
	name string
	data []byte
	sum  [sha256.Size]byte
}

// pageRef is how the page references an asset.
type pageRef struct {
	Path      string
	Integrity string
}

// handler serves the page at Path and its files under AssetsPath.
type handler struct {
	page   []byte
	etag   string
	assets map[string]*asset
}

// Handler serves the page at Path and its files under AssetsPath. It is
// built once, on first use.
func Handler() http.Handler { return built() }

// built builds the handler once. The files are the binary's own, so an
// error is a broken build, which the package's tests catch.
var built = sync.OnceValue(func() *handler {
	h, err := build()
	if err != nil {
		panic(err)
	}
	return h
})

// build makes the page, with every script and style it loads pinned by its
// digest.
func build() (*handler, error) {
	h := &handler{assets: map[string]*asset{}}
	entries, err := fs.ReadDir(assets, "assets")
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		data, err := assets.ReadFile("assets/" + e.Name())
		if err != nil {
			return nil, err
		}
		h.assets[e.Name()] = &asset{name: e.Name(), data: data, sum: sha256.Sum256(data)}
	}
	ref := func(name string) (pageRef, error) {
		a, ok := h.assets[name]
		if !ok {
			return pageRef{}, fmt.Errorf("playground: no asset %s", name)
		}
		return pageRef{Path: assetsRel + name, Integrity: "sha256-" + base64.StdEncoding.EncodeToString(a.sum[:])}, nil
	}
	var page struct{ Styles, Scripts []pageRef }
	for _, name := range []string{"graphiql.min.css", "playground.css"} {
		r, err := ref(name)
		if err != nil {
			return nil, err
		}
		page.Styles = append(page.Styles, r)
	}
	// In this order: GraphiQL's bundle expects React and ReactDOM loaded.
	for _, name := range []string{"react.production.min.js", "react-dom.production.min.js", "graphiql.min.js", "playground.js"} {
		r, err := ref(name)
		if err != nil {
			return nil, err
		}
		page.Scripts = append(page.Scripts, r)
	}
	t, err := template.New("index.html").Parse(indexHTML)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := t.Execute(&b, page); err != nil {
		return nil, err
	}
	h.page = b.Bytes()
	sum := sha256.Sum256(h.page)
	h.etag = etag(sum)
	return h, nil
}

func etag(sum [sha256.Size]byte) string {
	return `"` + base64.RawURLEncoding.EncodeToString(sum[:16]) + `"`
}

// ServeHTTP answers GET and HEAD of the page and its assets. Browsers
// revalidate each time (no-cache) and get 304 while the binary is the same.
func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hdr := w.Header()
	hdr.Set("X-Content-Type-Options", "nosniff")
	hdr.Set("Cache-Control", "no-cache")
	switch {
	case r.URL.Path == Path:
		hdr.Set("Content-Security-Policy", csp)
		hdr.Set("Content-Type", "text/html; charset=utf-8")
		hdr.Set("ETag", h.etag)
		http.ServeContent(w, r, "index.html", time.Time{}, bytes.NewReader(h.page))
	case strings.HasPrefix(r.URL.Path, AssetsPath):
		a, ok := h.assets[strings.TrimPrefix(r.URL.Path, AssetsPath)]
		if !ok {
			http.NotFound(w, r)
			return
		}
		hdr.Set("Content-Type", contentType(a.name))
		hdr.Set("ETag", etag(a.sum))
		http.ServeContent(w, r, a.name, time.Time{}, bytes.NewReader(a.data))
	default:
		http.NotFound(w, r)
	}
}

// contentType is the media type of an asset by its extension; the license
// files have none and are text.
func contentType(name string) string {
	switch path.Ext(name) {
	case ".js":
		return "text/javascript; charset=utf-8"
	case ".css":
		return "text/css; charset=utf-8"
	default:
		return "text/plain; charset=utf-8"
	}
}
