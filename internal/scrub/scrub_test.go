package scrub

import (
	"strings"
	"testing"
)

const key = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\nAAAAMwAAAAtzc2gtZWQyNTUxOQAAACDcoopr\n-----END OPENSSH PRIVATE KEY-----\n"

func testSet() *Set {
	return New(map[string]map[string]any{
		"ssh":      {"privateKey": key, "port": "22"},
		"vm":       {"token": "tok-0123456789", "nested": map[string]any{"list": []any{"inner-secret-value"}}},
		"provider": {"password": "hunter2!pw"},
	})
}

func TestString(t *testing.T) {
	s := testSet()
	for _, c := range []struct{ in, want string }{
		{"key line b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ here", "key line [redacted] here"},
		{"using tok-0123456789 and inner-secret-value", "using [redacted] and [redacted]"},
		{"listening on port 22", "listening on port 22"}, // short values are ordinary words
		{"the key:\n" + key, "the key:\n[redacted]"},
		{"pw=hunter2!pwhunter2!pw.", "pw=[redacted]."}, // one mask for values side by side
		{"nothing secret", "nothing secret"},
	} {
		if got := s.String(c.in); got != c.want {
			t.Errorf("String(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestText(t *testing.T) {
	s := testSet()
	for _, c := range []struct{ in, want string }{
		// A tail that begins inside a value, a message cut inside one.
		{"123456789 then more", "[redacted] then more"},
		{"output ends with tok-0123", "output ends with [redacted]"},
		{"tail ends tok", "tail ends tok"}, // 3 bytes: too short to tell from a word
		{"-----\nseparator\n-----", "-----\nseparator\n-----"},
		{"all of hunter2!pw", "all of [redacted]"},
	} {
		if got := s.Text(c.in); got != c.want {
			t.Errorf("Text(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// A value split between two chunks, at every byte, never shows whole in
// what is passed on, nor its beginning of 4 bytes or more; text around it
// is passed on whole.
func TestStreamSplitValue(t *testing.T) {
	s := testSet()
	for _, secret := range []string{"tok-0123456789", "inner-secret-value", "hunter2!pw", "AAAAMwAAAAtzc2gtZWQyNTUxOQAAACDcoopr"} {
		line := "before " + secret + " after"
		for cut := 0; cut <= len(line); cut++ {
			var c Carry
			a := s.Stream(&c, line[:cut])
			b := s.Stream(&c, line[cut:])
			out := a + b
			if strings.Contains(out, secret) {
				t.Fatalf("%q cut at %d passed on %q + %q", line, cut, a, b)
			}
			for n := 4; n < len(secret); n++ {
				if strings.Contains(out, secret[:n]) || strings.Contains(out, secret[len(secret)-n:]) {
					t.Fatalf("%q cut at %d passed on %q + %q: %d bytes of the value", line, cut, a, b, n)
				}
			}
			if !strings.HasPrefix(out, "before ") || !strings.HasSuffix(out, " after") || !strings.Contains(out, Mask) {
				t.Fatalf("%q cut at %d passed on %q + %q", line, cut, a, b)
			}
		}
	}
}

// A value cut in three pieces, anywhere, shows at most 3 bytes of its
// beginning.
func TestStreamThreePieces(t *testing.T) {
	s := testSet()
	const secret = "inner-secret-value"
	line := "<" + secret + ">"
	for i := 0; i <= len(line); i++ {
		for j := i; j <= len(line); j++ {
			var c Carry
			out := s.Stream(&c, line[:i]) + s.Stream(&c, line[i:j]) + s.Stream(&c, line[j:])
			for n := 4; n <= len(secret); n++ {
				for k := 0; k+n <= len(secret); k++ {
					if strings.Contains(out, secret[k:k+n]) && !strings.Contains(Mask, secret[k:k+n]) {
						t.Fatalf("cut at %d and %d: passed on %q, with %q of the value", i, j, out, secret[k:k+n])
					}
				}
			}
			if !strings.HasPrefix(out, "<") || !strings.HasSuffix(out, Mask+">") {
				t.Fatalf("cut at %d and %d: passed on %q", i, j, out)
			}
		}
	}
}

// A key printed line by line, one line a chunk, is hidden line by line;
// ordinary lines, even ones of dashes, pass as they are, at once.
func TestStreamLines(t *testing.T) {
	s := testSet()
	var c Carry
	var out []string
	for _, l := range strings.Split("-----\nhere it is:\n"+key+"done\n-----", "\n") {
		out = append(out, s.Stream(&c, l))
	}
	got := strings.Join(out, "\n")
	want := "-----\nhere it is:\n[redacted]\n[redacted]\n[redacted]\n[redacted]\ndone\n-----"
	if got != want {
		t.Errorf("lines passed on:\n%s\nwant:\n%s", got, want)
	}
}

func TestStreamsForgetsAttempts(t *testing.T) {
	var st Streams
	loads := 0
	load := func() (*Set, error) { loads++; return testSet(), nil }
	for _, chunk := range []string{"a tok-0123", "456789 b"} {
		if _, err := st.Chunk("t1", 1, "stdout", chunk, load); err != nil {
			t.Fatal(err)
		}
	}
	if loads != 1 {
		t.Errorf("values loaded %d times for one attempt, want once", loads)
	}
	if st.Done("t1", 1).Empty() || st.Done("t1", 1) != nil {
		t.Errorf("Done: want the attempt's values once, then nil")
	}
}
