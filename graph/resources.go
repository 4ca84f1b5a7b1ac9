package graph

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"path"
	"regexp"
	"strings"

	"github.com/cooprhq/coopr/catalog"
	"github.com/cooprhq/coopr/graph/model"
	"github.com/cooprhq/coopr/server/engine"
	"github.com/cooprhq/coopr/store"
	"github.com/cooprhq/coopr/wire"
)

// Plugin resources (docs/task-protocol.md#plugin-resources).

// resourceName is what a resource may be called: it becomes a file or
// directory name on agents and managed hosts.
var resourceName = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$`)

func pluginKind(t model.PluginType) catalog.Kind { return catalog.Kind(strings.ToLower(string(t))) }

func resourceModel(r store.Resource) *model.PluginResource {
	m := &model.PluginResource{PluginType: model.PluginType(strings.ToUpper(r.PluginType)), Plugin: r.Plugin,
		ResourceType: r.ResourceType, Name: r.Name, Version: r.Version, Format: r.Format, State: model.ResourceState(strings.ToUpper(r.State())),
		Digest: r.Digest, Size: int(r.Size), CreatedAt: r.CreatedAt}
	if r.Permissions != "" {
		perm := r.Permissions
		m.Permissions = &perm
	}
	return m
}

// resourceType reads the plugin's descriptor and the resource type it
// declares.
func (r *Resolver) resourceType(ctx context.Context, p store.Principal, t model.PluginType, plugin, rtype string) (catalog.ResourceType, error) {
	e, _, err := r.Store.Entity(ctx, p.TenantName, pluginKind(t), plugin, 0)
	if errors.Is(err, store.ErrNotFound) {
		return catalog.ResourceType{}, notFound("input.plugin", "no %s %q in the catalog", pluginKind(t).Singular(), plugin)
	}
	if err != nil {
		return catalog.ResourceType{}, err
	}
	pt, ok := e.Value.(*catalog.PluginType)
	if !ok {
		return catalog.ResourceType{}, fmt.Errorf("%s %q: unexpected value %T", pluginKind(t).Singular(), plugin, e.Value)
	}
	rt, ok := pt.ResourceTypes[rtype]
	if !ok {
		names := make([]string, 0, len(pt.ResourceTypes))
		for n := range pt.ResourceTypes {
			names = append(names, n)
		}
		return catalog.ResourceType{}, invalid("input.resourceType", "%s %q declares no resource type %q (it has %v)",
			pluginKind(t).Singular(), plugin, rtype, catalog.SortedUnion(names))
	}
	return rt, nil
}

func (r *Resolver) uploadResource(ctx context.Context, in model.ResourceUploadInput) (*model.PluginResource, error) {
	p, err := admin(ctx, "uploading plugin resources")
	if err != nil {
		return nil, err
	}
	if !resourceName.MatchString(in.Name) {
		return nil, invalid("input.name", "%q is not a resource name: letters, digits, '.', '_' and '-', at most 128", in.Name)
	}
	rt, err := r.resourceType(ctx, p, in.PluginType, in.Plugin, in.ResourceType)
	if err != nil {
		return nil, err
	}
	content, err := base64.StdEncoding.DecodeString(in.Content)
	if err != nil {
		return nil, invalid("input.content", "not base64 (standard encoding): %v", err)
	}
	if rt.Format == "archive" {
		if err := checkArchive(content, in.Name); err != nil {
			return nil, invalid("input.content", "resource type %q holds archives: %v", in.ResourceType, err)
		}
	}
	key := store.ResourceKey{PluginType: string(pluginKind(in.PluginType)), Plugin: in.Plugin, ResourceType: in.ResourceType, Name: in.Name}
	res, err := r.Store.PutResource(ctx, p.TenantID, key, rt.Format, rt.Permissions, content)
	if err != nil {
		return nil, err
	}
	return resourceModel(res), nil
}

// checkArchive accepts a tar.gz whose entries are directories and regular
// files under a single top directory called name.
func checkArchive(content []byte, name string) error {
	zr, err := gzip.NewReader(bytes.NewReader(content))
	if err != nil {
		return fmt.Errorf("not gzip: %v", err)
	}
	tr := tar.NewReader(zr)
	n := 0
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("not a tar archive: %v", err)
		}
		n++
		p := strings.TrimSuffix(strings.TrimPrefix(h.Name, "./"), "/")
		if p == "" || path.IsAbs(h.Name) || path.Clean(p) != p || (p != name && !strings.HasPrefix(p, name+"/")) {
			return fmt.Errorf("entry %q is outside the single top directory %q", h.Name, name)
		}
		switch h.Typeflag {
		case tar.TypeDir:
		case tar.TypeReg:
			if p == name {
				return fmt.Errorf("the top entry %q must be a directory", h.Name)
			}
		default:
			return fmt.Errorf("entry %q: only directories and regular files are allowed", h.Name)
		}
	}
	if _, err := io.Copy(io.Discard, zr); err != nil {
		return fmt.Errorf("not gzip: %v", err)
	}
	if n == 0 {
		return errors.New("the archive is empty")
	}
	return nil
}

func versionKey(in model.ResourceVersionInput) store.ResourceKey {
	return store.ResourceKey{PluginType: string(pluginKind(in.PluginType)), Plugin: in.Plugin, ResourceType: in.ResourceType, Name: in.Name}
}

func (r *Resolver) changeResource(ctx context.Context, in model.ResourceVersionInput, what string,
	fn func(ctx context.Context, tenantID string, key store.ResourceKey, version int) (store.Resource, error)) (*model.PluginResource, error) {
	p, err := admin(ctx, what)
	if err != nil {
		return nil, err
	}
	res, err := fn(ctx, p.TenantID, versionKey(in), in.Version)
	if err != nil {
		return nil, resourceErr(err)
	}
	return resourceModel(res), nil
}

func resourceErr(err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return notFound("input.version", "%v", err)
	}
	return err
}

func (r *Resolver) deleteResource(ctx context.Context, in model.ResourceVersionInput) (bool, error) {
	p, err := admin(ctx, "deleting plugin resources")
	if err != nil {
		return false, err
	}
	if err := r.Store.DeleteResource(ctx, p.TenantID, versionKey(in), in.Version); err != nil {
		return false, resourceErr(err)
	}
	return true, nil
}

func (r *Resolver) syncResources(ctx context.Context) (int, error) {
	p, err := admin(ctx, "syncing plugin resources")
	if err != nil {
		return 0, err
	}
	return r.Store.SyncResources(ctx, p.TenantID)
}

func (r *Resolver) resources(ctx context.Context, t model.PluginType, plugin string) ([]*model.PluginResource, error) {
	p, err := admin(ctx, "listing plugin resources")
	if err != nil {
		return nil, err
	}
	rs, err := r.Store.Resources(ctx, p.TenantID, string(pluginKind(t)), plugin)
	if err != nil {
		return nil, err
	}
	out := make([]*model.PluginResource, len(rs))
	for i, x := range rs {
		out[i] = resourceModel(x)
	}
	return out, nil
}

func (r *Resolver) resourceContent(ctx context.Context, taskID, claimToken string, t model.PluginType, plugin, rtype, name string, version int) (*model.ResourceContent, error) {
	if _, err := agentCaller(ctx); err != nil {
		return nil, err
	}
	key := store.ResourceKey{PluginType: string(pluginKind(t)), Plugin: plugin, ResourceType: rtype, Name: name}
	content, digest, err := r.Store.TaskResourceContent(ctx, taskID, claimToken, key, version, engine.ErrStaleClaim)
	if err != nil {
		return nil, err
	}
	return &model.ResourceContent{Content: base64.StdEncoding.EncodeToString(content), Digest: digest}, nil
}

// payloadResources lists the resources the task's driver needs at the
// job's pinned generation and records them against the claim, which
// resourceContent then serves.
func (r *Resolver) payloadResources(ctx context.Context, a *engine.Assignment, role wire.Role, name string) ([]store.ResourceRef, error) {
	var plugins []store.PluginRef
	switch role {
	case wire.RoleVM:
		plugins = []store.PluginRef{string(catalog.KindProviderType) + "/" + name}
	case wire.RoleAutomator:
		plugins = []store.PluginRef{string(catalog.KindAutomatorType) + "/" + name}
	case wire.RoleNode:
		if a.Node != nil {
			for _, t := range a.Node.Automators {
				plugins = append(plugins, string(catalog.KindAutomatorType)+"/"+t)
			}
		}
	}
	refs, err := r.Store.GenerationResources(ctx, a.TenantID, a.ResourceGeneration, plugins)
	if err != nil || len(refs) == 0 {
		return refs, err
	}
	return refs, r.Store.SetTaskResources(ctx, a.TaskID, a.ClaimToken, refs)
}
