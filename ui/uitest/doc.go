// Package uitest tests the web UI in a real browser against a real
// server: see TestBrowser and ../tests/browser.mjs.
package uitest
