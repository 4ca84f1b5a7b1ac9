package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/cooprhq/coopr/catalog"
	"github.com/cooprhq/coopr/client"
	"github.com/cooprhq/coopr/devenv"
	"github.com/cooprhq/coopr/drivers/vm/local"
	"github.com/cooprhq/coopr/internal/filelock"
	"github.com/cooprhq/coopr/server"
	"github.com/cooprhq/coopr/server/credentials"
	"github.com/cooprhq/coopr/store"
)

// devOptions are `coopr dev`'s settings.
type devOptions struct {
	dir, listen, catalog, tenant string
	capacity                     int
	maxClusters, maxNodes        int // the tenant's quotas; -1 for none
	install                      bool
	deleteWait                   time.Duration
}

// The dev tenant's quotas: what one machine runs comfortably. A local
// node is a systemd-nspawn container (a web node: about 80 MB of memory,
// its processes' RSS summed, and 8 MB of disk), and they all build at once
// on the agent's 16 slots: 50 take some 4 GB.
const (
	devMaxClusters = 10
	devMaxNodes    = 50
)

func newDevCmd() *cobra.Command {
	var o devOptions
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Run the whole system on this machine: Postgres, Redis, server, agent, local nodes and the example catalog",
		Long: `dev brings coopr up on one machine for trying it out: a private Postgres and
Redis under --dir (unless COOPR_DATABASE_URL and COOPR_REDIS_URL name others),
the server, an agent with every built-in driver (` + "`coopr agent`" + ` as a child
process, started again whenever it dies), the local vm driver's base image
(built once with debootstrap, about a minute and a half), and the example
catalog in tenant "dev", which may have --max-clusters clusters and
--max-nodes nodes at once (set again at every start; -1 for no limit). It
prints the web UI's URL, a token to sign in with and a command that builds
a 3-node web cluster.
Ctrl-C deletes the tenant's clusters, stops
everything and leaves no process, container or mount behind; a second Ctrl-C
stops without waiting for the deletes.

When an earlier run died without Ctrl-C, this one keeps the nodes of the
clusters still live (a job that was running goes on with them) and removes
the others.

The example catalog goes into the tenant on the first start only (or when
its catalog is empty): later starts keep the catalog as it was left, with
the templates added or edited, and say so; ` + "`coopr catalog import DIR`" + `
puts the examples back. The shared driver descriptors the catalog brings
are added when missing and never overwritten. The tokens dev makes are
kept in --dir's tokens.json (mode 0600) and reused while valid: the
printed token works across restarts. One coopr dev runs on a --dir at a
time; a second one stops at once, naming the first's pid.

It must run as root (the local driver makes containers and a bridge).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runDev(cmd.Context(), o, cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVar(&o.dir, "dir", ".coopr-dev", "where the private databases, keys and node state live")
	cmd.Flags().StringVar(&o.listen, "listen", "127.0.0.1:8080", "address of the web UI and the API")
	cmd.Flags().StringVar(&o.catalog, "catalog", "examples/catalog", "catalog directory to import")
	cmd.Flags().StringVar(&o.tenant, "tenant", "dev", "tenant the example catalog and your token belong to")
	cmd.Flags().IntVar(&o.capacity, "capacity", 16, "the agent's task slots")
	cmd.Flags().IntVar(&o.maxClusters, "max-clusters", devMaxClusters, "the tenant's quota of clusters not TERMINATED (-1: no limit)")
	cmd.Flags().IntVar(&o.maxNodes, "max-nodes", devMaxNodes, "the tenant's quota of nodes in those clusters (-1: no limit)")
	cmd.Flags().BoolVar(&o.install, "install", true, "install missing system packages with apt-get (as root)")
	cmd.Flags().DurationVar(&o.deleteWait, "delete-wait", 2*time.Minute, "how long Ctrl-C waits for clusters to be deleted")
	return cmd
}

// devPackages are the Debian packages `coopr dev` needs and lacks.
func devPackages() []string {
	need := devenv.Packages()
	for _, t := range []struct{ cmd, pkg string }{
		{"systemd-nspawn", "systemd-container"}, {"debootstrap", "debootstrap"}, {"ip", "iproute2"},
	} {
		if _, err := exec.LookPath(t.cmd); err != nil {
			need = append(need, t.pkg)
		}
	}
	return need
}

func runDev(ctx context.Context, o devOptions, out io.Writer) (err error) {
	log := slog.Default()
	if os.Geteuid() != 0 {
		return errors.New("coopr dev must run as root: the local driver makes containers, mounts and a bridge (try `sudo make dev`)")
	}
	dir, err := filepath.Abs(o.dir)
	if err != nil {
		return err
	}
	o.dir = dir
	// Postgres runs as its own user, which must reach its directory.
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		return err
	}
	unlock, err := devLock(dir)
	if err != nil {
		return err
	}
	defer unlock()
	if need := devPackages(); len(need) > 0 {
		if !o.install {
			return fmt.Errorf("missing packages: run `apt-get install -y %s`", strings.Join(need, " "))
		}
		if err := devenv.Install(ctx, log, need...); err != nil {
			return err
		}
	}
	var stops []func() error
	defer func() {
		for i := len(stops) - 1; i >= 0; i-- {
			if e := stops[i](); e != nil {
				log.Warn("shutdown", "err", e)
			}
		}
	}()

	dbURL, redisURL := os.Getenv("COOPR_DATABASE_URL"), os.Getenv("COOPR_REDIS_URL")
	if dbURL == "" {
		port, err := devenv.FreePort(55432)
		if err != nil {
			return err
		}
		pg, err := devenv.StartPostgres(ctx, dir, port, "coopr", log)
		if err != nil {
			return err
		}
		stops = append(stops, pg.Stop)
		dbURL = pg.URL
		log.Info("private postgres running", "url", dbURL)
	}
	if redisURL == "" {
		port, err := devenv.FreePort(56379)
		if err != nil {
			return err
		}
		rd, err := devenv.StartRedis(ctx, dir, port, log)
		if err != nil {
			return err
		}
		stops = append(stops, rd.Stop)
		redisURL = rd.URL
		log.Info("private redis running", "url", redisURL)
	}
	key, err := devKey(filepath.Join(dir, "credential.key"))
	if err != nil {
		return err
	}

	cfg := server.Defaults()
	cfg.DatabaseURL, cfg.RedisURL, cfg.CredentialKey, cfg.Listen = dbURL, redisURL, key, o.listen
	cfg.ShutdownTimeout = 5 * time.Second
	srvCtx, stopServer := context.WithCancel(context.WithoutCancel(ctx))
	srv, err := server.Open(srvCtx, cfg, log)
	if err != nil {
		stopServer()
		return err
	}
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		stopServer()
		srv.Close()
		return fmt.Errorf("listen on %s: %w (pass --listen to use another address)", o.listen, err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(srvCtx, ln) }()
	stops = append(stops, func() error {
		stopServer()
		err := <-served
		srv.Close()
		return err
	})
	url := "http://" + ln.Addr().String()

	boot, err := devBootstrap(ctx, srv, url, o)
	if err != nil {
		return err
	}
	tokens := boot.devTokens
	catalogNote := "example catalog from " + o.catalog
	if !boot.imported {
		catalogNote = "catalog kept from the last run; `bin/coopr catalog import " + o.catalog + "` puts the examples back"
	}

	localCfg := local.Config{StateDir: filepath.Join(dir, "local")}
	// Nodes an earlier run left whose clusters are still live stay: a job
	// that was running when that run died goes on with them. The rest are
	// orphans. No other run uses this state dir (devLock).
	owned, err := devOwnedNodes(ctx, url, tokens.admin)
	if err != nil {
		return err
	}
	if err := local.CleanupOrphans(ctx, localCfg.StateDir, log, owned); err != nil {
		log.Warn("removing the nodes an earlier run left", "err", err)
	}
	if len(owned) > 0 {
		log.Info("keeping the nodes of clusters an earlier run left live", "nodes", len(owned))
	}
	log.Info("making sure the local nodes' base image exists (the first time takes about a minute and a half)")
	if _, err := local.EnsureImage(ctx, localCfg.ImageDir, log); err != nil {
		return fmt.Errorf("local base image: %w", err)
	}
	agent, err := startDevAgent(url, tokens.agent, dir, localCfg.StateDir, o.capacity, log)
	if err != nil {
		return err
	}
	stops = append(stops, func() error {
		// The nodes go last: a delete still running needs the agent.
		defer func() {
			if err := local.Cleanup(context.Background(), localCfg.StateDir, log, true); err != nil {
				log.Warn("removing local nodes", "err", err)
			}
		}()
		return agent.Stop(devAgentGrace + 10*time.Second)
	})

	fmt.Fprintf(out, `
coopr is up.

  web UI       %[1]s/   (sign in with the COOPR_TOKEN below)
  playground   %[1]s/playground
  API          %[1]s/graphql
  tenant       %[2]s (%[3]s), at most %[5]s

Build a 3-node web cluster and follow it live (paste into another shell):

  export COOPR_SERVER=%[1]s COOPR_TOKEN=%[4]s
  bin/coopr cluster create web-cluster --size 3 --name demo

Then: bin/coopr cluster list, bin/coopr cluster show ID, curl http://<lb address>/
Ctrl-C here deletes the clusters and stops everything.
`, url, o.tenant, catalogNote, tokens.admin, devQuotas(o))

	<-ctx.Done()
	fmt.Fprintln(out, "\nstopping: deleting clusters first (Ctrl-C again to skip)")
	devDeleteAll(url, tokens.admin, o.deleteWait, out, log)
	return nil
}

// devLockFile, in the dev directory, is locked by the coopr dev that runs
// on it, and holds its pid.
const devLockFile = "dev.lock"

// devLock makes sure no other coopr dev runs on dir, and keeps others off
// it until unlock (or this process's end: the kernel drops a dead
// process's flock, so a killed run leaves nothing that blocks).
func devLock(dir string) (unlock func(), err error) {
	path := filepath.Join(dir, devLockFile)
	// A context already ended: one try, no waiting.
	now, cancel := context.WithCancel(context.Background())
	cancel()
	unlock, err = filelock.Lock(now, path)
	if errors.Is(err, context.Canceled) {
		pid := "unknown"
		if b, err := os.ReadFile(path); err == nil && len(strings.TrimSpace(string(b))) > 0 {
			pid = strings.TrimSpace(string(b))
		}
		return nil, fmt.Errorf("coopr dev is already running (pid %s, directory %s)", pid, dir)
	}
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(path, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644); err != nil {
		unlock()
		return nil, err
	}
	return unlock, nil
}

// devQuotas says what the tenant may have.
func devQuotas(o devOptions) string {
	q := func(n int, what string) string {
		if n < 0 {
			return "any number of " + what
		}
		return fmt.Sprintf("%d %s", n, what)
	}
	return q(o.maxClusters, "clusters") + " and " + q(o.maxNodes, "nodes") + " (--max-clusters, --max-nodes)"
}

// devAgentGrace is how long the dev agent's running tasks may go on after
// a stop before it hands them back.
const devAgentGrace = 10 * time.Second

// startDevAgent runs `coopr agent` as a supervised child process, started
// again whenever it dies, as systemd would: a crash of the agent (or of a
// driver in it) leaves the server, the databases and the nodes running, and
// the new agent takes up the tasks the old one held. The token goes in the
// environment, where other users cannot read it.
func startDevAgent(url, token, dir, localStateDir string, capacity int, log *slog.Logger) (*devenv.Supervised, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find this binary to run the agent with: %w", err)
	}
	args := []string{"agent", "--server", url, "--name", "dev-agent", "--capacity", strconv.Itoa(capacity),
		"--work-dir", filepath.Join(dir, "agent"), "--grace", devAgentGrace.String(), "--local-state-dir", localStateDir}
	a, err := devenv.Supervise("dev agent", func() *exec.Cmd {
		cmd := exec.Command(exe, args...)
		cmd.Env = append(os.Environ(), "COOPR_TOKEN="+token)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		return cmd
	}, log)
	if err != nil {
		return nil, err
	}
	log.Info("dev agent running", "pid", a.Pid(), "command", exe+" "+strings.Join(args, " "))
	return a, nil
}

// devKey reads the credential key, making it on first use: losing it
// would make the stored provider secrets unreadable.
func devKey(path string) (string, error) {
	if b, err := os.ReadFile(path); err == nil {
		return strings.TrimSpace(string(b)), nil
	}
	k := credentials.NewKey()
	return k, os.WriteFile(path, []byte(k+"\n"), 0o600)
}

type devTokens struct{ admin, agent string }

// devTokenFile holds the secrets of the tokens dev makes, reused at every
// start while they are valid: a CLI following a job across a restart goes
// on with the token it was given, and restarts leave no pile of tokens.
const devTokenFile = "tokens.json"

// devSecrets are the tokens of devTokenFile.
type devSecrets struct {
	// Setup is a superadmin token: dev makes the tenant and the agent's
	// token with it.
	Setup string `json:"setup"`
	// Admin is the dev tenant's admin's, printed for the user.
	Admin string `json:"admin"`
	// Agent is the dev agent's.
	Agent string `json:"agent"`
}

// devBootstrapped is what devBootstrap did.
type devBootstrapped struct {
	devTokens
	// imported is whether it imported the example catalog: the tenant had
	// none. Otherwise the catalog an earlier run left is kept.
	imported bool
}

// devBootstrap makes (or finds) the dev tenant, the tokens (a superadmin
// one for the setup, the tenant admin's for the user, an agent's for the
// agent) and the catalog: the example catalog goes into a tenant that has
// none, and the shared driver descriptors it lacks are added. A tenant
// with a catalog keeps it: the user's edits survive restarts.
func devBootstrap(ctx context.Context, srv *server.Server, url string, o devOptions) (devBootstrapped, error) {
	if o.dir == "" {
		// The token file would land in the working directory.
		return devBootstrapped{}, errors.New("dev: no directory for the dev tokens")
	}
	st := srv.Store()
	sup, err := st.Tenant(ctx, "superadmin")
	if err != nil {
		return devBootstrapped{}, err
	}
	secretsPath := filepath.Join(o.dir, devTokenFile)
	var sec devSecrets
	if b, err := os.ReadFile(secretsPath); err == nil {
		if err := json.Unmarshal(b, &sec); err != nil {
			slog.Warn("unreadable token file: making new tokens", "file", secretsPath, "err", err)
			sec = devSecrets{}
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return devBootstrapped{}, err
	}
	// valid says whether a kept secret still authenticates as what it was
	// made for (it may have been revoked, or the database be a new one).
	valid := func(secret string, ok func(store.Principal) bool) bool {
		if secret == "" {
			return false
		}
		p, err := st.Authenticate(ctx, secret)
		return err == nil && ok(p)
	}
	if !valid(sec.Setup, func(p store.Principal) bool { return p.Superadmin() }) {
		if sec.Setup, _, err = st.CreateToken(ctx, sup.ID, "admin", "user", "coopr dev"); err != nil {
			return devBootstrapped{}, err
		}
	}
	c := &client.Client{URL: url, Token: sec.Setup}
	var tok struct{ CreateAPIToken struct{ Secret string } }
	if r, err := c.Do(ctx, `mutation($n: String!, $w: Int!) { createTenant(input: {name: $n, workers: $w}) { id } }`,
		map[string]any{"n": o.tenant, "w": o.capacity}); err != nil {
		return devBootstrapped{}, err
	} else if r.Code() != "" && r.Code() != "CONFLICT" {
		return devBootstrapped{}, r.Err()
	}
	if err := gql(ctx, c, `mutation($n: String!, $w: Int!, $c: Int!, $m: Int!) {
			updateTenant(name: $n, input: {name: $n, workers: $w, maxClusters: $c, maxNodes: $m}) { id } }`,
		map[string]any{"n": o.tenant, "w": o.capacity, "c": o.maxClusters, "m": o.maxNodes}, &struct{}{}); err != nil {
		return devBootstrapped{}, err
	}
	if !valid(sec.Admin, func(p store.Principal) bool { return p.Admin() && p.TenantName == o.tenant }) {
		if err := gql(ctx, c, `mutation($n: String!) { createAPIToken(input: {name: "coopr dev", tenant: $n}) { secret } }`,
			map[string]any{"n": o.tenant}, &tok); err != nil {
			return devBootstrapped{}, err
		}
		sec.Admin = tok.CreateAPIToken.Secret
	}
	if !valid(sec.Agent, func(p store.Principal) bool { return p.Kind == store.TokenAgent && p.MayActAs("dev-agent") }) {
		if err := gql(ctx, c, `mutation { createAPIToken(input: {name: "dev-agent", kind: AGENT, agents: "dev-agent"}) { secret } }`, nil, &tok); err != nil {
			return devBootstrapped{}, err
		}
		sec.Agent = tok.CreateAPIToken.Secret
	}
	b, err := json.MarshalIndent(sec, "", "  ")
	if err != nil {
		return devBootstrapped{}, err
	}
	// Secrets: readable by their owner only, as credential.key. A new
	// file renamed over the old one, so that no moment has them under an
	// older file's mode, and a crash leaves the old file or the new one.
	if err := writePrivate(secretsPath, append(b, '\n')); err != nil {
		return devBootstrapped{}, fmt.Errorf("keep the dev tokens: %w", err)
	}
	out := devBootstrapped{devTokens: devTokens{admin: sec.Admin, agent: sec.Agent}}

	// Driver descriptors are shared by every tenant and only the
	// superadmin writes them; the rest is the tenant's own catalog.
	cat, is, err := catalog.LoadPath(o.catalog)
	if err != nil {
		return devBootstrapped{}, err
	}
	if is.HasErrors() {
		return devBootstrapped{}, fmt.Errorf("catalog %s: %v", o.catalog, is.Errors())
	}
	if b, err = cat.Bundle(); err != nil {
		return devBootstrapped{}, err
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(b, &doc); err != nil {
		return devBootstrapped{}, err
	}
	// The shared descriptors dev adds are the ones missing: a descriptor
	// the superadmin changed, or another tenant relies on, stays as it is.
	for _, kind := range catalog.Kinds {
		if !kind.Shared() {
			continue
		}
		key := string(kind)
		raw, ok := doc[key]
		delete(doc, key)
		if !ok {
			continue
		}
		var want []json.RawMessage
		if err := json.Unmarshal(raw, &want); err != nil {
			return devBootstrapped{}, fmt.Errorf("catalog %s: %s: %w", o.catalog, key, err)
		}
		have, err := devEntityNames(ctx, c, kind)
		if err != nil {
			return devBootstrapped{}, err
		}
		for _, e := range want {
			var named struct{ Name string }
			if err := json.Unmarshal(e, &named); err != nil {
				return devBootstrapped{}, fmt.Errorf("catalog %s: %s: %w", o.catalog, key, err)
			}
			if have[named.Name] {
				continue
			}
			if err := gql(ctx, c, `mutation($k: CatalogKind!, $e: JSON!) { putCatalogEntity(kind: $k, entity: $e) { entity { name } } }`,
				map[string]any{"k": apiKindName(kind), "e": e}, &struct{}{}); err != nil {
				return devBootstrapped{}, fmt.Errorf("add driver descriptor %s %s: %w", key, named.Name, err)
			}
		}
	}
	ac := &client.Client{URL: url, Token: sec.Admin}
	empty := true
	for _, kind := range catalog.Kinds {
		if kind.Shared() {
			continue
		}
		names, err := devEntityNames(ctx, ac, kind)
		if err != nil {
			return devBootstrapped{}, err
		}
		if len(names) > 0 {
			empty = false
			break
		}
	}
	if !empty {
		return out, nil
	}
	if err := gql(ctx, ac, `mutation($d: JSON!) { importCatalog(document: $d) { created } }`, map[string]any{"d": doc}, &struct{}{}); err != nil {
		return devBootstrapped{}, fmt.Errorf("import catalog: %w", err)
	}
	out.imported = true
	return out, nil
}

// devEntityNames are the names of the catalog's entities of kind the
// caller sees.
func devEntityNames(ctx context.Context, c *client.Client, kind catalog.Kind) (map[string]bool, error) {
	var out struct {
		Catalog struct{ Entities []struct{ Name string } }
	}
	if err := gql(ctx, c, `query($k: CatalogKind!) { catalog { entities(kind: $k) { name } } }`, map[string]any{"k": apiKindName(kind)}, &out); err != nil {
		return nil, fmt.Errorf("listing the catalog's %s: %w", kind, err)
	}
	names := map[string]bool{}
	for _, e := range out.Catalog.Entities {
		names[e.Name] = true
	}
	return names, nil
}

// devClusters lists the tenant's clusters not TERMINATED, with their
// nodes' ids.
func devClusters(ctx context.Context, url, token string) ([]devCluster, error) {
	c := &client.Client{URL: url, Token: token}
	var all []devCluster
	var after *string
	for {
		var list struct {
			Clusters struct {
				Nodes       []devCluster
				EndCursor   *string
				HasNextPage bool
			}
		}
		if err := gql(ctx, c, `query($after: String) { clusters(first: 500, after: $after, status: [PENDING, ACTIVE, INCOMPLETE, INCONSISTENT]) {
			nodes { id nodes { id } } endCursor hasNextPage } }`, map[string]any{"after": after}, &list); err != nil {
			return nil, fmt.Errorf("listing clusters: %w", err)
		}
		all = append(all, list.Clusters.Nodes...)
		if !list.Clusters.HasNextPage || list.Clusters.EndCursor == nil {
			return all, nil
		}
		after = list.Clusters.EndCursor
	}
}

type devCluster struct {
	ID    string
	Nodes []struct{ ID string }
}

// devOwnedNodes are the nodes of the tenant's live clusters.
func devOwnedNodes(ctx context.Context, url, token string) ([]local.NodeKey, error) {
	cs, err := devClusters(ctx, url, token)
	if err != nil {
		return nil, err
	}
	var out []local.NodeKey
	for _, c := range cs {
		for _, n := range c.Nodes {
			out = append(out, local.NodeKey{Cluster: c.ID, Node: n.ID})
		}
	}
	return out, nil
}

// devDeleteAll deletes every live cluster of the tenant, waiting for them
// up to wait, or until a second interrupt.
func devDeleteAll(url, token string, wait time.Duration, out io.Writer, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sig)
	go func() {
		select {
		case <-sig:
			log.Warn("not waiting for the deletes: the nodes are removed without them")
			cancel()
		case <-ctx.Done():
		}
	}()
	c := &client.Client{URL: url, Token: token}
	live, err := devClusters(ctx, url, token)
	if err != nil {
		log.Warn("listing clusters to delete", "err", err)
		return
	}
	var ids []string
	for _, cl := range live {
		ids = append(ids, cl.ID)
	}
	if len(ids) == 0 {
		return
	}
	what := "cluster"
	if len(ids) > 1 {
		what = "clusters"
	}
	fmt.Fprintf(out, "deleting %s %s, waiting up to %s\n", what, strings.Join(ids, " "), wait)
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Add(1)
		go func(id string) {
			defer wg.Done()
			for ctx.Err() == nil {
				// A delete while a job runs is refused (and audited as
				// such): wait for the job to end, then ask once.
				if !devJobEnded(ctx, c, id) {
					break
				}
				r, err := c.Do(ctx, `mutation($id: ID!) { deleteCluster(id: $id) { id } }`, map[string]any{"id": id})
				if err == nil && r.Code() == "" {
					break
				}
				if err == nil && r.Code() != "CONFLICT" {
					log.Warn("deleting a cluster", "cluster", id, "err", r.Err())
					return
				}
				// Another job started in between, or the server is away
				// for a moment: wait for it again.
				time.Sleep(time.Second)
			}
			for ctx.Err() == nil {
				var g struct{ Cluster struct{ Status string } }
				if err := gql(ctx, c, `query($id: ID!) { cluster(id: $id) { status } }`, map[string]any{"id": id}, &g); err == nil &&
					g.Cluster.Status == "TERMINATED" {
					log.Info("cluster deleted", "cluster", id)
					return
				}
				time.Sleep(500 * time.Millisecond)
			}
			log.Warn("cluster not deleted in time: its nodes are removed, its record stays", "cluster", id)
		}(id)
	}
	wg.Wait()
}

// devJobEnded waits until no job holds the cluster: one that runs (or is
// paused) keeps it PENDING, and a delete then is refused. False when ctx
// ended first.
func devJobEnded(ctx context.Context, c *client.Client, id string) bool {
	for {
		var g struct {
			Cluster struct {
				Status    string
				LatestJob *struct{ ID string }
			}
		}
		err := gql(ctx, c, `query($id: ID!) { cluster(id: $id) { status latestJob { id } } }`, map[string]any{"id": id}, &g)
		if err == nil && (g.Cluster.Status != "PENDING" || g.Cluster.LatestJob == nil) {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// writePrivate replaces the file at path with b, mode 0600 from the start.
func writePrivate(path string, b []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name()) // gone once renamed; left only on failure
	// CreateTemp makes the file 0600.
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}
