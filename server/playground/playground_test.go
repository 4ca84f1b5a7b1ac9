package playground

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func get(t *testing.T, path string, hdr ...string) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest(http.MethodGet, path, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		r.Header.Set(hdr[i], hdr[i+1])
	}
	w := httptest.NewRecorder()
	Handler().ServeHTTP(w, r)
	return w
}

func TestBuild(t *testing.T) {
	if _, err := build(); err != nil {
		t.Fatal(err)
	}
}

func TestServe(t *testing.T) {
	for _, tc := range []struct {
		path, status, contentType, body string
	}{
		{Path, "200", "text/html; charset=utf-8", `<div id="graphiql">`},
		{AssetsPath + "playground.js", "200", "text/javascript; charset=utf-8", "GraphiQL.createFetcher"},
		{AssetsPath + "graphiql.min.css", "200", "text/css; charset=utf-8", "graphiql"},
		{AssetsPath + "LICENSE-graphiql", "200", "text/plain; charset=utf-8", "MIT License"},
		{AssetsPath + "LICENSE-react", "200", "text/plain; charset=utf-8", "MIT License"},
		{AssetsPath + "THIRD-PARTY-NOTICES.txt", "200", "text/plain; charset=utf-8", "graphiql@4.1.2"},
		{AssetsPath + "nope.js", "404", "", ""},
		{AssetsPath + "../playground.go", "404", "", ""},
		{Path + "/", "404", "", ""},
	} {
		w := get(t, tc.path)
		if got := w.Result().Status; !strings.HasPrefix(got, tc.status) {
			t.Errorf("%s: %s, want %s", tc.path, got, tc.status)
			continue
		}
		if tc.status != "200" {
			continue
		}
		if ct := w.Header().Get("Content-Type"); ct != tc.contentType {
			t.Errorf("%s: Content-Type %q, want %q", tc.path, ct, tc.contentType)
		}
		if !strings.Contains(w.Body.String(), tc.body) {
			t.Errorf("%s does not hold %q", tc.path, tc.body)
		}
		if w.Header().Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s: no nosniff", tc.path)
		}
	}
}

// A browser revalidates (no-cache) and gets 304 while the binary is the
// same: the megabyte and a half of GraphiQL goes over the wire once.
func TestRevalidation(t *testing.T) {
	for _, path := range []string{Path, AssetsPath + "graphiql.min.js"} {
		w := get(t, path)
		etag := w.Header().Get("ETag")
		if etag == "" || w.Header().Get("Cache-Control") != "no-cache" {
			t.Fatalf("%s: ETag %q, Cache-Control %q", path, etag, w.Header().Get("Cache-Control"))
		}
		if w := get(t, path, "If-None-Match", etag); w.Code != http.StatusNotModified || w.Body.Len() != 0 {
			t.Errorf("%s with its ETag: %d, %d bytes; want 304", path, w.Code, w.Body.Len())
		}
		if w := get(t, path, "If-None-Match", `"other"`); w.Code != http.StatusOK {
			t.Errorf("%s with another ETag: %d", path, w.Code)
		}
	}
}
