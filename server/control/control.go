// Package control is the control plane's cluster operations: it checks a
// request against the caller's rights, the catalog and the quotas, solves
// and plans it, and hands the plan to the engine in the transaction that
// records it.
package control

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/cooprhq/coopr/audit"
	"github.com/cooprhq/coopr/catalog"
	"github.com/cooprhq/coopr/drivers"
	"github.com/cooprhq/coopr/internal/errkind"
	"github.com/cooprhq/coopr/macro"
	"github.com/cooprhq/coopr/planner"
	"github.com/cooprhq/coopr/server/credentials"
	"github.com/cooprhq/coopr/server/engine"
	"github.com/cooprhq/coopr/solver"
	"github.com/cooprhq/coopr/store"
	"github.com/cooprhq/coopr/wire"
)

// DefaultMaxClusterSize caps numMachines (docs/operations.md#create-checks).
const DefaultMaxClusterSize = 10000

// Errors callers classify with errors.Is / errors.As.
var (
	ErrNotFound = errkind.ErrNotFound
	// ErrConflict is a cluster whose state (or plan) does not allow the
	// request: errkind.ErrState, worded as the CLI expects.
	ErrConflict = errkind.Labeled(errkind.ErrState, "conflict")
	ErrQuota    = errors.New("quota exceeded")
)

// InputError is a bad request field.
type InputError struct {
	Field, Message string
}

func (e *InputError) Error() string { return e.Field + ": " + e.Message }

func invalid(field, format string, a ...any) error {
	return &InputError{Field: field, Message: fmt.Sprintf(format, a...)}
}

// Service runs cluster operations.
type Service struct {
	store          *store.Store
	db             *sqlx.DB
	engine         *engine.Engine
	creds          *credentials.Store
	MaxClusterSize int
	// Capacity holds the capacity rules of vm drivers by provider type
	// (drivers/builtin.Capacities): creates and scale-outs that do not fit
	// are refused. Providers of other types are not checked.
	Capacity map[string]drivers.NetworkCapacityFunc

	claimContexts contextCache
}

// New returns the control plane over a migrated store, an engine and the
// credential store. The store gets the credential key too: it seals the
// providers' sensitive admin values (docs/catalog.md#sensitive-admin-values).
func New(st *store.Store, eng *engine.Engine, creds *credentials.Store) *Service {
	if creds != nil {
		st.SetSealer(creds)
	}
	return &Service{store: st, db: st.DB(), engine: eng, creds: creds, MaxClusterSize: DefaultMaxClusterSize}
}

// Credential namespaces of a cluster's provider values: the user's
// sensitive providerFields (docs/operations.md#provider-fields), and the
// provider's sensitive admin values copied at create
// (docs/catalog.md#sensitive-admin-values), so the cluster keeps them
// whatever later happens to the provider.
const (
	nsProviderFields = "provider"
	nsProviderAdmin  = "provider-admin"
)

// ClaimContext is what a claimed task's payload adds from the control
// plane: the cluster's provider with its accepted and sensitive fields,
// and the driver secrets by namespace. Only the claim path may call it.
//
// It is kept per cluster, under a key (the versions of the cluster's row
// and of each of its credential rows, read by the claim statement), so
// that a claim reads and decrypts them only when one changed: an agent claims a round
// trip or more per task. Callers must not change what it returns.
// key is the cluster's engine.ContextKey as the claim read it; "" reads
// it here.
func (s *Service) ClaimContext(ctx context.Context, clusterID, key string) (wire.Provider, map[string]map[string]any, error) {
	if key == "" {
		err := s.db.GetContext(ctx, &key, `SELECT `+engine.ContextKey+` FROM clusters cl WHERE cl.id = $1`, clusterID)
		if err != nil {
			return wire.Provider{}, nil, err
		}
	}
	if c, ok := s.claimContexts.get(clusterID, key); ok {
		return c.provider, c.secrets, nil
	}
	provider, secrets, err := s.claimContext(ctx, clusterID)
	if err != nil {
		return provider, secrets, err
	}
	s.claimContexts.put(clusterID, claimContext{key: key, provider: provider, secrets: secrets})
	return provider, secrets, nil
}

// claimContext is a cluster's ClaimContext as kept.
type claimContext struct {
	key      string
	provider wire.Provider
	secrets  map[string]map[string]any
	used     time.Time
}

const (
	maxClaimContexts = 1000
	// claimContextTTL is how long a context no claim has used is kept. It
	// holds decrypted secrets: a cluster deleted, or idle, does not leave
	// them in the server's memory for long, and a cluster at work claims
	// far more often.
	claimContextTTL = 10 * time.Minute
)

// contextCache keeps claim contexts by cluster id.
type contextCache struct {
	mu  sync.Mutex
	m   map[string]claimContext
	now func() time.Time // time.Now; tests move it
}

func (cc *contextCache) clock() time.Time {
	if cc.now != nil {
		return cc.now()
	}
	return time.Now()
}

// get returns the cluster's context kept under key, unless it has gone
// unused for claimContextTTL.
func (cc *contextCache) get(cluster, key string) (claimContext, bool) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	c, ok := cc.m[cluster]
	now := cc.clock()
	if !ok || c.key != key || now.Sub(c.used) > claimContextTTL {
		return claimContext{}, false
	}
	c.used = now
	cc.m[cluster] = c
	return c, true
}

// put keeps c as the cluster's context, first forgetting those unused for
// claimContextTTL (and every one, rather than grow without bound, when
// that leaves maxClaimContexts).
func (cc *contextCache) put(cluster string, c claimContext) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	now := cc.clock()
	c.used = now
	maps.DeleteFunc(cc.m, func(_ string, k claimContext) bool { return now.Sub(k.used) > claimContextTTL })
	if cc.m == nil || len(cc.m) >= maxClaimContexts {
		cc.m = map[string]claimContext{}
	}
	cc.m[cluster] = c
}

func (s *Service) claimContext(ctx context.Context, clusterID string) (wire.Provider, map[string]map[string]any, error) {
	var provider wire.Provider
	var raw []byte
	if err := s.db.GetContext(ctx, &raw, `SELECT snapshot FROM clusters WHERE id = $1`, clusterID); err != nil {
		return provider, nil, err
	}
	var snap snapshot
	if err := json.Unmarshal(raw, &snap); err != nil {
		return provider, nil, err
	}
	secrets, err := s.creds.Get(ctx, s.db, clusterID)
	if err != nil {
		return provider, nil, err
	}
	if p := snap.Provider; p != nil {
		prov := maps.Clone(p.Provisioner)
		if prov == nil {
			prov = map[string]any{}
		}
		// The provider's sensitive admin values replace their placeholders;
		// the user's sensitive fields take precedence over both
		// (docs/operations.md#provider-fields). A placeholder with no stored
		// value is left out, never handed on.
		for k, v := range secrets[nsProviderAdmin] {
			if x, ok := prov[k]; !ok || x == store.Redacted {
				prov[k] = v
			}
		}
		maps.Copy(prov, secrets[nsProviderFields])
		maps.DeleteFunc(prov, func(_ string, v any) bool { return v == store.Redacted })
		delete(secrets, nsProviderFields)
		delete(secrets, nsProviderAdmin)
		provider = wire.Provider{Name: p.Name, ProviderType: p.ProviderType, Provisioner: prov}
		if p.Network != nil {
			provider.Network = map[string]any{"type": p.Network.Type, "fields": p.Network.Fields}
		}
	}
	return provider, secrets, nil
}

// CreateRequest asks for a cluster (docs/operations.md#create-request).
type CreateRequest struct {
	Name, Template, Description       string
	Size                              int
	Provider, HardwareType, ImageType string
	Services                          []string
	Config                            map[string]any // replaces the template's default config; nil: that config
	MergeConfig                       bool           // Config is merged into the template's default config instead
	DNSSuffix                         string
	InitialLease                      string // "" or "-1": the template's initial lease
	ExpectedPlanHash                  string // the preview's; "" skips the check
	ProviderFields                    map[string]any
}

// Preview is what a create would do: the layout and the plan. Node ids in
// the plan are node numbers (the cluster has no id yet), so the plan hash
// of a preview equals that of the create it announces.
type Preview struct {
	Template, Provider string
	Services           []string
	Nodes              []solver.Node
	Plan               *planner.Plan
	PlanHash           string
	Warnings           []string
	Capacity           *CapacityUse // nil when the provider's driver declares none
	Quota              QuotaUse
	// Config is the config the cluster will have; ConfigChanges how it
	// differs from the template's default config.
	Config        map[string]any
	ConfigChanges []ConfigChange
}

// QuotaUse is the tenant's quotas (docs/operations.md#quotas), what its
// clusters not TERMINATED hold of them, and what a request adds.
type QuotaUse struct {
	MaxClusters, MaxNodes *int // nil: unlimited
	Clusters, Nodes       int
	// What the request adds: 1 or 0 clusters, its nodes.
	AddClusters, AddNodes int
}

// prepared is a checked and solved create.
type prepared struct {
	req         CreateRequest
	tmpl        *catalog.Template
	tmplVersion int // the named template's own version
	provider    *catalog.Provider
	services    map[string]*catalog.Service
	config      map[string]any
	lease       time.Duration // 0: forever
	suffix      string
	sol         *solver.Solution
	plan        *planner.Plan // canonical: node ids are node numbers
	hash        string
	warnings    []string
	fields      providerFields
	admin       map[string]any // the provider's sensitive admin values
	capacity    *CapacityUse   // nil when the provider's driver declares none
	quota       QuotaUse
}

func checkName(name string) error {
	n := utf8.RuneCountInString(name)
	if n < 1 || n > 255 {
		return invalid("name", "must be 1–255 characters (got %d)", n)
	}
	for _, r := range name {
		if !unicode.IsPrint(r) {
			return invalid("name", "must be printable characters only (found %U)", r)
		}
	}
	return nil
}

func (s *Service) prepare(ctx context.Context, p store.Principal, req CreateRequest, clusterID string) (*prepared, error) {
	if err := checkName(req.Name); err != nil {
		return nil, err
	}
	if req.Size < 1 {
		return nil, invalid("numMachines", "must be at least 1 (got %d)", req.Size)
	}
	if req.Size > s.MaxClusterSize {
		return nil, fmt.Errorf("%w: numMachines %d is over this server's cap of %d nodes per cluster", ErrQuota, req.Size, s.MaxClusterSize)
	}
	c, err := s.store.ExportCatalog(ctx, p.TenantName)
	if err != nil {
		return nil, err
	}
	if c.ClusterTemplates()[req.Template] == nil {
		names := slices.Sorted(maps.Keys(c.ClusterTemplates()))
		if len(names) == 0 {
			return nil, fmt.Errorf("cluster template %q: %w (this tenant's catalog has no templates: import one)", req.Template, ErrNotFound)
		}
		return nil, fmt.Errorf("cluster template %q: %w (templates: %s)", req.Template, ErrNotFound, strings.Join(names, ", "))
	}
	tmpl, err := catalog.Merge(req.Template, c.ClusterTemplates(), c.PartialTemplates())
	if err != nil {
		return nil, invalid("clusterTemplate", "%v", err)
	}
	out := &prepared{req: req, tmpl: tmpl, tmplVersion: c.ClusterTemplates()[req.Template].Version}
	if out.lease, err = initialLease(tmpl, req.InitialLease); err != nil {
		return nil, err
	}
	prov := req.Provider
	if prov == "" {
		prov = tmpl.Defaults.Provider
	}
	if prov == "" {
		return nil, invalid("provider", "template %s names no default provider: give one", tmpl.Name)
	}
	if out.provider = c.Providers()[prov]; out.provider == nil {
		return nil, fmt.Errorf("provider %q: %w", prov, ErrNotFound)
	}
	pt := c.ProviderTypes()[out.provider.ProviderType]
	if pt == nil {
		return nil, fmt.Errorf("provider type %q of provider %q: %w", out.provider.ProviderType, prov, ErrNotFound)
	}
	// The catalog shows the provider's sensitive admin values redacted; the
	// cluster keeps the real ones of this version in its credentials.
	out.admin, err = s.store.ProviderSecrets(ctx, p.TenantName, prov, out.provider.Version)
	if errors.Is(err, store.ErrNoKey) || err == nil && len(out.admin) > 0 && !s.creds.Enabled() {
		return nil, invalid("provider", "provider %s has sensitive admin values, and this server has no credential key to keep them: set COOPR_CREDENTIAL_KEY", prov)
	}
	if err != nil {
		return nil, err
	}
	if out.fields, err = applyProviderFields(pt, withoutLost(out.provider, out.admin), req.ProviderFields, nil); err != nil {
		return nil, err
	}
	if len(out.fields.sensitive) > 0 && !s.creds.Enabled() {
		return nil, fmt.Errorf("providerFields: %w", credentials.ErrNoKey)
	}
	// The cluster's copy of the provider carries the accepted fields.
	out.provider = withPublic(out.provider, out.fields.public)
	out.suffix = req.DNSSuffix
	if out.suffix == "" {
		out.suffix = tmpl.Defaults.DNSSuffix
	}
	if out.suffix == "" {
		out.suffix = "local"
	}
	if err := catalog.CheckDNSSuffix(out.suffix); err != nil {
		return nil, invalid("dnsSuffix", "%v", err)
	}
	// Node host names come from the name: refuse one that makes none
	// before anything is made, not when the node is.
	var he *solver.HostnameError
	if err := solver.CheckHostnames(solver.Cluster{ID: clusterID, Name: req.Name, DNSSuffix: out.suffix},
		solver.FirstNodeNum+req.Size-1); errors.As(err, &he) {
		return nil, invalid(he.Field, "%s", he.Message)
	}
	// A create's config replaces the template's, as Coopr's did; with
	// MergeConfig it merges in as a CONFIGURE's does into a cluster's (a
	// partial config that replaced the whole left the lb without its port
	// and backends: the CLI merges).
	switch {
	case req.MergeConfig && req.Config == nil:
		return nil, invalid("mergeConfig", "mergeConfig needs a config: the changes to merge into the template's")
	case req.MergeConfig:
		out.config = mergeConfig(tmpl.Defaults.Config, req.Config)
	case req.Config != nil:
		out.config = req.Config
	default:
		out.config = tmpl.Defaults.Config
	}
	if out.config, err = normalJSON(out.config); err != nil {
		return nil, err
	}
	if err := checkMacros("config", out.config); err != nil {
		return nil, err
	}
	// Refuse what cannot fit before solving and planning it (10,000 nodes
	// take the planner half a minute); Create checks again under the locks.
	if out.quota, err = s.checkQuota(ctx, s.db, p, req.Size, true); err != nil {
		return nil, err
	}
	if out.capacity, err = s.checkCapacity(ctx, s.db, out.provider, "", req.Size); err != nil {
		return nil, err
	}
	sol, err := solver.Solve(solver.Request{Template: tmpl, Catalog: solver.FromCatalog(c), Provider: prov,
		HardwareType: req.HardwareType, ImageType: req.ImageType, Services: req.Services, Size: req.Size},
		solver.Cluster{ID: clusterID, Name: req.Name, DNSSuffix: out.suffix})
	if err != nil {
		return nil, err
	}
	out.sol = sol
	all := c.Services()
	out.services = make(map[string]*catalog.Service, len(sol.Services))
	for _, name := range sol.Services {
		out.services[name] = all[name]
	}
	nodes := make([]planner.Node, len(sol.Nodes))
	for i, n := range sol.Nodes {
		nodes[i] = planner.Node{ID: strconv.Itoa(n.NodeNum), NodeNum: n.NodeNum, Services: n.Services}
	}
	out.plan, err = planner.Build(&planner.Request{Action: planner.ClusterCreate, Services: out.services, Nodes: nodes,
		Network: out.provider.Network != nil})
	if err != nil {
		return nil, err
	}
	out.hash = out.plan.Hash()
	if req.ExpectedPlanHash != "" && req.ExpectedPlanHash != out.hash {
		return nil, fmt.Errorf("%w: the plan differs from the preview's (plan hash %s, expected %s): the catalog changed since; preview again",
			ErrConflict, out.hash, req.ExpectedPlanHash)
	}
	out.warnings = append(out.fields.warnings, macroWarnings(out.config, sol.Services)...)
	return out, nil
}

// initialLease applies docs/operations.md#initial-lease.
func initialLease(t *catalog.Template, given string) (time.Duration, error) {
	var initial int64
	if t.Administration != nil {
		initial = int64(t.Administration.LeaseDuration.Initial)
	}
	ms := initial
	if given != "" && given != "-1" {
		r, err := catalog.ParseDuration(given)
		if err != nil {
			return 0, invalid("initialLeaseDuration", "%v (give milliseconds or a duration such as 2h)", err)
		}
		switch {
		case initial == 0:
			ms = int64(r)
		case int64(r) >= 1 && int64(r) <= initial:
			ms = int64(r)
		default:
			return 0, invalid("initialLeaseDuration", "exceeds the template's initial lease of %d ms", initial)
		}
	}
	if ms < 0 {
		return 0, invalid("initialLeaseDuration", "must not be negative")
	}
	return time.Duration(ms) * time.Millisecond, nil
}

// checkMacros rejects a config string whose macro syntax is wrong.
func checkMacros(path string, v any) error {
	switch v := v.(type) {
	case string:
		if err := macro.Check(v); err != nil {
			return invalid(path, "%v", err)
		}
	case map[string]any:
		for k, x := range v {
			if err := checkMacros(path+"."+k, x); err != nil {
				return err
			}
		}
	case []any:
		for i, x := range v {
			if err := checkMacros(path+"["+strconv.Itoa(i)+"]", x); err != nil {
				return err
			}
		}
	}
	return nil
}

// macroWarnings names macros of services the cluster does not have: not an
// error, they may be added later (docs/macros.md#validation).
func macroWarnings(cfg map[string]any, services []string) []string {
	var out []string
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch v := v.(type) {
		case string:
			segs, err := macro.Parse(v)
			if err != nil {
				return
			}
			for _, sg := range segs {
				if sg.Macro == nil {
					continue
				}
				if svc := macro.ServiceOf(sg.Macro.Name); svc != "" && !slices.Contains(services, svc) {
					out = append(out, fmt.Sprintf("%s: macro %%%s%% names service %s, which the cluster does not have", path, sg.Text, svc))
				}
			}
		case map[string]any:
			keys := make([]string, 0, len(v))
			for k := range v {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for _, k := range keys {
				walk(path+"."+k, v[k])
			}
		case []any:
			for i, x := range v {
				walk(path+"["+strconv.Itoa(i)+"]", x)
			}
		}
	}
	walk("config", cfg)
	return out
}

// Preview checks, solves and plans a create without storing anything;
// quotas and capacity are checked, not reserved.
// Hostnames use 0 for the cluster number, which is known only at create.
func (s *Service) Preview(ctx context.Context, p store.Principal, req CreateRequest) (*Preview, error) {
	pr, err := s.prepare(ctx, p, req, "0")
	if err != nil {
		return nil, err
	}
	tmplConfig, err := normalJSON(pr.tmpl.Defaults.Config)
	if err != nil {
		return nil, err
	}
	return &Preview{Template: pr.tmpl.Name, Provider: pr.provider.Name, Services: pr.sol.Services, Nodes: pr.sol.Nodes,
		Plan: pr.plan, PlanHash: pr.hash, Warnings: pr.warnings, Capacity: pr.capacity, Quota: pr.quota,
		Config: pr.config, ConfigChanges: diffConfig(tmplConfig, pr.config)}, nil
}

// quotaLockClass namespaces the per-tenant quota lock.
const quotaLockClass = 0x71756f74 // "quot"

// checkQuota checks the quotas (docs/operations.md#quotas) for adding nodes
// (and a cluster when newCluster). Inside a transaction it first takes the
// tenant's quota lock, held until commit, so two creates cannot both take the
// last room.
func (s *Service) checkQuota(ctx context.Context, q sqlx.ExtContext, p store.Principal, nodes int, newCluster bool) (QuotaUse, error) {
	use := QuotaUse{AddNodes: nodes}
	if newCluster {
		use.AddClusters = 1
	}
	if _, ok := q.(*sqlx.Tx); ok {
		if _, err := q.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1, hashtext($2))`, quotaLockClass, p.TenantID); err != nil {
			return use, err
		}
	}
	var u struct {
		MaxClusters sql.NullInt64 `db:"max_clusters"`
		MaxNodes    sql.NullInt64 `db:"max_nodes"`
		Clusters    int           `db:"clusters"`
		Nodes       int           `db:"nodes"`
	}
	if err := sqlx.GetContext(ctx, q, &u, `SELECT t.max_clusters, t.max_nodes,
			count(c.id) AS clusters, coalesce(sum(c.size), 0) AS nodes
		FROM tenants t LEFT JOIN clusters c ON c.tenant_id = t.id AND c.status <> 'TERMINATED'
		WHERE t.id = $1 GROUP BY t.id`, p.TenantID); err != nil {
		return use, err
	}
	use.Clusters, use.Nodes = u.Clusters, u.Nodes
	if u.MaxClusters.Valid {
		n := int(u.MaxClusters.Int64)
		use.MaxClusters = &n
	}
	if u.MaxNodes.Valid {
		n := int(u.MaxNodes.Int64)
		use.MaxNodes = &n
	}
	if newCluster && u.MaxClusters.Valid && int64(u.Clusters+1) > u.MaxClusters.Int64 {
		return use, fmt.Errorf("%w: maxClusters is %d and the tenant has %d clusters", ErrQuota, u.MaxClusters.Int64, u.Clusters)
	}
	if u.MaxNodes.Valid && int64(u.Nodes+nodes) > u.MaxNodes.Int64 {
		return use, fmt.Errorf("%w: maxNodes is %d, the tenant's clusters have %d nodes and this asks for %d more",
			ErrQuota, u.MaxNodes.Int64, u.Nodes, nodes)
	}
	return use, nil
}

// snapshot is what a cluster keeps of the catalog it was made from, so
// later operations plan against the definitions it was built with.
type snapshot struct {
	Template *catalog.Template           `json:"template"`
	Provider *catalog.Provider           `json:"provider"`
	Services map[string]*catalog.Service `json:"services"`
	// TemplateVersion is the version of the template the cluster was made
	// from, or last synced to (0: not recorded).
	TemplateVersion int `json:"templateVersion,omitempty"`
}

// Create makes a cluster and its CLUSTER_CREATE job in one transaction.
func (s *Service) Create(ctx context.Context, p store.Principal, req CreateRequest) (*Cluster, error) {
	var id, jobID string
	err := s.tx(ctx, func(tx *sqlx.Tx) error {
		if err := tx.GetContext(ctx, &id, `SELECT coopr_pad(nextval('cluster_numbers'), 8)`); err != nil {
			return err
		}
		pr, err := s.prepare(ctx, p, req, id)
		if err != nil {
			return err
		}
		if _, err := s.checkQuota(ctx, tx, p, req.Size, true); err != nil {
			return err
		}
		if _, err := s.checkCapacity(ctx, tx, pr.provider, "", req.Size); err != nil {
			return err
		}
		cfg, err := json.Marshal(pr.config)
		if err != nil {
			return err
		}
		snap, err := json.Marshal(snapshot{Template: pr.tmpl, Provider: pr.provider, Services: pr.services,
			TemplateVersion: pr.tmplVersion})
		if err != nil {
			return err
		}
		var expire any
		if pr.lease > 0 {
			expire = time.Now().Add(pr.lease)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO clusters (id, tenant_id, name, owner, status, config, description,
			template, provider, services, size, dns_suffix, expire_at, snapshot)
			VALUES ($1, $2, $3, $4, 'PENDING', $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
			id, p.TenantID, req.Name, p.User, cfg, req.Description, pr.tmpl.Name, pr.provider.Name,
			pq.Array(pr.sol.Services), req.Size, pr.suffix, expire, snap); err != nil {
			return err
		}
		if err := insertNodes(ctx, tx, id, pr.sol.Nodes); err != nil {
			return err
		}
		if err := s.creds.Put(ctx, tx, id, nsProviderFields, pr.fields.sensitive); err != nil {
			return err
		}
		if err := s.creds.Put(ctx, tx, id, nsProviderAdmin, pr.admin); err != nil {
			return err
		}
		if s.creds.Enabled() {
			key, err := clusterKey(id)
			if err != nil {
				return err
			}
			if err := s.creds.Put(ctx, tx, id, "ssh", key); err != nil {
				return err
			}
		}
		plan := withNodeIDs(pr.plan, pr.sol.Nodes)
		jobID, err = s.engine.SubmitTx(ctx, tx, engine.JobSpec{TenantID: p.TenantID, ClusterID: id,
			Action: planner.ClusterCreate, Plan: plan, Services: pr.services})
		return err
	})
	if err != nil {
		return nil, err
	}
	s.engine.Submitted(jobID)
	return s.Get(ctx, p, id)
}

func insertNodes(ctx context.Context, tx *sqlx.Tx, cluster string, nodes []solver.Node) error {
	n := len(nodes)
	ids, hosts, svcs, hws, imgs, flavors, images, users := make([]string, n), make([]string, n), make([]string, n),
		make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	nums := make([]int64, n)
	for i, x := range nodes {
		b, err := json.Marshal(x.Services)
		if err != nil {
			return err
		}
		ids[i], nums[i], hosts[i], svcs[i] = x.ID, int64(x.NodeNum), x.Hostname, string(b)
		hws[i], imgs[i], flavors[i], images[i], users[i] = x.HardwareType, x.ImageType, x.Flavor, x.Image, x.SSHUser
	}
	// Services go through JSON: Postgres has no array of arrays of
	// different lengths.
	_, err := tx.ExecContext(ctx, `INSERT INTO nodes (id, cluster_id, nodenum, hostname, services, hardwaretype, imagetype,
			flavor, image, sshuser)
		SELECT u.id, $1, u.num, u.host, ARRAY(SELECT jsonb_array_elements_text(u.svcs::jsonb)), u.hw, u.img, u.flavor, u.image, u.sshuser
		FROM unnest($2::text[], $3::int[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[], $10::text[])
			AS u(id, num, host, svcs, hw, img, flavor, image, sshuser)`,
		cluster, pq.Array(ids), pq.Array(nums), pq.Array(hosts), pq.Array(svcs), pq.Array(hws), pq.Array(imgs),
		pq.Array(flavors), pq.Array(images), pq.Array(users))
	if err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, `UPDATE clusters SET max_nodenum = greatest(max_nodenum, (SELECT max(n) FROM unnest($2::int[]) AS n))
		WHERE id = $1`, cluster, pq.Array(nums))
	return err
}

// withNodeIDs turns a canonical plan (node ids are node numbers) into one
// over the nodes' real ids.
func withNodeIDs(p *planner.Plan, nodes []solver.Node) *planner.Plan {
	byNum := make(map[int]string, len(nodes))
	for _, n := range nodes {
		byNum[n.NodeNum] = n.ID
	}
	out := *p
	out.Tasks = slices.Clone(p.Tasks)
	for i := range out.Tasks {
		if out.Tasks[i].Node != "" {
			out.Tasks[i].Node = byNum[out.Tasks[i].NodeNum]
		}
	}
	return &out
}

func (s *Service) tx(ctx context.Context, fn func(*sqlx.Tx) error) error {
	tx, err := s.db.BeginTxx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	// A mutation's audit entry commits with its change (docs/audit.md).
	return audit.Commit(ctx, tx)
}
