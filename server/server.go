package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/99designs/gqlgen/graphql/handler"
	"github.com/99designs/gqlgen/graphql/handler/extension"
	"github.com/99designs/gqlgen/graphql/handler/transport"
	coderws "github.com/coder/websocket"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redis/go-redis/v9"

	"github.com/cooprhq/coopr/agent/sdnotify"
	"github.com/cooprhq/coopr/audit"
	"github.com/cooprhq/coopr/drivers/builtin"
	"github.com/cooprhq/coopr/graph"
	"github.com/cooprhq/coopr/graph/fanout"
	"github.com/cooprhq/coopr/queue"
	"github.com/cooprhq/coopr/server/auth"
	"github.com/cooprhq/coopr/server/control"
	"github.com/cooprhq/coopr/server/credentials"
	"github.com/cooprhq/coopr/server/engine"
	"github.com/cooprhq/coopr/server/events"
	"github.com/cooprhq/coopr/server/fleet"
	"github.com/cooprhq/coopr/server/gqlws"
	"github.com/cooprhq/coopr/server/playground"
	"github.com/cooprhq/coopr/server/webhook"
	"github.com/cooprhq/coopr/store"
)

// Server is one coopr server process. Several may share a database and a
// Redis: none keeps state another needs, and the engine's scheduler runs in
// one of them at a time (the others wait on its advisory lock).
type Server struct {
	cfg     Config
	log     *slog.Logger
	store   *store.Store
	redis   *redis.Client
	engine  *engine.Engine
	relay   *events.Relay
	hooks   *webhook.Service
	control *control.Service
	fleet   *fleet.Fleet
	hub     *events.Hub
	fanout  *fanout.Groups
	sockets *tokenSockets
	// auth looks tokens up, remembering refusals for a while; addrs
	// limits, per client address, requests that bring no valid token.
	auth *auth.RefusalCache
	// agentAuth remembers agent tokens' principals (docs/security.md#ending-access).
	agentAuth *auth.AgentCache
	addrs     *addressLimiter
	reg       *prometheus.Registry
	// sessions authenticates the web UI's cookie requests.
	sessions *auth.Sessions
	// streams ends long-lived requests (websockets) when shutdown begins;
	// ordinary requests are left to finish.
	streams    context.Context
	endStreams context.CancelFunc

	// loops are the background loops Serve supervises; serving is set
	// while the HTTP server serves.
	loops        []*loop
	serving      atomic.Bool
	loopRestarts *prometheus.CounterVec

	httpRequests *prometheus.CounterVec
	httpDuration *prometheus.HistogramVec
}

// Open connects to Postgres (applying migrations) and Redis.
func Open(ctx context.Context, cfg Config, log *slog.Logger) (*Server, error) {
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	// Every connection of this process carries its name, so that a
	// standby taking over from it ends them all (server/leader).
	dsn, err := store.WithApplicationName(cfg.DatabaseURL, instanceName())
	if err != nil {
		return nil, err
	}
	st, err := store.Open(ctx, dsn)
	if err != nil {
		return nil, err
	}
	if err := st.Migrate(ctx); err != nil {
		st.Close()
		return nil, err
	}
	opts, err := redis.ParseURL(cfg.RedisURL)
	if err != nil {
		st.Close()
		return nil, fmt.Errorf("redis url: %w", err)
	}
	rdb := redis.NewClient(opts)
	if err := rdb.Ping(ctx).Err(); err != nil {
		st.Close()
		_ = rdb.Close()
		return nil, fmt.Errorf("redis at %s: %w", opts.Addr, err)
	}
	s := &Server{cfg: cfg, log: log, store: st, redis: rdb, reg: prometheus.NewRegistry()}
	s.streams, s.endStreams = context.WithCancel(context.Background())
	creds, err := credentials.New(cfg.CredentialKey)
	if err != nil {
		st.Close()
		_ = rdb.Close()
		return nil, err
	}
	ecfg := engine.Config{Logger: log, LeaderTTL: cfg.LeaderTTL}
	if creds.Enabled() {
		ecfg.SealSecrets = creds.Put
	} else {
		log.Warn("no credential key (COOPR_CREDENTIAL_KEY): clusters get no SSH key, and those whose providers need sensitive fields cannot be created")
	}
	s.relay = events.NewRelay(st.DB(), dsn, rdb, cfg.RedisPrefix, log)
	s.relay.LeaderTTL = cfg.LeaderTTL
	ecfg.EventsCommitted = s.relay.Wake
	s.engine = engine.New(st.DB(), queue.New(rdb, queue.Options{Prefix: cfg.RedisPrefix}), ecfg)
	s.hub = events.NewHub(rdb, cfg.RedisPrefix, log)
	s.relay.Local = s.hub
	s.fanout = &fanout.Groups{Tenant: func(ctx context.Context) string {
		p, _ := auth.FromContext(ctx)
		return p.TenantID
	}}
	s.sockets = newTokenSockets(cfg.WebsocketsPerToken, cfg.AgentWebsocketsPerToken)
	s.agentAuth = &auth.AgentCache{Authenticator: st, TTL: cfg.AuthRecheckInterval}
	s.auth = &auth.RefusalCache{Authenticator: s.agentAuth, TTL: refusalTTL}
	s.addrs = &addressLimiter{rate: rate{cfg.UnauthenticatedRateLimit, cfg.UnauthenticatedRateBurst}}
	s.hooks = webhook.New(st.DB(), creds, log)
	s.hooks.Backoff, s.hooks.MaxAttempts = webhook.Doubling(cfg.WebhookRetryWait), cfg.WebhookAttempts
	s.hooks.Client.Timeout = cfg.WebhookTimeout
	s.control = control.New(st, s.engine, creds)
	s.control.Capacity = builtin.Capacities()
	s.fleet = fleet.New(st.DB())
	s.sessions = newSessions(st, cfg)
	s.loops = s.newLoops()
	s.loopRestarts = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "coopr_loop_restarts_total",
		Help: "Background loops (engine, event relay, ...) run again after they failed."}, []string{"loop"})
	s.httpRequests = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "coopr_http_requests_total",
		Help: "HTTP requests by endpoint and status code."}, []string{"endpoint", "code"})
	s.httpDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "coopr_http_request_duration_seconds",
		Help: "HTTP request latency by endpoint.", Buckets: prometheus.DefBuckets}, []string{"endpoint"})
	for _, c := range []struct {
		name, help string
		v          func(engine.Stats) int64
	}{
		{"coopr_tasks_dispatched_total", "Tasks queued by this server's scheduler.", func(s engine.Stats) int64 { return s.Dispatched }},
		{"coopr_tasks_claimed_total", "Tasks claimed through this server.", func(s engine.Stats) int64 { return s.Claimed }},
		{"coopr_tasks_completed_total", "Task attempts finished successfully through this server.", func(s engine.Stats) int64 { return s.Completed }},
		{"coopr_tasks_failed_total", "Task attempts finished with a failure through this server.", func(s engine.Stats) int64 { return s.Failed }},
	} {
		s.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: c.name, Help: c.help},
			func() float64 { return float64(c.v(s.engine.Stats())) }))
	}
	for _, l := range []struct {
		loop    string
		leading func() bool
	}{{loopEngine, s.engine.Leading}, {loopRelay, s.relay.Leading}} {
		s.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "coopr_leading",
			Help:        "1 while this server leads the loop (the scheduler, the event relay), 0 while it stands by.",
			ConstLabels: prometheus.Labels{"loop": l.loop}}, func() float64 {
			if l.leading() {
				return 1
			}
			return 0
		}))
	}
	s.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "coopr_events_delivered_total",
		Help: "Changes handed to this server's subscribers."}, func() float64 { return float64(s.hub.Published.Load()) }))
	s.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "coopr_events_dropped_total",
		Help: "Changes lost by subscribers that fell behind."}, func() float64 { return float64(s.hub.Dropped.Load()) }))
	s.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "coopr_token_lookups_total",
		Help: "API tokens looked up in the database (refusals are remembered for a while)."}, func() float64 { return float64(s.auth.Lookups.Load()) }))
	s.reg.MustRegister(s.loopRestarts, s.httpRequests, s.httpDuration, collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		collectors.NewDBStatsCollector(st.DB().DB, "coopr"))
	return s, nil
}

// instanceName names this process's database connections: unique, and
// within Postgres's 63 bytes.
func instanceName() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return "coopr-server-" + hex.EncodeToString(b)
}

// Close releases the connections.
func (s *Server) Close() error {
	return errors.Join(s.redis.Close(), s.store.Close())
}

// Store is the server's store, for tests and tools.
func (s *Server) Store() *store.Store { return s.store }

// Fanout holds the groups of subscribers that share rendered values, for
// tests and tools.
func (s *Server) Fanout() *fanout.Groups { return s.fanout }

// Hub is the server's event hub, for tests and tools.
func (s *Server) Hub() *events.Hub { return s.hub }

// Engine is the server's job engine, for tests and tools.
func (s *Server) Engine() *engine.Engine { return s.engine }

// Handler is the whole HTTP surface.
func (s *Server) Handler() http.Handler {
	gql := handler.New(graph.NewExecutableSchema(graph.Config{Resolvers: &graph.Resolver{Store: s.store,
		Control: s.control, Hub: s.hub, Engine: s.engine, Fleet: s.fleet, Hooks: s.hooks,
		Streams: s.streams, Log: s.log, DriverGrace: s.cfg.DriverGrace, SessionGrace: s.cfg.AgentSessionGrace,
		TokenRevoked: s.agentAuth.Forget}}))
	limiter := newRateLimiter(rate{s.cfg.RateLimit, s.cfg.RateBurst}, rate{s.cfg.AgentRateLimit, s.cfg.AgentRateBurst})
	accept := coderws.AcceptOptions{OriginPatterns: s.cfg.AllowedOrigins}
	const keepAlive = 10 * time.Second
	gql.AddTransport(sharingWebsocket{groups: s.fanout, Transport: gqlws.Transport{
		AcceptOptions: accept,
		// Browsers cannot set headers on a websocket: the token may come in
		// connection_init's payload instead.
		Init:          s.wsInit,
		InitTimeout:   s.cfg.WebsocketInitTimeout,
		Authenticated: authenticated,
		WriteTimeout:  s.cfg.WebsocketWriteTimeout,
		KeepAlive:     keepAlive,
		Encode:        s.fanout.Encode,
		MaxOperations: s.cfg.WebsocketOperations,
		Admit:         limiter.admit,
		Legacy: legacyWebsocket{Websocket: transport.Websocket{
			KeepAlivePingInterval: keepAlive,
			Implementation:        transport.CoderWebsocketImplementation{AcceptOptions: accept},
			InitFunc:              closeAnonymous(s.wsInit, s.cfg.WebsocketInitTimeout),
			InitTimeout:           s.cfg.WebsocketInitTimeout,
		}, maxOps: s.cfg.WebsocketOperations, admit: limiter.admit},
	}})
	gql.AddTransport(transport.Options{})
	gql.AddTransport(transport.GET{})
	gql.AddTransport(transport.POST{})
	// Agents and UIs send the same few documents over and over: each is
	// parsed and validated once, not on every request.
	docs := newDocCache(docCacheBytes, docCacheMaxDoc)
	gql.SetQueryCache(docs)
	gql.Use(extension.Introspection{})
	gql.Use(documentGate{maxBytes: s.cfg.MaxDocumentBytes})
	gql.Use(depthLimit{max: s.cfg.MaxDepth})
	gql.Use(graph.CostLimit{Max: s.cfg.MaxComplexity, MaxFields: s.cfg.MaxSelectionFields})
	gql.Use(&graph.InputLimits{})
	gql.Use(keepDocuments{docs}) // last: only documents that passed every limit
	gql.AroundRootFields(s.auditMutations)
	gql.SetErrorPresenter(graph.PresentError(s.log))
	gql.SetRecoverFunc(func(ctx context.Context, p any) error {
		s.log.ErrorContext(ctx, "graphql: panic", "panic", p)
		return fmt.Errorf("panic: %v", p)
	})

	mux := http.NewServeMux()
	// A session cookie (the web UI) stands for a token when the request
	// brings none; a request with neither is refused before its body is read.
	mux.Handle("/graphql", s.instrument("graphql", withClientAddress(s.addrs.gate(s.sessions.Middleware(auth.Middleware(s.auth,
		s.addrs.requireToken(limitBody(s.cfg.MaxRequestBytes, limiter.middleware(readBody(s.endOnShutdown(gql)))))))))))
	// The playground, its files built in; the web UI has / and the rest.
	mux.Handle("GET "+playground.Path, s.instrument("playground", playground.Handler()))
	mux.Handle("GET "+playground.AssetsPath, s.instrument("playground", playground.Handler()))
	s.routeWeb(mux)
	mux.Handle("GET /healthz", s.instrument("healthz", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("ok\n"))
	})))
	mux.Handle("GET /readyz", s.instrument("readyz", http.HandlerFunc(s.ready)))
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{}))
	return mux
}

// wsInit authenticates a websocket's connection_init (unless its upgrade
// request carried a token) and counts it against its token's websockets.
func (s *Server) wsInit(ctx context.Context, init transport.InitPayload) (context.Context, *transport.InitPayload, error) {
	p, ok := auth.FromContext(ctx)
	session := ""
	if !ok {
		secret := auth.BearerToken(init.Authorization())
		if secret == "" {
			// A browser's session cookie, checked again now.
			sp, ok, err := s.sessions.Principal(ctx)
			switch {
			case !ok:
				s.addrs.charge(ctx)
				return ctx, nil, nil // operations will answer UNAUTHENTICATED
			case errors.Is(err, store.ErrUnauthenticated):
				s.addrs.charge(ctx)
				return ctx, nil, errors.New("the session has ended: sign in again")
			case err != nil:
				return ctx, nil, errors.New("authentication is unavailable")
			}
			p, session = sp, auth.SessionKey(ctx)
		}
		var err error
		if secret != "" {
			p, err = s.auth.Authenticate(ctx, secret)
		}
		if errors.Is(err, store.ErrUnauthenticated) {
			s.addrs.charge(ctx)
			return ctx, nil, errors.New("invalid API token")
		}
		if err != nil {
			return ctx, nil, errors.New("authentication is unavailable")
		}
		ctx = auth.WithPrincipal(ctx, p)
	}
	// The context ends, and with it the connection, when the token or the
	// session does (see watchAuth).
	ctx, err := s.sockets.take(ctx, p, session)
	if err != nil {
		return ctx, nil, err
	}
	return ctx, nil, nil
}

// ready answers 200 when Postgres and Redis both answer within a second.
func (s *Server) ready(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), time.Second)
	defer cancel()
	var problems []error
	if err := s.store.DB().PingContext(ctx); err != nil {
		problems = append(problems, fmt.Errorf("postgres: %w", err))
	}
	if err := s.redis.Ping(ctx).Err(); err != nil {
		problems = append(problems, fmt.Errorf("redis: %w", err))
	}
	if len(problems) > 0 {
		http.Error(w, errors.Join(problems...).Error(), http.StatusServiceUnavailable)
		return
	}
	_, _ = w.Write([]byte("ready\n"))
}

// endOnShutdown ties websocket requests to the streams context, and lifts
// the server's read and write deadlines from them (a hijacked connection
// keeps its write deadline): a websocket lives on, bounded by its own
// timeouts (init, write, pings).
func (s *Server) endOnShutdown(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") == "" {
			h.ServeHTTP(w, r)
			return
		}
		rc := http.NewResponseController(w)
		_ = rc.SetReadDeadline(time.Time{})
		_ = rc.SetWriteDeadline(time.Time{})
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		stop := context.AfterFunc(s.streams, cancel)
		defer stop()
		h.ServeHTTP(w, r.WithContext(ctx))
	})
}

type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	w.code = code
	w.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController (and the websocket upgrade) reach
// the connection underneath.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (s *Server) instrument(endpoint string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w, code: http.StatusOK}
		h.ServeHTTP(sw, r)
		s.httpRequests.WithLabelValues(endpoint, strconv.Itoa(sw.code)).Inc()
		s.httpDuration.WithLabelValues(endpoint).Observe(time.Since(start).Seconds())
	})
}

// Serve answers on ln and runs the engine until ctx ends, then shuts down:
// it stops accepting, cancels long-lived requests (websockets, long polls)
// and waits up to the shutdown timeout for the rest to finish, then stops
// the background loops and waits for them.
//
// Every background loop is supervised: one that fails (or returns while
// the server runs) is logged, counted in coopr_loop_restarts_total and
// run again after a backoff, from 1 s doubling to 15 s. Under systemd the
// watchdog is fed only while every loop runs and the HTTP server answers,
// so a loop that cannot recover gets the process restarted.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	hs := &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       s.cfg.ReadTimeout,
		WriteTimeout:      s.cfg.WriteTimeout,
		IdleTimeout:       s.cfg.IdleTimeout,
		MaxHeaderBytes:    64 << 10,
	}
	hs.RegisterOnShutdown(s.endStreams)
	loopCtx, stopLoops := context.WithCancel(ctx)
	defer stopLoops()
	var wg sync.WaitGroup
	stop := func() {
		stopLoops()
		wg.Wait()
		// Nothing calls the engine any more: end its claim fetchers.
		s.engine.Stop()
	}
	// A hub that fails before it is ready fails Serve: nothing was served
	// yet, and a process that exits is restarted by systemd.
	hubFailed := make(chan error, 1)
	for _, l := range s.loops {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.supervise(loopCtx, l, func(err error) {
				if l.name == loopHub {
					select {
					case hubFailed <- err:
					default:
					}
				}
			})
		}()
	}
	// Serve only once the hub listens, so a subscription made at once
	// misses nothing.
	select {
	case <-s.hub.Ready():
	case err := <-hubFailed:
		stop()
		return fmt.Errorf("event hub: %w", err)
	case <-ctx.Done():
	}
	serveErr := make(chan error, 1)
	s.serving.Store(true)
	go func() {
		serveErr <- hs.Serve(ln)
		s.serving.Store(false)
	}()
	s.log.Info("coopr server listening", "addr", ln.Addr().String())
	// The watchdog runs until Serve returns: a graceful stop that takes
	// its time is not a hang.
	wdCtx, stopWatchdog := context.WithCancel(context.WithoutCancel(ctx))
	wdDone := make(chan struct{})
	go func() {
		defer close(wdDone)
		s.watchdog(wdCtx, ctx.Done(), ln.Addr())
	}()
	defer func() {
		stopWatchdog()
		<-wdDone
	}()

	var err error
	select {
	case err = <-serveErr:
	case <-ctx.Done():
		s.log.Info("shutting down", "timeout", s.cfg.ShutdownTimeout)
		sctx, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownTimeout)
		err = hs.Shutdown(sctx)
		cancel()
		<-serveErr
	}
	stop()
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// Names of the background loops.
const (
	loopEngine = "engine"
	loopRelay  = "event relay"
	loopHub    = "event hub"
)

// loop is a background loop of the server, run by supervise.
type loop struct {
	name string
	run  func(context.Context) error
	up   atomic.Bool // running, not waiting out a backoff
}

// newLoops lists the background loops. The engine and the relay lead or
// stand by (server/leader); the rest run on every server.
func (s *Server) newLoops() []*loop {
	return []*loop{
		{name: loopEngine, run: s.engine.Run},
		{name: loopRelay, run: s.relay.Run},
		{name: "event relay wakes", run: s.relay.RunWakes},
		{name: loopHub, run: s.hub.Run},
		{name: "engine feed", run: s.feedEngine},
		{name: "lease janitor", run: s.janitor},
		{name: "agent watch", run: s.watchAgents},
		{name: "auth watch", run: s.watchAuth},
		{name: "webhooks", run: s.hooks.Run},
	}
}

// Backoff between runs of a failed loop.
const (
	loopBackoffMin = time.Second
	loopBackoffMax = 15 * time.Second
)

// supervise runs l until ctx ends, again after each failure (a return
// while ctx lives counts as one) after a backoff; failed sees each failure.
func (s *Server) supervise(ctx context.Context, l *loop, failed func(error)) {
	backoff := loopBackoffMin
	for {
		started := time.Now()
		l.up.Store(true)
		err := l.run(ctx)
		l.up.Store(false)
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			err = errors.New("returned while the server runs")
		}
		failed(err)
		if time.Since(started) > time.Minute {
			backoff = loopBackoffMin // it ran well for a while: a new failure
		}
		s.loopRestarts.WithLabelValues(l.name).Inc()
		s.log.Error(l.name+" stopped; running it again", "err", err, "in", backoff)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, loopBackoffMax)
	}
}

// health is nil while every background loop runs and the HTTP server
// serves.
func (s *Server) health() error {
	for _, l := range s.loops {
		if !l.up.Load() {
			return fmt.Errorf("the %s is down, waiting to run again", l.name)
		}
	}
	if !s.serving.Load() {
		return errors.New("the HTTP server is not serving")
	}
	return nil
}

// watchdog feeds systemd's watchdog (WatchdogSec in the unit) while the
// server is healthy and its /healthz answers on addr, and unconditionally
// once stopping is closed (a shutdown); it returns at once when the
// watchdog is off.
func (s *Server) watchdog(ctx context.Context, stopping <-chan struct{}, addr net.Addr) {
	every, err := sdnotify.WatchdogInterval()
	if err != nil {
		s.log.Warn("systemd watchdog", "err", err)
		return
	}
	if every <= 0 {
		return
	}
	url := "http://" + loopback(addr) + "/healthz"
	client := &http.Client{Timeout: every}
	probe := func(ctx context.Context) error {
		select {
		case <-stopping:
			return nil
		default:
		}
		if err := s.health(); err != nil {
			return err
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return fmt.Errorf("/healthz: %w", err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("/healthz: %s", resp.Status)
		}
		return nil
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	feedWatchdog(ctx, tick.C, sdnotify.New(s.log).Notify, probe)
}

// feedWatchdog checks health at every tick and tells systemd: WATCHDOG=1
// while healthy, and why not in STATUS= (shown by systemctl status)
// while not, so that an unhealthy server is restarted after WatchdogSec.
// Each tick sends exactly one message.
func feedWatchdog(ctx context.Context, tick <-chan time.Time, notify func(string), health func(context.Context) error) {
	check := func() {
		if err := health(ctx); err != nil {
			if ctx.Err() == nil {
				notify("STATUS=unhealthy: " + err.Error())
			}
			return
		}
		notify("WATCHDOG=1\nSTATUS=serving")
	}
	check()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick:
			check()
		}
	}
}

// loopback is addr as a client on this host dials it: an unspecified
// address (all interfaces) becomes the loopback of its family.
func loopback(addr net.Addr) string {
	host, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return addr.String()
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
		if ip.To4() == nil {
			host = "::1"
		}
	}
	return net.JoinHostPort(host, port)
}

// janitor deletes clusters whose lease ended and, on the server leading
// the scheduler, starts the periodic checks. Every server runs it; a
// cluster two servers both try to delete is deleted once (the second finds
// it PENDING).
func (s *Server) janitor(ctx context.Context) error {
	tick := time.NewTicker(s.cfg.JanitorInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
			if _, err := s.control.ExpireDue(ctx, s.log); err != nil && ctx.Err() == nil {
				s.log.Warn("lease janitor", "err", err)
			}
			// Periodic checks are the leader's, one server's: the one
			// leading the scheduler.
			if s.engine.Leading() {
				if _, err := s.control.CheckDue(ctx, s.log); err != nil && ctx.Err() == nil {
					s.log.Warn("periodic checks", "err", err)
				}
				if _, err := s.control.PushPendingKeys(ctx); err != nil && ctx.Err() == nil {
					s.log.Warn("keys waiting for a job to settle", "err", err)
				}
				if _, err := s.engine.PruneNodeRemovals(ctx); err != nil && ctx.Err() == nil {
					s.log.Warn("node removals pruning", "err", err)
				}
				if s.cfg.EventRetention > 0 {
					if _, err := events.Prune(ctx, s.store.DB(), s.cfg.EventRetention); err != nil && ctx.Err() == nil {
						s.log.Warn("event pruning", "err", err)
					}
				}
			}
			if s.cfg.AuditRetention > 0 {
				if _, err := audit.Prune(ctx, s.store.DB(), s.cfg.AuditRetention); err != nil && ctx.Err() == nil {
					s.log.Warn("audit log pruning", "err", err)
				}
			}
		}
	}
}

// watchAgents reports agents that went silent.
func (s *Server) watchAgents(ctx context.Context) error {
	tick := time.NewTicker(fleet.HeartbeatInterval / 2)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
			lost, err := s.fleet.Lost(ctx)
			if err != nil {
				if ctx.Err() == nil {
					s.log.Warn("agent watch", "err", err)
				}
				continue
			}
			for _, id := range lost {
				s.log.Warn("agent lost: no heartbeat for three intervals", "agent", id)
				_ = s.hub.PublishAgent(ctx, events.AgentEvent{Agent: id, Kind: "LOST", At: time.Now()})
			}
		}
	}
}

// feedEngine passes every relayed event to the engine, which so learns of
// tasks claimed and finished through other servers.
func (s *Server) feedEngine(ctx context.Context) error {
	select {
	case <-s.hub.Ready():
	case <-ctx.Done():
		return nil
	}
	sub := s.hub.SubscribeAll(8192)
	defer s.hub.Unsubscribe(sub)
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev := <-sub.C:
			if sub.Lagged() {
				s.engine.Resync()
			}
			s.engine.Changed(ev.Kind, ev.Job, ev.Task, ev.State, ev.Attempt)
		case <-sub.Lost():
			// Events were lost with none behind them to carry the news.
			if sub.Lagged() {
				s.engine.Resync()
			}
		}
	}
}
