package server

import (
	"bytes"
	"compress/gzip"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
	"sync"

	"github.com/cooprhq/coopr/server/auth"
	"github.com/cooprhq/coopr/store"
	"github.com/cooprhq/coopr/ui"
)

// routeWeb adds the web UI and its sign-in endpoint. The UI answers every
// GET the other routes leave (the API, the playground, health and metrics
// have their own), so that its client-side routes load on a reload.
func (s *Server) routeWeb(mux *http.ServeMux) {
	mux.Handle("/auth/session", s.instrument("session", &auth.SignIn{Sessions: s.sessions, Store: s.store,
		Lifetime: s.cfg.SessionLifetime}))
	fsys := s.cfg.UI
	if fsys == nil {
		fsys = ui.Dist()
	}
	// "/", not "GET /": the latter would conflict with "/graphql", which
	// takes every method.
	mux.Handle("/", s.instrument("ui", newUIHandler(fsys)))
}

// sessions authenticates the API's cookie requests (see auth.Sessions).
func newSessions(st *store.Store, cfg Config) *auth.Sessions {
	return &auth.Sessions{Store: st, Idle: cfg.SessionIdleTimeout, Origins: cfg.AllowedOrigins}
}

// uiHandler serves the built UI. Vite names every asset after its content
// (assets/index-1a2b3c.js): those are cached for a year. index.html names
// the assets of the current build, so it is revalidated on every load, and
// every path that is not a file gets it (the app's own routes).
type uiHandler struct {
	files map[string]*uiFile
	// index is index.html split around the nonce placeholder.
	index [][]byte
}

type uiFile struct {
	data      []byte
	etag      string
	ctype     string
	immutable bool
	gzipOnce  sync.Once
	gz        []byte // nil: not worth compressing
}

// styleNoncePlaceholder is replaced in index.html by each response's nonce;
// the app hands it to Mantine, whose <style> elements then satisfy the
// Content-Security-Policy without 'unsafe-inline'.
const styleNoncePlaceholder = "__COOPR_STYLE_NONCE__"

func newUIHandler(fsys fs.FS) *uiHandler {
	h := &uiHandler{files: map[string]*uiFile{}}
	_ = fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasPrefix(d.Name(), ".") {
			return nil
		}
		b, err := fs.ReadFile(fsys, p)
		if err != nil {
			return nil
		}
		if p == "index.html" {
			h.index = bytes.Split(b, []byte(styleNoncePlaceholder))
			return nil
		}
		sum := sha256.Sum256(b)
		ctype := mime.TypeByExtension(path.Ext(p))
		if ctype == "" {
			ctype = http.DetectContentType(b)
		}
		h.files[p] = &uiFile{data: b, etag: `"` + hex.EncodeToString(sum[:12]) + `"`, ctype: ctype,
			immutable: strings.HasPrefix(p, "assets/")}
		return nil
	})
	return h
}

func (h *uiHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "the web UI answers GET and HEAD; the API is at /graphql", http.StatusMethodNotAllowed)
		return
	}
	w.Header().Set("X-Content-Type-Options", "nosniff")
	name := strings.TrimPrefix(path.Clean("/"+r.URL.Path), "/")
	if f, ok := h.files[name]; ok {
		f.serve(w, r)
		return
	}
	if strings.HasPrefix(name, "assets/") {
		// An asset of another build: answering with the page would run it
		// as script or style.
		http.Error(w, "no such asset: reload the page for the current build", http.StatusNotFound)
		return
	}
	h.page(w)
}

// page writes index.html, or, in a binary built without the UI, how to
// build it.
func (h *uiHandler) page(w http.ResponseWriter) {
	nonce := make([]byte, 18)
	_, _ = rand.Read(nonce)
	n := base64.StdEncoding.EncodeToString(nonce)
	hd := w.Header()
	hd.Set("Content-Type", "text/html; charset=utf-8")
	hd.Set("Cache-Control", "no-cache")
	hd.Set("Content-Security-Policy", contentSecurityPolicy(n))
	hd.Set("Referrer-Policy", "same-origin")
	hd.Set("X-Frame-Options", "DENY")
	hd.Set("Cross-Origin-Opener-Policy", "same-origin")
	if h.index == nil {
		w.WriteHeader(http.StatusOK)
		_, _ = fmt.Fprint(w, notBuiltPage)
		return
	}
	_, _ = w.Write(bytes.Join(h.index, []byte(n)))
}

// contentSecurityPolicy allows only the UI's own files: no inline or
// injected script, and inline styles only from Mantine's <style> elements,
// which carry the nonce. (React sets style attributes through the DOM,
// which the policy does not govern.)
func contentSecurityPolicy(nonce string) string {
	return strings.Join([]string{
		"default-src 'self'",
		"script-src 'self'",
		"style-src 'self' 'nonce-" + nonce + "'",
		"img-src 'self' data:",
		"font-src 'self'",
		"connect-src 'self'",
		"object-src 'none'",
		"base-uri 'none'",
		"form-action 'self'",
		"frame-ancestors 'none'",
	}, "; ")
}

const notBuiltPage = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>coopr</title></head>
<body>
<h1>coopr</h1>
<p>This coopr binary was built without its web UI. Build it with <code>make build</code>
(it needs Node.js 20.19 or later and npm), then start the server again.</p>
<p>The GraphQL API is at <a href="/graphql">/graphql</a> and its playground at <a href="/playground">/playground</a>.</p>
</body></html>
`

func (f *uiFile) serve(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	hd.Set("Content-Type", f.ctype)
	if f.immutable {
		hd.Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		hd.Set("Cache-Control", "no-cache")
	}
	body, etag := f.data, f.etag
	if gz := f.compressed(); gz != nil {
		hd.Add("Vary", "Accept-Encoding")
		if acceptsGzip(r) {
			body, etag = gz, strings.TrimSuffix(f.etag, `"`)+`-gz"`
			hd.Set("Content-Encoding", "gzip")
		}
	}
	hd.Set("ETag", etag)
	if match := r.Header.Get("If-None-Match"); match != "" && strings.Contains(match, etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	hd.Set("Content-Length", fmt.Sprint(len(body)))
	if r.Method == http.MethodHead {
		return
	}
	_, _ = w.Write(body)
}

// compressed is the gzipped file, made on first use (a server started only
// for the API never spends the time), or nil when that would not pay.
func (f *uiFile) compressed() []byte {
	f.gzipOnce.Do(func() {
		if len(f.data) < 1024 || !compressible(f.ctype) {
			return
		}
		var buf bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		_, _ = zw.Write(f.data)
		_ = zw.Close()
		if buf.Len() < len(f.data)*9/10 {
			f.gz = buf.Bytes()
		}
	})
	return f.gz
}

func compressible(ctype string) bool {
	for _, t := range []string{"text/", "application/javascript", "application/json", "image/svg+xml"} {
		if strings.HasPrefix(ctype, t) {
			return true
		}
	}
	return false
}

func acceptsGzip(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		enc, q, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.EqualFold(strings.TrimSpace(enc), "gzip") && strings.ReplaceAll(q, " ", "") != "q=0" {
			return true
		}
	}
	return false
}
