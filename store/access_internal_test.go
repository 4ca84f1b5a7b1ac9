package store

import "testing"

func TestMatchAgents(t *testing.T) {
	for _, c := range []struct {
		pattern, id string
		want        bool
	}{
		{"web-1", "web-1", true},
		{"web-1", "web-10", false},
		{"web-1", "web-", false},
		{"web-*", "web-1", true},
		{"web-*", "web-", true},
		{"web-*", "db-1", false},
		{"web-*", "xweb-1", false},
		{"*", "anything.at:all", true},
		{"*-east", "web-east", true},
		{"*-east", "web-west", false},
		{"web-*-east", "web-1-east", true},
		{"web-*-east", "web-east", false},
		{"a*a", "a", false},
		{"a*a", "aa", true},
		{"*a*b*", "xaybz", true},
		{"*a*b*", "xbya", false},
	} {
		if got := MatchAgents(c.pattern, c.id); got != c.want {
			t.Errorf("MatchAgents(%q, %q) = %v, want %v", c.pattern, c.id, got, c.want)
		}
	}
}

func TestCheckAgentPattern(t *testing.T) {
	for _, c := range []struct {
		pattern string
		ok      bool
	}{{"web-1", true}, {"web-*", true}, {"*", true}, {"", false}, {"web 1", false}, {"a/b", false}, {string(make([]byte, 129)), false}} {
		if err := CheckAgentPattern(c.pattern); (err == nil) != c.ok {
			t.Errorf("CheckAgentPattern(%q) = %v, want ok %v", c.pattern, err, c.ok)
		}
	}
}
