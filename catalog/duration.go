package catalog

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// Duration is a length of time in milliseconds; 0 means unlimited. In JSON it
// is an integer number of milliseconds or a string "<int><s|m|h|d>".
type Duration int64

var durationUnits = map[byte]int64{'s': 1000, 'm': 60 * 1000, 'h': 3600 * 1000, 'd': 24 * 3600 * 1000}

// ParseDuration reads the string form: "90m", "2h", or plain milliseconds.
func ParseDuration(s string) (Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, fmt.Errorf("empty duration")
	}
	mult := int64(1)
	if u, ok := durationUnits[s[len(s)-1]]; ok {
		mult = u
		s = s[:len(s)-1]
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("want a non-negative integer of milliseconds or <int><s|m|h|d>")
	}
	if n > (1<<62)/mult {
		return 0, fmt.Errorf("duration too large")
	}
	return Duration(n * mult), nil
}

// UnmarshalJSON accepts both forms.
func (d *Duration) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*d = 0
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		v, err := ParseDuration(s)
		if err != nil {
			return err
		}
		*d = v
		return nil
	}
	var n int64
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("duration: %w", err)
	}
	if n < 0 {
		return fmt.Errorf("duration must not be negative")
	}
	*d = Duration(n)
	return nil
}
