package control

import (
	"encoding/json"
	"maps"
	"reflect"
	"slices"
)

// mergeConfig applies patch to cfg as a JSON merge patch (RFC 7396):
// objects merge key by key, recursively; a null removes the key; any
// other value, arrays included, replaces what was there. cfg is not
// changed.
func mergeConfig(cfg, patch map[string]any) map[string]any {
	out := maps.Clone(cfg)
	if out == nil {
		out = map[string]any{}
	}
	for k, v := range patch {
		switch v := v.(type) {
		case nil:
			delete(out, k)
		case map[string]any:
			old, _ := out[k].(map[string]any)
			out[k] = mergeConfig(old, v)
		default:
			out[k] = v
		}
	}
	return out
}

// normalJSON is v as it reads back from the database: numbers and all in
// encoding/json's types, so that comparing with a stored config compares
// values, not representations.
func normalJSON(v map[string]any) (map[string]any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, err
	}
	if out == nil {
		out = map[string]any{}
	}
	return out, nil
}

// Kinds of ConfigChange.
const (
	ConfigAdded   = "ADDED"
	ConfigRemoved = "REMOVED"
	ConfigChanged = "CHANGED"
)

// ConfigChange is one difference between two configs: the value at Path
// (keys from the top) was added, removed or changed. Objects are compared
// key by key, anything else (arrays included) as a whole.
type ConfigChange struct {
	Path     []string
	Kind     string
	Old, New any // nil when absent
}

// diffConfig lists what differs from old to new, by path in key order.
func diffConfig(old, new map[string]any) []ConfigChange {
	var out []ConfigChange
	var walk func(path []string, a, b map[string]any)
	walk = func(path []string, a, b map[string]any) {
		keys := slices.Sorted(maps.Keys(a))
		for k := range b {
			if _, ok := a[k]; !ok {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		for _, k := range keys {
			p := append(slices.Clone(path), k)
			x, inA := a[k]
			y, inB := b[k]
			xm, xObj := x.(map[string]any)
			ym, yObj := y.(map[string]any)
			switch {
			case !inB:
				out = append(out, ConfigChange{Path: p, Kind: ConfigRemoved, Old: x})
			case !inA:
				out = append(out, ConfigChange{Path: p, Kind: ConfigAdded, New: y})
			case xObj && yObj:
				walk(p, xm, ym)
			case !reflect.DeepEqual(x, y):
				out = append(out, ConfigChange{Path: p, Kind: ConfigChanged, Old: x, New: y})
			}
		}
	}
	walk(nil, old, new)
	return out
}
