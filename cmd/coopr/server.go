package main

import (
	"errors"
	"log/slog"
	"net"
	"os"

	"github.com/spf13/cobra"

	"github.com/cooprhq/coopr/agent/sdnotify"
	"github.com/cooprhq/coopr/server"
	"github.com/cooprhq/coopr/store"
)

func newServerCmd() *cobra.Command {
	var file, listen, dbURL, redisURL string
	cmd := &cobra.Command{
		Use:   "server",
		Short: "Run the GraphQL API and the job engine",
		Long: `server serves the web UI at / (sign-in at /auth/session), the GraphQL API at
/graphql (HTTP and websockets), the playground at /playground, /healthz, /readyz
and Prometheus metrics at /metrics, and runs the job engine. Settings come from
flags, then the environment (COOPR_LISTEN, COOPR_DATABASE_URL, COOPR_REDIS_URL,
COOPR_REDIS_PREFIX, COOPR_SHUTDOWN_TIMEOUT, COOPR_ALLOWED_ORIGINS,
COOPR_LEADER_TTL), then the --config YAML file (listen, database_url,
redis_url, redis_prefix, shutdown_timeout, allowed_origins, leader_ttl,
session_idle_timeout, session_lifetime).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := server.Load(file, os.Getenv)
			if err != nil {
				return err
			}
			for _, f := range []struct {
				flag string
				dst  *string
				v    string
			}{{"listen", &cfg.Listen, listen}, {"database-url", &cfg.DatabaseURL, dbURL}, {"redis-url", &cfg.RedisURL, redisURL}} {
				if cmd.Flags().Changed(f.flag) {
					*f.dst = f.v
				}
			}
			ctx := cmd.Context()
			s, err := server.Open(ctx, cfg, slog.Default())
			if err != nil {
				return err
			}
			defer s.Close()
			ln, err := net.Listen("tcp", cfg.Listen)
			if err != nil {
				return err
			}
			// The listener is open: connections made from here on queue
			// until Serve accepts them, so systemd may call us ready.
			n := sdnotify.New(slog.Default())
			n.Notify("READY=1")
			go func() {
				<-ctx.Done()
				n.Notify("STOPPING=1")
			}()
			return s.Serve(ctx, ln)
		},
	}
	cmd.Flags().StringVar(&file, "config", "", "YAML configuration file")
	cmd.Flags().StringVar(&listen, "listen", "", "address to listen on (default 127.0.0.1:8080)")
	cmd.Flags().StringVar(&dbURL, "database-url", "", "Postgres URL")
	cmd.Flags().StringVar(&redisURL, "redis-url", "", "Redis URL (default redis://127.0.0.1:6379/0)")
	return cmd
}

func newTokenCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "token", Short: "Make API tokens directly in the database (for the first one)"}
	var db dbFlags
	var tenant, user, name, agentID string
	var agent bool
	create := &cobra.Command{
		Use:   "create",
		Short: "Make an API token and print its secret",
		Long: `create makes a token straight in the database, for bootstrapping: the
first superadmin token comes from here; later ones can come from the API's
createAPIToken. The secret is printed once; coopr keeps only its hash.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := db.open(cmd.Context())
			if err != nil {
				return err
			}
			defer s.Close()
			t, err := s.Tenant(cmd.Context(), tenant)
			if err != nil {
				return err
			}
			var secret string
			switch {
			case agent && agentID == "":
				return errors.New("an agent token serves the agent ids it names: add --agent-id with the agent's --name (web-1), or a pattern (web-*; * for any)")
			case agent:
				secret, _, err = s.CreateAgentToken(cmd.Context(), t.ID, name, agentID)
			case agentID != "":
				return errors.New("--agent-id is for agent tokens: add --agent")
			default:
				secret, _, err = s.CreateToken(cmd.Context(), t.ID, user, store.TokenUser, name)
			}
			if err != nil {
				return err
			}
			cmd.Println(secret)
			return nil
		},
	}
	db.register(create)
	create.Flags().StringVar(&tenant, "tenant", "superadmin", "tenant of the token")
	create.Flags().StringVar(&user, "user", "admin", "user the token acts as")
	create.Flags().StringVar(&name, "name", "cli", "what the token is for")
	create.Flags().BoolVar(&agent, "agent", false, "make an agent token (tenant superadmin, no user)")
	create.Flags().StringVar(&agentID, "agent-id", "", "with --agent: the agent id it serves (the agent's --name), or a pattern with * (web-*)")
	cmd.AddCommand(create)
	return cmd
}
