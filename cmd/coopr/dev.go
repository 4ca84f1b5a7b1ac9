package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
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
	"github.com/cooprhq/coopr/server"
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
	if need := devPackages(); len(need) > 0 {
		if !o.install {
			return fmt.Errorf("missing packages: run `apt-get install -y %s`", strings.Join(need, " "))
		}
		if err := devenv.Install(ctx, log, need...); err != nil {
			return err
		}
	}
	dir, err := filepath.Abs(o.dir)
	if err != nil {
		return err
	}
	// Postgres runs as its own user, which must reach its directory.
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		return err
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

	tokens, err := devBootstrap(ctx, srv, url, o)
	if err != nil {
		return err
	}

	localCfg := local.Config{StateDir: filepath.Join(dir, "local")}
	// Nodes an earlier run left whose clusters are still live stay: a job
	// that was running when that run died goes on with them. The rest are
	// orphans. No other run uses this state dir (its Postgres would have
	// kept this one from starting).
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
  tenant       %[2]s (example catalog from %[3]s), at most %[5]s

Build a 3-node web cluster and follow it live (paste into another shell):

  export COOPR_SERVER=%[1]s COOPR_TOKEN=%[4]s
  bin/coopr cluster create web-cluster --size 3 --name demo

Then: bin/coopr cluster list, bin/coopr cluster show ID, curl http://<lb address>/
Ctrl-C here deletes the clusters and stops everything.
`, url, o.tenant, o.catalog, tokens.admin, devQuotas(o))

	<-ctx.Done()
	fmt.Fprintln(out, "\nstopping: deleting clusters first (Ctrl-C again to skip)")
	devDeleteAll(url, tokens.admin, o.deleteWait, out, log)
	return nil
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
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	k := base64.StdEncoding.EncodeToString(b)
	return k, os.WriteFile(path, []byte(k+"\n"), 0o600)
}

type devTokens struct{ admin, agent string }

// devBootstrap makes (or finds) the dev tenant, imports the catalog and
// makes the tokens: a superadmin one for the setup, the tenant admin's
// for the user, an agent's for the agent.
func devBootstrap(ctx context.Context, srv *server.Server, url string, o devOptions) (devTokens, error) {
	st := srv.Store()
	sup, err := st.Tenant(ctx, "superadmin")
	if err != nil {
		return devTokens{}, err
	}
	superTok, _, err := st.CreateToken(ctx, sup.ID, "admin", "user", "coopr dev")
	if err != nil {
		return devTokens{}, err
	}
	c := &client.Client{URL: url, Token: superTok}
	var tok struct{ CreateAPIToken struct{ Secret string } }
	if r, err := c.Do(ctx, `mutation($n: String!, $w: Int!) { createTenant(input: {name: $n, workers: $w}) { id } }`,
		map[string]any{"n": o.tenant, "w": o.capacity}); err != nil {
		return devTokens{}, err
	} else if r.Code() != "" && r.Code() != "CONFLICT" {
		return devTokens{}, r.Err()
	}
	if err := gql(ctx, c, `mutation($n: String!, $w: Int!, $c: Int!, $m: Int!) {
			updateTenant(name: $n, input: {name: $n, workers: $w, maxClusters: $c, maxNodes: $m}) { id } }`,
		map[string]any{"n": o.tenant, "w": o.capacity, "c": o.maxClusters, "m": o.maxNodes}, &struct{}{}); err != nil {
		return devTokens{}, err
	}
	if err := gql(ctx, c, `mutation($n: String!) { createAPIToken(input: {name: "coopr dev", tenant: $n}) { secret } }`,
		map[string]any{"n": o.tenant}, &tok); err != nil {
		return devTokens{}, err
	}
	admin := tok.CreateAPIToken.Secret
	if err := gql(ctx, c, `mutation { createAPIToken(input: {name: "dev-agent", kind: AGENT, agents: "dev-agent"}) { secret } }`, nil, &tok); err != nil {
		return devTokens{}, err
	}
	agentTok := tok.CreateAPIToken.Secret

	// Driver descriptors are shared by every tenant and only the
	// superadmin writes them; the rest is the tenant's own catalog.
	cat, is, err := catalog.LoadPath(o.catalog)
	if err != nil {
		return devTokens{}, err
	}
	if is.HasErrors() {
		return devTokens{}, fmt.Errorf("catalog %s: %v", o.catalog, is.Errors())
	}
	b, err := cat.Bundle()
	if err != nil {
		return devTokens{}, err
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		return devTokens{}, err
	}
	shared := map[string]any{}
	for _, k := range []string{"providertypes", "automatortypes"} {
		if v, ok := doc[k]; ok {
			shared[k] = v
			delete(doc, k)
		}
	}
	if err := gql(ctx, c, `mutation($d: JSON!) { importCatalog(document: $d) { created } }`, map[string]any{"d": shared}, &struct{}{}); err != nil {
		return devTokens{}, fmt.Errorf("import driver descriptors: %w", err)
	}
	ac := &client.Client{URL: url, Token: admin}
	if err := gql(ctx, ac, `mutation($d: JSON!) { importCatalog(document: $d) { created } }`, map[string]any{"d": doc}, &struct{}{}); err != nil {
		return devTokens{}, fmt.Errorf("import catalog: %w", err)
	}
	return devTokens{admin: admin, agent: agentTok}, nil
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
				r, err := c.Do(ctx, `mutation($id: ID!) { deleteCluster(id: $id) { id } }`, map[string]any{"id": id})
				if err == nil && r.Code() == "" {
					break
				}
				// CONFLICT: a job is still running; deletes wait their turn.
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
