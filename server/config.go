// Package server is `coopr server`: the GraphQL API over HTTP and
// websockets, health and metrics endpoints, and the job engine.
package server

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/cooprhq/coopr/server/leader"
)

// Config is the server's configuration. Load fills it from an optional
// YAML file, then the environment; flags applied after Load win.
type Config struct {
	Listen          string        `yaml:"listen"`           // COOPR_LISTEN, default 127.0.0.1:8080
	DatabaseURL     string        `yaml:"database_url"`     // COOPR_DATABASE_URL
	RedisURL        string        `yaml:"redis_url"`        // COOPR_REDIS_URL, default redis://127.0.0.1:6379/0
	RedisPrefix     string        `yaml:"redis_prefix"`     // COOPR_REDIS_PREFIX, default coopr
	ShutdownTimeout time.Duration `yaml:"shutdown_timeout"` // COOPR_SHUTDOWN_TIMEOUT, default 20s
	// AllowedOrigins are extra origins (host patterns) whose pages may open
	// websockets; same-origin pages always may.
	AllowedOrigins []string `yaml:"allowed_origins"` // COOPR_ALLOWED_ORIGINS, comma-separated

	// Limits on one request: body size, nesting depth, cost (graph.CostLimit:
	// fields, database reads and list sizes; docs/api.md) and the fields of
	// one selection set.
	MaxRequestBytes    int64 `yaml:"max_request_bytes"`    // default 16 MiB
	MaxDocumentBytes   int   `yaml:"max_document_bytes"`   // default 64 KiB
	MaxDepth           int   `yaml:"max_depth"`            // default 12
	MaxComplexity      int   `yaml:"max_complexity"`       // default 60000
	MaxSelectionFields int   `yaml:"max_selection_fields"` // default 200
	// Requests per second and burst per API token; agent tokens get their
	// own, larger, allowance. 0 disables.
	RateLimit      float64 `yaml:"rate_limit"`       // default 50
	RateBurst      float64 `yaml:"rate_burst"`       // default 200
	AgentRateLimit float64 `yaml:"agent_rate_limit"` // default 500
	AgentRateBurst float64 `yaml:"agent_rate_burst"` // default 2000
	// Requests per second and burst per client address that bring no
	// valid token, counted before the token is looked up. 0 disables.
	UnauthenticatedRateLimit float64 `yaml:"unauthenticated_rate_limit"` // default 10
	UnauthenticatedRateBurst float64 `yaml:"unauthenticated_rate_burst"` // default 50

	// CredentialKey seals sensitive provider fields and driver secrets:
	// 32 random bytes, base64. Without it the server refuses them.
	CredentialKey string `yaml:"credential_key"` // COOPR_CREDENTIAL_KEY

	// DriverGrace is how long a task waits for a live agent offering its
	// driver before it fails without retry. Default 5 minutes.
	DriverGrace time.Duration `yaml:"driver_grace"`

	// AgentSessionGrace is how long every session of an agent may be gone
	// before its claims fail and are retried elsewhere. Default 3 s.
	AgentSessionGrace time.Duration `yaml:"agent_session_grace"`

	// LeaderTTL is the lease of the leadership of the scheduler and the
	// event relay (docs/operations.md#leadership-and-failover): a leader
	// that stops renewing it, a frozen or cut-off host, is replaced after
	// about this long. Default 10 s.
	LeaderTTL time.Duration `yaml:"leader_ttl"` // COOPR_LEADER_TTL

	// JanitorInterval is how often clusters whose lease ended are deleted.
	JanitorInterval time.Duration `yaml:"janitor_interval"` // default 60s

	// ReadTimeout bounds reading one request, body included (default
	// 30 s); WriteTimeout, from the end of its headers to the end of its
	// answer (default 45 s: more than an agent's 20 s long poll);
	// IdleTimeout, how long a kept-alive connection may wait for its next
	// request (default 60 s). Websockets are exempt, bounded by their own.
	ReadTimeout  time.Duration `yaml:"read_timeout"`
	WriteTimeout time.Duration `yaml:"write_timeout"`
	IdleTimeout  time.Duration `yaml:"idle_timeout"`

	// WebsocketInitTimeout is how long a websocket may wait before its
	// connection_init, and how long one without a valid token may stay
	// open at all. Default 10 s.
	WebsocketInitTimeout time.Duration `yaml:"websocket_init_timeout"`
	// WebsocketWriteTimeout is how long a write to a websocket client may
	// block before the client counts as gone. Default 15 s.
	WebsocketWriteTimeout time.Duration `yaml:"websocket_write_timeout"`
	// WebsocketOperations bounds the operations running at once on one
	// websocket. Default 50.
	WebsocketOperations int `yaml:"websocket_operations"`
	// WebsocketsPerToken bounds the websockets a user token holds open on
	// one server (default 10); agent tokens, each shared by a fleet of
	// agents holding one session each, AgentWebsocketsPerToken (default
	// 1000). 0: no bound.
	WebsocketsPerToken      int `yaml:"websockets_per_token"`
	AgentWebsocketsPerToken int `yaml:"agent_websockets_per_token"`

	// AuthRecheckInterval is how often each server checks that the tokens
	// and sessions of its open websockets are still valid, to end those
	// whose revocation it was not told of (and sessions that expired).
	// Default 10 s.
	AuthRecheckInterval time.Duration `yaml:"auth_recheck_interval"`

	// A web UI session ends when unused for SessionIdleTimeout, and at the
	// latest SessionLifetime after sign-in. Defaults 12 h and 7 days.
	SessionIdleTimeout time.Duration `yaml:"session_idle_timeout"`
	SessionLifetime    time.Duration `yaml:"session_lifetime"`

	// AuditRetention is how long audit entries are kept (docs/audit.md);
	// 0 keeps them for ever. Default 90 days.
	AuditRetention time.Duration `yaml:"audit_retention"`

	// EventRetention is how long state-change events are kept once the
	// relay and the webhook dispatcher have passed them (docs/api.md);
	// 0 keeps them for ever. Default 30 days.
	EventRetention time.Duration `yaml:"event_retention"`

	// Webhook deliveries (docs/webhooks.md): a failed attempt is retried
	// after WebhookRetryWait, doubling each time up to 10 minutes, until
	// WebhookAttempts were made; one attempt waits at most WebhookTimeout
	// for the endpoint. Defaults 2 s, 12 (about an hour), 10 s.
	WebhookRetryWait time.Duration `yaml:"webhook_retry_wait"`
	WebhookAttempts  int           `yaml:"webhook_attempts"`
	WebhookTimeout   time.Duration `yaml:"webhook_timeout"`

	// UI is the web UI's files; nil serves the ones built into the binary.
	UI fs.FS `yaml:"-"`
}

// MinWriteTimeout is the least write_timeout: an agent's claim waits up to
// 20 s for a task before its answer is written.
const MinWriteTimeout = 25 * time.Second

// Defaults returns a Config with every default set.
func Defaults() Config {
	return Config{Listen: "127.0.0.1:8080", RedisURL: "redis://127.0.0.1:6379/0", RedisPrefix: "coopr",
		ShutdownTimeout: 20 * time.Second, MaxRequestBytes: 16 << 20, MaxDocumentBytes: 64 << 10, MaxDepth: 12, MaxComplexity: 60_000,
		MaxSelectionFields: 200,
		RateLimit:          50, RateBurst: 200, AgentRateLimit: 500, AgentRateBurst: 2000,
		UnauthenticatedRateLimit: 10, UnauthenticatedRateBurst: 50, JanitorInterval: time.Minute, AuthRecheckInterval: 10 * time.Second,
		LeaderTTL:   leader.DefaultTTL,
		ReadTimeout: 30 * time.Second, WriteTimeout: 45 * time.Second, IdleTimeout: time.Minute,
		WebsocketInitTimeout: 10 * time.Second, WebsocketWriteTimeout: 15 * time.Second, WebsocketOperations: 50,
		WebsocketsPerToken: 10, AgentWebsocketsPerToken: 1000,
		SessionIdleTimeout: 12 * time.Hour, SessionLifetime: 7 * 24 * time.Hour,
		WebhookRetryWait: 2 * time.Second, WebhookAttempts: 12, WebhookTimeout: 10 * time.Second,
		AuditRetention: 90 * 24 * time.Hour, EventRetention: 30 * 24 * time.Hour}
}

// DecodeFile decodes the YAML file (if not "") into v over what v holds.
// Unknown keys are an error naming them; an empty file (or one of only
// comments) sets nothing.
func DecodeFile(file string, v any) error {
	if file == "" {
		return nil
	}
	f, err := os.Open(file)
	if err != nil {
		return fmt.Errorf("config file: %w", err)
	}
	defer f.Close()
	dec := yaml.NewDecoder(f)
	dec.KnownFields(true)
	if err := dec.Decode(v); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("config file %s: %w", file, err)
	}
	return nil
}

// Load reads file (if not "") over the defaults, then the environment over
// that. Unknown keys in the file are an error naming them, so a typo does
// not silently leave a default in place.
func Load(file string, getenv func(string) string) (Config, error) {
	c := Defaults()
	if err := DecodeFile(file, &c); err != nil {
		return c, err
	}
	str := func(dst *string, key string) {
		if v := getenv(key); v != "" {
			*dst = v
		}
	}
	str(&c.Listen, "COOPR_LISTEN")
	str(&c.DatabaseURL, "COOPR_DATABASE_URL")
	str(&c.RedisURL, "COOPR_REDIS_URL")
	str(&c.RedisPrefix, "COOPR_REDIS_PREFIX")
	str(&c.CredentialKey, "COOPR_CREDENTIAL_KEY")
	if v := getenv("COOPR_SHUTDOWN_TIMEOUT"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			return c, fmt.Errorf("COOPR_SHUTDOWN_TIMEOUT: %w (want a duration such as 20s)", err)
		}
		c.ShutdownTimeout = d
	}
	if v := getenv("COOPR_LEADER_TTL"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			return c, fmt.Errorf("COOPR_LEADER_TTL: %w (want a duration such as 10s)", err)
		}
		c.LeaderTTL = d
	}
	if v := getenv("COOPR_ALLOWED_ORIGINS"); v != "" {
		c.AllowedOrigins = strings.Split(v, ",")
	}
	return c, nil
}

// Check reports the first missing or bad setting, naming how to set it.
func (c Config) Check() error {
	switch {
	case c.DatabaseURL == "":
		return errors.New("no database: set COOPR_DATABASE_URL, database_url in the config file, or --database-url")
	case c.RedisURL == "":
		return errors.New("no Redis: set COOPR_REDIS_URL, redis_url in the config file, or --redis-url")
	case c.Listen == "":
		return errors.New("no listen address: set COOPR_LISTEN, listen in the config file, or --listen")
	case c.LeaderTTL < 0 || c.LeaderTTL > 0 && c.LeaderTTL < 300*time.Millisecond:
		return fmt.Errorf("leader_ttl %s: must be at least 300ms (the default is %s)", c.LeaderTTL, leader.DefaultTTL)
	case c.ShutdownTimeout <= 0:
		return fmt.Errorf("shutdown timeout %s: must be positive", c.ShutdownTimeout)
	case c.WriteTimeout > 0 && c.WriteTimeout < MinWriteTimeout:
		return fmt.Errorf("write_timeout %s: must be at least %s, or an agent's long poll (up to 20 s) is cut off", c.WriteTimeout, MinWriteTimeout)
	case c.AuthRecheckInterval <= 0:
		return fmt.Errorf("auth_recheck_interval %s: must be positive", c.AuthRecheckInterval)
	case c.SessionIdleTimeout <= 0 || c.SessionLifetime <= 0:
		return fmt.Errorf("session_idle_timeout %s and session_lifetime %s: must be positive", c.SessionIdleTimeout, c.SessionLifetime)
	}
	return nil
}
