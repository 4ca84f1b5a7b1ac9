package catalog

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/cooprhq/coopr/macro"
)

// checker walks a decoded JSON tree (maps, slices, json.Number, strings,
// bools, nil) and records every problem with its JSON path.
type checker struct {
	file   string
	issues Issues
	// ignored lists the unknown keys warned about. They are kept out of
	// decoding: encoding/json matches keys case-insensitively, so an ignored
	// "MaxAttempts" would otherwise fill MaxAttempts unvalidated.
	ignored []ignoredKey
}

type ignoredKey struct {
	obj map[string]any
	key string
}

func (c *checker) errf(path, format string, a ...any) {
	c.issues = append(c.issues, Issue{File: c.file, Path: path, Message: fmt.Sprintf(format, a...)})
}

func (c *checker) warnf(path, format string, a ...any) {
	c.issues = append(c.issues, Issue{File: c.file, Path: path, Message: fmt.Sprintf(format, a...), Severity: SeverityWarning})
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func index(path string, i int) string { return path + "[" + strconv.Itoa(i) + "]" }

func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "a boolean"
	}
	return fmt.Sprintf("%T", v)
}

// fields checks an object: each known key present and non-null is handed to
// its function; unknown keys are warnings (docs/concepts.md#conventions).
func (c *checker) fields(path string, v any, known map[string]func(path string, v any)) (map[string]any, bool) {
	obj, ok := v.(map[string]any)
	if !ok {
		c.errf(path, "must be an object, not %s", typeName(v))
		return nil, false
	}
	for _, k := range sortedKeys(obj) {
		fn, ok := known[k]
		if !ok {
			c.warnf(join(path, k), "unknown field, ignored")
			c.ignored = append(c.ignored, ignoredKey{obj, k})
			continue
		}
		if obj[k] == nil || fn == nil {
			continue
		}
		fn(join(path, k), obj[k])
	}
	return obj, true
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func (c *checker) str(path string, v any) (string, bool) {
	s, ok := v.(string)
	if !ok {
		c.errf(path, "must be a string, not %s", typeName(v))
	}
	return s, ok
}

func (c *checker) anyStr(path string, v any) { c.str(path, v) }

func (c *checker) boolean(path string, v any) {
	if _, ok := v.(bool); !ok {
		c.errf(path, "must be true or false, not %s", typeName(v))
	}
}

func (c *checker) integer(path string, v any, min int64) (int64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		c.errf(path, "must be an integer, not %s", typeName(v))
		return 0, false
	}
	i, err := strconv.ParseInt(string(n), 10, 64)
	if err != nil {
		c.errf(path, "must be an integer, not %s", n)
		return 0, false
	}
	if i < min {
		c.errf(path, "must be >= %d (got %d)", min, i)
		return i, false
	}
	return i, true
}

var nameRE = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,255}$`)

// ValidName reports whether s is a valid entity name (docs/concepts.md#conventions).
func ValidName(s string) bool { return nameRE.MatchString(s) }

const nameRule = "must be 1-255 characters of A-Z a-z 0-9 _ . -"

func (c *checker) name(path string, v any) (string, bool) {
	s, ok := c.str(path, v)
	if ok && !ValidName(s) {
		c.errf(path, "%q %s", s, nameRule)
		return s, false
	}
	return s, ok
}

func (c *checker) anyName(path string, v any) { c.name(path, v) }

func (c *checker) list(path string, v any, each func(path string, v any)) []any {
	l, ok := v.([]any)
	if !ok {
		c.errf(path, "must be an array, not %s", typeName(v))
		return nil
	}
	for i, e := range l {
		each(index(path, i), e)
	}
	return l
}

func (c *checker) nameList(path string, v any) { c.list(path, v, c.anyName) }

func (c *checker) stringMap(path string, v any) {
	obj, ok := v.(map[string]any)
	if !ok {
		c.errf(path, "must be an object of strings, not %s", typeName(v))
		return
	}
	for _, k := range sortedKeys(obj) {
		c.str(join(path, k), obj[k])
	}
}

func (c *checker) duration(path string, v any) (Duration, bool) {
	switch x := v.(type) {
	case json.Number:
		n, ok := c.integer(path, x, 0)
		return Duration(n), ok
	case string:
		d, err := ParseDuration(x)
		if err != nil {
			c.errf(path, "%q is not a duration: %v", x, err)
			return 0, false
		}
		return d, true
	}
	c.errf(path, "must be milliseconds or a duration string such as \"90m\", not %s", typeName(v))
	return 0, false
}

// macros checks macro syntax in every string leaf under v.
func (c *checker) macros(path string, v any) {
	switch x := v.(type) {
	case string:
		if err := macro.Check(x); err != nil {
			c.errf(path, "%v", err)
		}
	case map[string]any:
		for _, k := range sortedKeys(x) {
			c.macros(join(path, k), x[k])
		}
	case []any:
		for i, e := range x {
			c.macros(index(path, i), e)
		}
	}
}

var dnsLabelRE = regexp.MustCompile(`^[A-Za-z0-9-]{1,63}$`)

// CheckDNSSuffix validates a dnsSuffix (docs/catalog.md#dns-suffix); a leading
// dot is allowed.
func CheckDNSSuffix(s string) error {
	s = strings.TrimPrefix(s, ".")
	if len(s) > 191 {
		return fmt.Errorf("must be at most 191 characters (got %d)", len(s))
	}
	for _, l := range strings.Split(s, ".") {
		if !dnsLabelRE.MatchString(l) || strings.HasSuffix(l, "-") {
			return fmt.Errorf("label %q must be 1-63 characters of A-Z a-z 0-9 - and not end in -", l)
		}
	}
	return nil
}
