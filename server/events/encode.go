package events

import (
	"strconv"
	"time"
	"unicode/utf8"
)

// appendEvents appends a JSON array of the first events of evs, as
// json.Marshal writes it, and says how many it took: all of them, or as
// many as keep the array within limit bytes, and at least one. It writes by
// hand because the reflection of encoding/json was a quarter of a relay
// round's publishing (TestAppendEventsAsMarshal checks they agree).
func appendEvents(b []byte, evs []Event, limit int) ([]byte, int) {
	start := len(b)
	b = append(b, '[')
	n := 0
	for n < len(evs) {
		end := len(b)
		if n > 0 {
			b = append(b, ',')
		}
		b = appendEvent(b, &evs[n])
		if n > 0 && len(b)+1-start > limit {
			b = b[:end]
			break
		}
		n++
	}
	return append(b, ']'), n
}

func appendEvent(b []byte, ev *Event) []byte {
	b = append(b, `{"seq":`...)
	b = strconv.AppendInt(b, ev.Seq, 10)
	b = append(b, `,"tenant":`...)
	b = appendString(b, ev.Tenant)
	if ev.Cluster != "" {
		b = append(b, `,"cluster":`...)
		b = appendString(b, ev.Cluster)
	}
	if ev.Job != "" {
		b = append(b, `,"job":`...)
		b = appendString(b, ev.Job)
	}
	if ev.Task != "" {
		b = append(b, `,"task":`...)
		b = appendString(b, ev.Task)
	}
	b = append(b, `,"kind":`...)
	b = appendString(b, ev.Kind)
	b = append(b, `,"state":`...)
	b = appendString(b, ev.State)
	if ev.Attempt != 0 {
		b = append(b, `,"attempt":`...)
		b = strconv.AppendInt(b, int64(ev.Attempt), 10)
	}
	if ev.Message != "" {
		b = append(b, `,"message":`...)
		b = appendString(b, ev.Message)
	}
	b = append(b, `,"at":"`...)
	b = ev.At.AppendFormat(b, time.RFC3339Nano)
	b = append(b, '"')
	if ev.Txid != 0 {
		b = append(b, `,"txid":`...)
		b = strconv.AppendUint(b, ev.Txid, 10)
	}
	return append(b, '}')
}

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string with encoding/json's escapes:
// <, > and & as \u003c and so on, invalid UTF-8 as \ufffd, U+2028 and
// U+2029 escaped.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
