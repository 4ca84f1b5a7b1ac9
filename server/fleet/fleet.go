// Package fleet keeps the agents: their registrations, liveness and the
// task slots each tenant gets on them (docs/task-protocol.md#registration,
// docs/task-protocol.md#slot-assignment).
package fleet

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/jmoiron/sqlx"
)

// Timings agents are told at registration.
const (
	HeartbeatInterval = 10 * time.Second
	// Agents not heard from for this long are not given slots.
	liveFor = 3 * HeartbeatInterval
)

// ErrUnknownAgent is a heartbeat or claim from an agent (or incarnation)
// the server does not know: the agent must register again.
var ErrUnknownAgent = errors.New("AGENT_UNKNOWN: register again")

// ErrSlotNotAssigned is a claim for a slot the tenant does not have on
// that agent.
var ErrSlotNotAssigned = errors.New("SLOT_NOT_ASSIGNED")

// Driver is a driver an agent carries.
type Driver struct {
	Role    string `json:"role"`
	Name    string `json:"name"`
	Version string `json:"version,omitempty"`
}

// Registration is what an agent says about itself.
type Registration struct {
	AgentID, Incarnation, Version, Host string
	Capacity                            int
	Drivers                             []Driver
}

// Agent is a registered agent.
type Agent struct {
	ID           string    `db:"id"`
	Incarnation  string    `db:"incarnation"`
	Version      string    `db:"version"`
	Host         string    `db:"host"`
	Capacity     int       `db:"capacity"`
	DriversJSON  []byte    `db:"drivers"`
	RegisteredAt time.Time `db:"registered_at"`
	LastSeen     time.Time `db:"last_seen"`
}

// Fleet is the agent registry.
type Fleet struct {
	db *sqlx.DB

	mu   sync.Mutex
	last *view // the latest read, for Check
}

// New returns the registry over a migrated database.
func New(db *sqlx.DB) *Fleet { return &Fleet{db: db} }

// Register records (or renews) an agent under a new incarnation; claims of
// older incarnations are then stale.
func (f *Fleet) Register(ctx context.Context, r Registration) error {
	if r.AgentID == "" || r.Incarnation == "" {
		return fmt.Errorf("register: agentId and incarnation are required")
	}
	if r.Capacity < 1 {
		return fmt.Errorf("register: capacity must be at least 1 (got %d)", r.Capacity)
	}
	drivers, err := json.Marshal(r.Drivers)
	if err != nil {
		return err
	}
	_, err = f.db.ExecContext(ctx, `INSERT INTO agents (id, incarnation, version, host, capacity, drivers)
		VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (id) DO UPDATE SET incarnation = excluded.incarnation, version = excluded.version, host = excluded.host,
			capacity = excluded.capacity, drivers = excluded.drivers, registered_at = now(), last_seen = now(), lost = false,
			sessions = 0, disconnected_at = NULL`,
		r.AgentID, r.Incarnation, r.Version, r.Host, r.Capacity, drivers)
	// The incarnation before no longer claims here, not even for checkFor.
	f.mu.Lock()
	f.last = nil
	f.mu.Unlock()
	return err
}

// Touch records a heartbeat; an unknown agent or incarnation is
// ErrUnknownAgent.
func (f *Fleet) Touch(ctx context.Context, agentID, incarnation string) error {
	res, err := f.db.ExecContext(ctx, `UPDATE agents SET last_seen = now(), lost = false WHERE id = $1 AND incarnation = $2`, agentID, incarnation)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return ErrUnknownAgent
	}
	return nil
}

// SessionOpened counts an open session of the agent's incarnation;
// ErrUnknownAgent when that incarnation is not the registered one.
func (f *Fleet) SessionOpened(ctx context.Context, agentID, incarnation string) error {
	res, err := f.db.ExecContext(ctx, `UPDATE agents SET sessions = sessions + 1, disconnected_at = NULL, last_seen = now(), lost = false
		WHERE id = $1 AND incarnation = $2`, agentID, incarnation)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return ErrUnknownAgent
	}
	return nil
}

// SessionClosed uncounts a session; the last one to close records when.
func (f *Fleet) SessionClosed(ctx context.Context, agentID, incarnation string) error {
	_, err := f.db.ExecContext(ctx, `UPDATE agents SET sessions = greatest(sessions - 1, 0),
			disconnected_at = CASE WHEN sessions <= 1 THEN now() ELSE disconnected_at END
		WHERE id = $1 AND incarnation = $2`, agentID, incarnation)
	return err
}

// Gone reports whether the incarnation, still the registered one, has had
// no session, on any server, for at least grace.
func (f *Fleet) Gone(ctx context.Context, agentID, incarnation string, grace time.Duration) (bool, error) {
	var gone bool
	err := f.db.GetContext(ctx, &gone, `SELECT EXISTS (SELECT 1 FROM agents WHERE id = $1 AND incarnation = $2
		AND sessions = 0 AND disconnected_at <= now() - $3 * interval '1 millisecond')`, agentID, incarnation, grace.Milliseconds())
	return gone, err
}

// Agents lists every registered agent by id.
func (f *Fleet) Agents(ctx context.Context) ([]Agent, error) {
	var as []Agent
	err := f.db.SelectContext(ctx, &as, `SELECT id, incarnation, version, host, capacity, drivers, registered_at, last_seen
		FROM agents ORDER BY id`)
	return as, err
}

// Assignments gives each live agent its slots per tenant: every tenant's
// workers spread over the live agents, most free capacity first (ties by
// id), tenants in id order. Every server computes the same answer from the
// same rows, so agents asking different servers agree.
func (f *Fleet) Assignments(ctx context.Context) (map[string]map[string]int, error) {
	v, err := f.load(ctx)
	if err != nil {
		return nil, err
	}
	return v.assign, nil
}

// view is the live agents and their assignments as read at one moment.
type view struct {
	at     time.Time
	assign map[string]map[string]int
	agents map[string]liveAgent
}

type liveAgent struct {
	incarnation string
	drivers     []byte
}

// load reads the live agents and the tenants' workers and computes the
// assignments; the view is kept for claims (Check).
func (f *Fleet) load(ctx context.Context) (*view, error) {
	var agents []struct {
		ID          string `db:"id"`
		Capacity    int    `db:"capacity"`
		Incarnation string `db:"incarnation"`
		Drivers     []byte `db:"drivers"`
	}
	if err := f.db.SelectContext(ctx, &agents, `SELECT id, capacity, incarnation, drivers FROM agents
		WHERE last_seen > now() - $1 * interval '1 millisecond' ORDER BY id`, liveFor.Milliseconds()); err != nil {
		return nil, err
	}
	var tenants []struct {
		ID      string `db:"id"`
		Workers int    `db:"workers"`
	}
	if err := f.db.SelectContext(ctx, &tenants, `SELECT id::text, workers FROM tenants WHERE workers > 0 ORDER BY id`); err != nil {
		return nil, err
	}
	v := &view{at: time.Now(), agents: make(map[string]liveAgent, len(agents))}
	free := make(map[string]int, len(agents))
	out := make(map[string]map[string]int, len(agents))
	for _, a := range agents {
		free[a.ID] = a.Capacity
		out[a.ID] = map[string]int{}
		v.agents[a.ID] = liveAgent{incarnation: a.Incarnation, drivers: a.Drivers}
	}
	ids := make([]string, len(agents))
	for i, a := range agents {
		ids[i] = a.ID
	}
	for _, t := range tenants {
		for n := 0; n < t.Workers; n++ {
			sort.SliceStable(ids, func(i, j int) bool {
				if free[ids[i]] != free[ids[j]] {
					return free[ids[i]] > free[ids[j]]
				}
				return ids[i] < ids[j]
			})
			if len(ids) == 0 || free[ids[0]] == 0 {
				break // the shortfall fills as agents join
			}
			free[ids[0]]--
			out[ids[0]][t.ID]++
		}
	}
	v.assign = out
	f.mu.Lock()
	if f.last == nil || f.last.at.Before(v.at) {
		f.last = v
	}
	f.mu.Unlock()
	return v, nil
}

// checkFor is how long a claim may go by the fleet as last read: an agent
// claims a round trip or more per task, and reading the fleet each time
// cost three queries. Anything a claim would be refused for is read
// again before refusing, so a new registration or a slot just assigned
// counts at once; an incarnation registered over, or a slot taken away,
// still counts for at most this long (the engine bounds a tenant's claims
// by its workers in any case).
const checkFor = time.Second

// Check is Drivers and Assigned for a claim in one look: the drivers the
// agent's current incarnation registered, as "role/name", or
// ErrUnknownAgent, or ErrSlotNotAssigned when it does not hold every slot
// listed of the tenant.
func (f *Fleet) Check(ctx context.Context, agentID, incarnation, tenantID string, slots []int) (map[string]bool, error) {
	f.mu.Lock()
	v := f.last
	f.mu.Unlock()
	for fresh := false; ; fresh = true {
		if v == nil || time.Since(v.at) > checkFor {
			var err error
			if v, err = f.load(ctx); err != nil {
				return nil, err
			}
			fresh = true
		}
		a, live := v.agents[agentID]
		assigned := live && a.incarnation == incarnation
		for _, s := range slots {
			assigned = assigned && s >= 0 && s < v.assign[agentID][tenantID]
		}
		if !assigned && !fresh {
			v = nil // read again before refusing
			continue
		}
		if !live || a.incarnation != incarnation {
			// Not live: an agent registers (and is live) before it claims.
			if _, err := f.Drivers(ctx, agentID, incarnation); err != nil {
				return nil, err
			}
			return nil, ErrSlotNotAssigned
		}
		if !assigned {
			return nil, ErrSlotNotAssigned
		}
		var ds []Driver
		if err := json.Unmarshal(a.drivers, &ds); err != nil {
			return nil, err
		}
		out := make(map[string]bool, len(ds))
		for _, d := range ds {
			out[d.Role+"/"+d.Name] = true
		}
		return out, nil
	}
}

// Assigned reports whether the agent holds every slot listed (numbered
// 0..n-1 per tenant) of tenant.
func (f *Fleet) Assigned(ctx context.Context, agentID, tenantID string, slots ...int) (bool, error) {
	all, err := f.Assignments(ctx)
	if err != nil {
		return false, err
	}
	for _, s := range slots {
		if s < 0 || s >= all[agentID][tenantID] {
			return false, nil
		}
	}
	return true, nil
}

// Lost marks agents silent for three heartbeat intervals as lost and
// returns their ids, each once: a lost agent is reported again only after
// it is heard from and goes silent anew.
func (f *Fleet) Lost(ctx context.Context) ([]string, error) {
	var ids []string
	err := f.db.SelectContext(ctx, &ids, `UPDATE agents SET lost = true
		WHERE NOT lost AND last_seen <= now() - $1 * interval '1 millisecond' RETURNING id`, liveFor.Milliseconds())
	return ids, err
}

// Drivers lists the drivers an agent's current incarnation registered,
// as "role/name"; another incarnation is ErrUnknownAgent.
func (f *Fleet) Drivers(ctx context.Context, agentID, incarnation string) (map[string]bool, error) {
	var raw []byte
	if err := f.db.GetContext(ctx, &raw, `SELECT drivers FROM agents WHERE id = $1 AND incarnation = $2`, agentID, incarnation); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return nil, ErrUnknownAgent
		}
		return nil, err
	}
	var ds []Driver
	if err := json.Unmarshal(raw, &ds); err != nil {
		return nil, err
	}
	out := make(map[string]bool, len(ds))
	for _, d := range ds {
		out[d.Role+"/"+d.Name] = true
	}
	return out, nil
}

// Offered reports whether any live agent carries the driver.
func (f *Fleet) Offered(ctx context.Context, role, name string) (bool, error) {
	var ok bool
	err := f.db.GetContext(ctx, &ok, `SELECT EXISTS (SELECT 1 FROM agents
		WHERE last_seen > now() - $1 * interval '1 millisecond'
			AND drivers @> jsonb_build_array(jsonb_build_object('role', $2::text, 'name', $3::text)))`,
		liveFor.Milliseconds(), role, name)
	return ok, err
}
