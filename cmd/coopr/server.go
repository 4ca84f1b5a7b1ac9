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
	cmd := &cobra.Command{Use: "token", Short: "Make, list and revoke API tokens (the first one straight in the database)"}
	var db dbFlags
	var api apiFlags
	var tenant, user, name, agentID, output string
	var agent bool
	create := &cobra.Command{
		Use:   "create",
		Short: "Make an API token and print its secret",
		Long: `create makes a token and prints its secret once; coopr keeps only its hash.

With a database (--database-url or $COOPR_DATABASE_URL) it makes the token
straight in the database, for bootstrapping: the first superadmin token comes
from there (--tenant defaults to superadmin, --user to admin). Without one it
asks the API (createAPIToken) as the caller's token: a token of one's own, or
with --user one for another user of the tenant (admins), with --tenant one in
another tenant (the superadmin).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch {
			case agent && agentID == "":
				return errors.New("an agent token serves the agent ids it names: add --agent-id with the agent's --name (web-1), or a pattern (web-*; * for any)")
			case !agent && agentID != "":
				return errors.New("--agent-id is for agent tokens: add --agent")
			}
			if !db.given() {
				return createTokenByAPI(cmd, &api, tokenRequest{name: name, agent: agent, agentID: agentID,
					user: changed(cmd, "user", user), tenant: changed(cmd, "tenant", tenant), output: output})
			}
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
			if agent {
				secret, _, err = s.CreateAgentToken(cmd.Context(), t.ID, name, agentID)
			} else {
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
	api.register(create)
	create.Flags().StringVar(&tenant, "tenant", "superadmin", "tenant of the token")
	create.Flags().StringVar(&user, "user", "admin", "user the token acts as")
	create.Flags().StringVar(&name, "name", "cli", "what the token is for")
	create.Flags().BoolVar(&agent, "agent", false, "make an agent token (tenant superadmin, no user)")
	create.Flags().StringVar(&agentID, "agent-id", "", "with --agent: the agent id it serves (the agent's --name), or a pattern with * (web-*)")
	create.Flags().StringVarP(&output, "output", "o", "table", "over the API: json prints the token and its secret as JSON; table the secret alone")
	cmd.AddCommand(create, newTokenListCmd(), newTokenRevokeCmd())
	return cmd
}
