package server_test

import (
	"crypto/sha256"
	"encoding/base64"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/cooprhq/coopr/server/servertest"
)

// The playground works with no network beyond the server: the page and
// every script and style it references come from the server itself, each
// matching the digest the page pins, and the page may run no inline or
// foreign script.
func TestPlaygroundServedOffline(t *testing.T) {
	s := servertest.Start(t)
	page, err := url.Parse(s.URL + "/playground")
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(page.String())
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("GET /playground: %s, %s", resp.Status, resp.Header.Get("Content-Type"))
	}
	csp := map[string]string{}
	for _, d := range strings.Split(resp.Header.Get("Content-Security-Policy"), ";") {
		name, value, _ := strings.Cut(strings.TrimSpace(d), " ")
		csp[name] = value
	}
	if csp["script-src"] != "'self'" || csp["default-src"] != "'none'" {
		t.Errorf("Content-Security-Policy %q: want default-src 'none' and script-src 'self' alone", resp.Header.Get("Content-Security-Policy"))
	}

	type ref struct{ tag, url, integrity string }
	var refs []ref
	doc, err := html.Parse(strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	for n := range doc.Descendants() {
		if n.Type != html.ElementNode {
			continue
		}
		attr := map[string]string{}
		for _, a := range n.Attr {
			attr[a.Key] = a.Val
		}
		for _, k := range []string{"src", "href"} {
			if v, ok := attr[k]; ok {
				refs = append(refs, ref{n.Data, v, attr["integrity"]})
			}
		}
		if n.Data == "script" && attr["src"] == "" {
			t.Errorf("an inline script: %v", n.FirstChild)
		}
	}
	kinds := map[string]int{}
	for _, r := range refs {
		u, err := page.Parse(r.url)
		if err != nil {
			t.Errorf("%s %q: %v", r.tag, r.url, err)
			continue
		}
		if u.Scheme != page.Scheme || u.Host != page.Host {
			t.Errorf("%s %q is not on the server", r.tag, r.url)
			continue
		}
		resp, err := http.Get(u.String())
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK || len(b) == 0 {
			t.Errorf("%s %s: %s, %d bytes", r.tag, u.Path, resp.Status, len(b))
			continue
		}
		sum := sha256.Sum256(b)
		if want := "sha256-" + base64.StdEncoding.EncodeToString(sum[:]); r.integrity != want {
			t.Errorf("%s %s: integrity %q, want %q", r.tag, u.Path, r.integrity, want)
		}
		ct := resp.Header.Get("Content-Type")
		switch r.tag {
		case "script":
			kinds["script"]++
			if !strings.HasPrefix(ct, "text/javascript") {
				t.Errorf("script %s served as %q", u.Path, ct)
			}
		case "link":
			kinds["style"]++
			if !strings.HasPrefix(ct, "text/css") {
				t.Errorf("style %s served as %q", u.Path, ct)
			}
		}
	}
	// React, ReactDOM, GraphiQL and the page's own script; GraphiQL's
	// styles and the page's.
	if kinds["script"] != 4 || kinds["style"] != 2 {
		t.Errorf("the page loads %d scripts and %d styles, want 4 and 2: %v", kinds["script"], kinds["style"], refs)
	}
}
