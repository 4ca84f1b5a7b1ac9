package catalog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// SyntaxError is malformed JSON, located by line and column (1-based).
type SyntaxError struct {
	Line, Column int
	Msg          string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("line %d, column %d: %s", e.Line, e.Column, e.Msg)
}

// decodeTree reads one JSON value with numbers kept exact.
func decodeTree(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, locate(data, err, dec.InputOffset())
	}
	// Located by hand: the decoder's offsets for errors after the first value
	// are relative to its buffer, not the input.
	for i := dec.InputOffset(); i < int64(len(data)); i++ {
		b := data[i]
		if b == ' ' || b == '\t' || b == '\n' || b == '\r' {
			continue
		}
		line, col := lineCol(data, i+1)
		msg := "unexpected data after the JSON value"
		if !bytes.ContainsRune([]byte(`{["-0123456789tfn`), rune(b)) {
			msg = "invalid character " + quoteChar(b) + " looking for beginning of value"
		}
		return nil, &SyntaxError{Line: line, Column: col, Msg: msg}
	}
	return v, nil
}

// quoteChar formats a byte the way encoding/json's syntax errors do.
func quoteChar(b byte) string {
	switch b {
	case '\'':
		return `'\''`
	case '"':
		return `'"'`
	}
	q := strconv.Quote(string(rune(b)))
	return "'" + q[1:len(q)-1] + "'"
}

func locate(data []byte, err error, fallback int64) error {
	var se *json.SyntaxError
	off := fallback
	msg := err.Error()
	if errors.As(err, &se) {
		off = se.Offset
		msg = se.Error()
	} else if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		off = int64(len(data))
		msg = "unexpected end of JSON input"
		if len(bytes.TrimSpace(data)) == 0 {
			msg = "the file is empty"
		}
	}
	line, col := lineCol(data, off)
	return &SyntaxError{Line: line, Column: col, Msg: msg}
}

// lineCol converts a byte offset (the decoder reports the offset just past the
// offending byte) into a 1-based line and column.
func lineCol(data []byte, off int64) (int, int) {
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	if off > 0 {
		off--
	}
	line, col := 1, 1
	for _, b := range data[:off] {
		if b == '\n' {
			line++
			col = 1
		} else {
			col++
		}
	}
	return line, col
}

// ParseEntity validates one entity document of the given kind and decodes it.
// The returned value is *Provider, *MachineType, *Service, *Template or
// *PluginType; it is nil when the issues hold an error.
func ParseEntity(kind Kind, file string, data []byte) (any, Issues) {
	tree, err := decodeTree(data)
	if err != nil {
		return nil, Issues{{File: file, Message: err.Error()}}
	}
	return parseTree(kind, file, "", tree)
}

func parseTree(kind Kind, file, prefix string, tree any) (any, Issues) {
	c := &checker{file: file}
	c.validate(kind, tree)
	if prefix != "" {
		for i := range c.issues {
			if c.issues[i].Path == "" {
				c.issues[i].Path = prefix
			} else {
				c.issues[i].Path = join(prefix, c.issues[i].Path)
			}
		}
	}
	if c.issues.HasErrors() {
		return nil, c.issues
	}
	// Ignored keys leave the tree only for decoding; the caller keeps the
	// document whole for a lossless export.
	for _, ig := range c.ignored {
		v := ig.obj[ig.key]
		delete(ig.obj, ig.key)
		defer func() { ig.obj[ig.key] = v }()
	}
	raw, err := json.Marshal(tree)
	if err != nil {
		return nil, append(c.issues, Issue{File: file, Path: prefix, Message: err.Error()})
	}
	v := newValue(kind)
	if err := json.Unmarshal(raw, v); err != nil {
		// The checker accepts only what the types can hold; reaching this is a
		// bug, reported rather than hidden.
		return nil, append(c.issues, Issue{File: file, Path: prefix, Message: "internal: " + err.Error()})
	}
	return v, c.issues
}

func newValue(kind Kind) any {
	switch kind {
	case KindProvider:
		return &Provider{}
	case KindHardwareType, KindImageType:
		return &MachineType{}
	case KindService:
		return &Service{}
	case KindClusterTemplate, KindPartialTemplate:
		return &Template{}
	case KindProviderType, KindAutomatorType:
		return &PluginType{}
	}
	panic("catalog: unknown kind " + string(kind))
}

// entityName returns the Name of a decoded value.
func entityName(v any) string {
	switch x := v.(type) {
	case *Provider:
		return x.Name
	case *MachineType:
		return x.Name
	case *Service:
		return x.Name
	case *Template:
		return x.Name
	case *PluginType:
		return x.Name
	}
	return ""
}
