package server_test

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/cooprhq/coopr/server/servertest"
)

// builtUI is what `vite build` writes, in small.
var builtUI = fstest.MapFS{
	"index.html": {Data: []byte(`<!doctype html><html><head>` +
		`<meta name="coopr-style-nonce" content="__COOPR_STYLE_NONCE__">` +
		`<script type="module" crossorigin src="/assets/index-abc123.js"></script></head>` +
		`<body><div id="root"></div></body></html>`)},
	"assets/index-abc123.js": {Data: []byte(strings.Repeat("console.log('coopr');\n", 200))},
	"assets/logo-def456.svg": {Data: []byte(`<svg xmlns="http://www.w3.org/2000/svg"/>`)},
	"favicon.svg":            {Data: []byte(`<svg xmlns="http://www.w3.org/2000/svg"/>`)},
	".gitkeep":               {Data: nil},
}

func fetch(t *testing.T, url string, header map[string]string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	// Transport, not Client: no transparent gzip, no redirects.
	resp, err := (&http.Transport{DisableCompression: true}).RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

var nonceRE = regexp.MustCompile(`<meta name="coopr-style-nonce" content="([A-Za-z0-9+/=]+)">`)

func TestUIServing(t *testing.T) {
	cfg := servertest.Config(t)
	cfg.UI = builtUI
	s := servertest.StartWith(t, cfg)

	var nonces []string
	// The app's own routes all get index.html: a reload of any of them
	// loads the app.
	for _, path := range []string{"/", "/clusters", "/clusters/2f0c0e7e-8a55-4b43-9d3e-1c1b2a1a0b0c", "/admin/catalog/hardwaretypes/large.v2", "/index.html"} {
		resp, body := fetch(t, s.URL+path, nil)
		h := resp.Header
		if resp.StatusCode != http.StatusOK || !bytes.Contains(body, []byte(`<div id="root">`)) {
			t.Errorf("GET %s = %d %.60q, want index.html", path, resp.StatusCode, body)
			continue
		}
		if h.Get("Cache-Control") != "no-cache" || h.Get("Content-Type") != "text/html; charset=utf-8" {
			t.Errorf("GET %s: Cache-Control %q, Content-Type %q; want no-cache, text/html", path, h.Get("Cache-Control"), h.Get("Content-Type"))
		}
		m := nonceRE.FindSubmatch(body)
		if m == nil {
			t.Errorf("GET %s: the nonce placeholder was not replaced: %s", path, body)
			continue
		}
		nonces = append(nonces, string(m[1]))
		csp := h.Get("Content-Security-Policy")
		directives := map[string]string{}
		for _, d := range strings.Split(csp, ";") {
			name, value, _ := strings.Cut(strings.TrimSpace(d), " ")
			directives[name] = value
		}
		if directives["script-src"] != "'self'" || strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "unsafe-eval") {
			t.Errorf("GET %s: CSP %q: want script-src 'self' and nothing unsafe", path, csp)
		}
		if directives["style-src"] != "'self' 'nonce-"+string(m[1])+"'" {
			t.Errorf("GET %s: CSP style-src %q, want 'self' and the page's nonce %s", path, directives["style-src"], m[1])
		}
		if directives["frame-ancestors"] != "'none'" || directives["object-src"] != "'none'" || directives["default-src"] != "'self'" {
			t.Errorf("GET %s: CSP %q: want default-src 'self', frame-ancestors and object-src 'none'", path, csp)
		}
		for k, want := range map[string]string{"X-Content-Type-Options": "nosniff", "Referrer-Policy": "same-origin", "X-Frame-Options": "DENY"} {
			if h.Get(k) != want {
				t.Errorf("GET %s: %s %q, want %q", path, k, h.Get(k), want)
			}
		}
	}
	if len(nonces) > 1 && nonces[0] == nonces[1] {
		t.Errorf("two pages got the same nonce %s", nonces[0])
	}

	// Hashed assets are cached for good, compressed when asked, and
	// revalidate by ETag.
	resp, body := fetch(t, s.URL+"/assets/index-abc123.js", nil)
	if resp.StatusCode != http.StatusOK || string(body) != string(builtUI["assets/index-abc123.js"].Data) ||
		resp.Header.Get("Cache-Control") != "public, max-age=31536000, immutable" ||
		!strings.HasPrefix(resp.Header.Get("Content-Type"), "text/javascript") || resp.Header.Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("GET the script: %d %v", resp.StatusCode, resp.Header)
	}
	resp, body = fetch(t, s.URL+"/assets/index-abc123.js", map[string]string{"Accept-Encoding": "gzip, br"})
	if resp.Header.Get("Content-Encoding") != "gzip" || len(body) >= len(builtUI["assets/index-abc123.js"].Data)/4 {
		t.Errorf("GET the script accepting gzip: Content-Encoding %q, %d bytes", resp.Header.Get("Content-Encoding"), len(body))
	} else if zr, err := gzip.NewReader(bytes.NewReader(body)); err != nil {
		t.Error(err)
	} else if plain, _ := io.ReadAll(zr); string(plain) != string(builtUI["assets/index-abc123.js"].Data) {
		t.Errorf("the gzipped script does not unzip to the script")
	}
	etag := resp.Header.Get("ETag")
	if resp, _ := fetch(t, s.URL+"/assets/index-abc123.js", map[string]string{"Accept-Encoding": "gzip", "If-None-Match": etag}); etag == "" || resp.StatusCode != http.StatusNotModified {
		t.Errorf("GET the script with If-None-Match %s: %d, want 304", etag, resp.StatusCode)
	}
	// Files the build does not hash are revalidated.
	if resp, _ := fetch(t, s.URL+"/favicon.svg", nil); resp.StatusCode != http.StatusOK || resp.Header.Get("Cache-Control") != "no-cache" ||
		resp.Header.Get("Content-Type") != "image/svg+xml" {
		t.Errorf("GET /favicon.svg: %d %v", resp.StatusCode, resp.Header)
	}
	// An asset of another build is not answered with the page.
	if resp, _ := fetch(t, s.URL+"/assets/index-old999.js", nil); resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET a missing asset: %d, want 404", resp.StatusCode)
	}
	if resp, _ := fetch(t, s.URL+"/.gitkeep", nil); resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/html; charset=utf-8" {
		t.Errorf("GET /.gitkeep: %d %s, want the page (dot files are not served)", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	if code, _ := postEmpty(t, s.URL+"/clusters"); code != http.StatusMethodNotAllowed {
		t.Errorf("POST /clusters: %d, want 405", code)
	}

	// The other routes are untouched.
	for _, tt := range []struct{ path, want string }{
		{"/playground", `<div id="graphiql">`},
		{"/healthz", "ok"},
		{"/readyz", "ready"},
		{"/metrics", "coopr_http_requests_total"},
	} {
		if code, body := get(t, s.URL+tt.path); code != http.StatusOK || !strings.Contains(body, tt.want) {
			t.Errorf("GET %s = %d %.80q, want %q", tt.path, code, body, tt.want)
		}
	}
	// The API answers (here: without a token, refused as the API does).
	if code, body := get(t, s.URL+"/graphql?query=%7B__typename%7D"); code != http.StatusUnauthorized || !strings.Contains(body, "UNAUTHENTICATED") {
		t.Errorf("GET /graphql without a token = %d %.80q, want the API's 401", code, body)
	}
	if code, body := postEmpty(t, s.URL+"/graphql"); code == http.StatusMethodNotAllowed || !strings.Contains(body, "errors") {
		t.Errorf("POST /graphql without a body = %d %.80q, want the API's error", code, body)
	}
}

func postEmpty(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Post(url, "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestUINotBuilt(t *testing.T) {
	cfg := servertest.Config(t)
	cfg.UI = fstest.MapFS{".gitkeep": {}}
	s := servertest.StartWith(t, cfg)
	for _, path := range []string{"/", "/clusters"} {
		resp, body := fetch(t, s.URL+path, nil)
		if resp.StatusCode != http.StatusOK || !bytes.Contains(body, []byte("make build")) ||
			!strings.Contains(resp.Header.Get("Content-Security-Policy"), "script-src 'self'") {
			t.Errorf("GET %s without a built UI = %d %q, want how to build it", path, resp.StatusCode, body)
		}
	}
}
