package catalog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// Entity is one stored catalog document with its decoded value.
type Entity struct {
	Kind  Kind
	Name  string
	File  string          // where it was read from, for messages
	Raw   json.RawMessage // the document as given, exported unchanged
	Value any             // *Provider, *MachineType, *Service, *Template or *PluginType
}

// Catalog is a set of entities, at most one per (kind, name).
type Catalog struct {
	entities map[Kind]map[string]*Entity
}

// New returns an empty catalog.
func New() *Catalog {
	c := &Catalog{entities: map[Kind]map[string]*Entity{}}
	for _, k := range Kinds {
		c.entities[k] = map[string]*Entity{}
	}
	return c
}

// Put adds or replaces an entity.
func (c *Catalog) Put(e *Entity) { c.entities[e.Kind][e.Name] = e }

// Get returns the entity of kind k named name.
func (c *Catalog) Get(k Kind, name string) (*Entity, bool) {
	e, ok := c.entities[k][name]
	return e, ok
}

// Names returns the sorted names of the kind's entities.
func (c *Catalog) Names(k Kind) []string { return sortedKeys(c.entities[k]) }

// Entities returns the kind's entities in name order.
func (c *Catalog) Entities(k Kind) []*Entity {
	out := make([]*Entity, 0, len(c.entities[k]))
	for _, n := range c.Names(k) {
		out = append(out, c.entities[k][n])
	}
	return out
}

// Len is the number of entities of every kind.
func (c *Catalog) Len() int {
	n := 0
	for _, m := range c.entities {
		n += len(m)
	}
	return n
}

func typed[T any](c *Catalog, k Kind) map[string]*T {
	out := make(map[string]*T, len(c.entities[k]))
	for n, e := range c.entities[k] {
		out[n] = e.Value.(*T)
	}
	return out
}

// Providers by name.
func (c *Catalog) Providers() map[string]*Provider { return typed[Provider](c, KindProvider) }

// HardwareTypes by name.
func (c *Catalog) HardwareTypes() map[string]*MachineType {
	return typed[MachineType](c, KindHardwareType)
}

// ImageTypes by name.
func (c *Catalog) ImageTypes() map[string]*MachineType { return typed[MachineType](c, KindImageType) }

// Services by name.
func (c *Catalog) Services() map[string]*Service { return typed[Service](c, KindService) }

// ClusterTemplates by name.
func (c *Catalog) ClusterTemplates() map[string]*Template {
	return typed[Template](c, KindClusterTemplate)
}

// PartialTemplates by name.
func (c *Catalog) PartialTemplates() map[string]*Template {
	return typed[Template](c, KindPartialTemplate)
}

// ProviderTypes by name.
func (c *Catalog) ProviderTypes() map[string]*PluginType {
	return typed[PluginType](c, KindProviderType)
}

// AutomatorTypes by name.
func (c *Catalog) AutomatorTypes() map[string]*PluginType {
	return typed[PluginType](c, KindAutomatorType)
}

// Merge copies every entity of o into c, replacing same-named ones.
func (c *Catalog) Merge(o *Catalog) {
	for _, k := range Kinds {
		for _, e := range o.entities[k] {
			c.Put(e)
		}
	}
}

// AddDocument parses data as one entity of kind k (or, when it is a bundle,
// as lists of entities by kind) and adds what is valid. file names the
// document in messages.
func (c *Catalog) AddDocument(k Kind, file string, data []byte) Issues {
	tree, err := decodeTree(data)
	if err != nil {
		return Issues{{File: file, Message: err.Error()}}
	}
	if obj, ok := tree.(map[string]any); ok && isBundle(obj) {
		return c.addBundle(file, obj)
	}
	if k == "" {
		return Issues{{File: file, Message: "cannot tell the entity kind: put the file in a directory named after its kind (providers/, services/, clustertemplates/, ...) or use a bundle document {\"services\": [...], ...}"}}
	}
	return c.addTree(k, file, "", tree)
}

func isBundle(obj map[string]any) bool {
	if _, named := obj["name"]; named {
		return false
	}
	for key := range obj {
		if _, ok := ParseKind(key); ok {
			return true
		}
	}
	return false
}

func (c *Catalog) addBundle(file string, obj map[string]any) Issues {
	var issues Issues
	for _, key := range sortedKeys(obj) {
		k, ok := ParseKind(key)
		if !ok {
			issues = append(issues, Issue{File: file, Path: key, Message: "unknown field, ignored", Severity: SeverityWarning})
			continue
		}
		if obj[key] == nil {
			continue
		}
		list, ok := obj[key].([]any)
		if !ok {
			issues = append(issues, Issue{File: file, Path: key, Message: "must be an array of " + k.Singular() + " objects, not " + typeName(obj[key])})
			continue
		}
		for i, t := range list {
			issues = append(issues, c.addTree(k, file, index(key, i), t)...)
		}
	}
	return issues
}

func (c *Catalog) addTree(k Kind, file, prefix string, tree any) Issues {
	v, issues := parseTree(k, file, prefix, tree)
	if v == nil {
		return issues
	}
	raw, _ := json.Marshal(tree)
	name := entityName(v)
	if prev, dup := c.entities[k][name]; dup {
		return append(issues, Issue{File: file, Path: join(prefix, "name"),
			Message: fmt.Sprintf("%s %q is also defined in %s", k.Singular(), name, prev.File)})
	}
	if prefix == "" && strings.HasSuffix(file, ".json") && path.Base(file) != name+".json" {
		issues = append(issues, Issue{File: file, Path: "name", Severity: SeverityWarning,
			Message: fmt.Sprintf("name %q differs from the file name; export will write %s.json", name, name)})
	}
	c.Put(&Entity{Kind: k, Name: name, File: file, Raw: raw, Value: v})
	return issues
}

// Load reads a catalog from a directory in Coopr's layout (every directory
// named after a kind, at any depth, contributes its *.json files) or from a
// single file. It returns every issue found, including cross-reference checks;
// the catalog is only meaningful when the issues hold no error.
func Load(fsys fs.FS, root string) (*Catalog, Issues, error) {
	c := New()
	info, err := fs.Stat(fsys, root)
	if err != nil {
		return nil, nil, err
	}
	var issues Issues
	if !info.IsDir() {
		data, err := fs.ReadFile(fsys, root)
		if err != nil {
			return nil, nil, err
		}
		k, _ := ParseKind(path.Base(path.Dir(root)))
		issues = c.AddDocument(k, displayPath(root, path.Dir(path.Dir(root))), data)
	} else {
		err = fs.WalkDir(fsys, root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() || !strings.HasSuffix(p, ".json") {
				return nil
			}
			k, ok := ParseKind(path.Base(path.Dir(p)))
			if !ok {
				return nil
			}
			data, err := fs.ReadFile(fsys, p)
			if err != nil {
				return err
			}
			issues = append(issues, c.AddDocument(k, displayPath(p, root), data)...)
			return nil
		})
		if err != nil {
			return nil, nil, err
		}
		if c.Len() == 0 && !issues.HasErrors() {
			issues = append(issues, Issue{File: root, Message: "no catalog files found: expected *.json files in directories named " + kindList()})
		}
	}
	issues = append(issues, c.Check()...)
	return c, issues, nil
}

func kindList() string {
	names := make([]string, len(Kinds))
	for i, k := range Kinds {
		names[i] = string(k) + "/"
	}
	return strings.Join(names, ", ")
}

func displayPath(p, root string) string {
	if rel, err := filepath.Rel(root, p); err == nil && !strings.HasPrefix(rel, "..") {
		return filepath.ToSlash(rel)
	}
	return p
}

// LoadPath is Load on the operating system's file system.
func LoadPath(p string) (*Catalog, Issues, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return nil, nil, err
	}
	// Load works in an fs.FS rooted at /, whose errors would name the path
	// without its leading slash: say what the user gave.
	if _, err := os.Stat(abs); err != nil {
		return nil, nil, fmt.Errorf("catalog %s: %w", p, errors.Unwrap(err))
	}
	return Load(os.DirFS("/"), strings.TrimPrefix(filepath.ToSlash(abs), "/"))
}

// Export writes the catalog in Coopr's layout under dir: one directory per
// non-empty kind, one indented <name>.json file per entity.
func (c *Catalog) Export(dir string) error {
	for _, k := range Kinds {
		ents := c.Entities(k)
		if len(ents) == 0 {
			continue
		}
		kd := filepath.Join(dir, string(k))
		if err := os.MkdirAll(kd, 0o755); err != nil {
			return err
		}
		for _, e := range ents {
			var buf bytes.Buffer
			if err := json.Indent(&buf, e.Raw, "", "  "); err != nil {
				return fmt.Errorf("%s %s: %w", k.Singular(), e.Name, err)
			}
			buf.WriteByte('\n')
			if err := os.WriteFile(filepath.Join(kd, e.Name+".json"), buf.Bytes(), 0o644); err != nil {
				return err
			}
		}
	}
	return nil
}

// Bundle returns the catalog as one document {"providers": [...], ...} with
// every kind present (empty lists included), entities in name order.
func (c *Catalog) Bundle() ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteString("{")
	for i, k := range Kinds {
		if i > 0 {
			buf.WriteString(",")
		}
		fmt.Fprintf(&buf, "%q:[", k)
		for j, e := range c.Entities(k) {
			if j > 0 {
				buf.WriteString(",")
			}
			buf.Write(e.Raw)
		}
		buf.WriteString("]")
	}
	buf.WriteString("}")
	var out bytes.Buffer
	if err := json.Indent(&out, buf.Bytes(), "", "  "); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// sortIssues orders issues by file, then path, errors before warnings.
func sortIssues(is Issues) {
	sort.SliceStable(is, func(i, j int) bool {
		if is[i].File != is[j].File {
			return is[i].File < is[j].File
		}
		return is[i].Path < is[j].Path
	})
}
