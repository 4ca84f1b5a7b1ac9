package control

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/cooprhq/coopr/internal/scrub"
	"github.com/cooprhq/coopr/planner"
	"github.com/cooprhq/coopr/server/engine"
	"github.com/cooprhq/coopr/store"
)

// Cluster is a cluster record.
type Cluster struct {
	ID          string              `db:"id"`
	TenantID    string              `db:"tenant_id"`
	Name        string              `db:"name"`
	Description string              `db:"description"`
	Owner       string              `db:"owner"`
	Status      engine.ClusterState `db:"status"`
	Message     string              `db:"message"`
	Template    string              `db:"template"`
	Provider    string              `db:"provider"`
	Services    pq.StringArray      `db:"services"`
	Size        int                 `db:"size"`
	DNSSuffix   string              `db:"dns_suffix"`
	ConfigJSON  []byte              `db:"config"`
	LatestJobID sql.NullString      `db:"latest_job_id"`
	ExpireAt    *time.Time          `db:"expire_at"`
	CreatedAt   time.Time           `db:"created_at"`
	UpdatedAt   time.Time           `db:"updated_at"`
	// TemplateVersion is the template version the cluster was made from or
	// last synced to; 0 when not recorded.
	TemplateVersion int `db:"template_version"`
}

// Config decodes the cluster's config.
func (c *Cluster) Config() (map[string]any, error) {
	var m map[string]any
	return m, json.Unmarshal(c.ConfigJSON, &m)
}

const clusterColumns = `id, tenant_id, name, description, owner, status, message, template, provider, services, size,
	dns_suffix, config, latest_job_id, expire_at, created_at, updated_at,
	coalesce((snapshot->>'templateVersion')::int, 0) AS template_version`

// listColumns are clusterColumns without the config, which can be tens of
// kilobytes: a page of 500 clusters is read without them, and Config
// reads the one asked for.
const listColumns = `id, tenant_id, name, description, owner, status, message, template, provider, services, size,
	dns_suffix, NULL AS config, latest_job_id, expire_at, created_at, updated_at,
	coalesce((snapshot->>'templateVersion')::int, 0) AS template_version`

// visible is the SQL condition for clusters the caller may see: its tenant's,
// and only its own unless it is an admin
// (docs/operations.md#roles-and-visibility).
func visible(p store.Principal) (string, []any) {
	owner := p.User
	if p.Admin() {
		owner = ""
	}
	return `tenant_id = $1 AND ($2 = '' OR owner = $2)`, []any{p.TenantID, owner}
}

// Get returns a cluster the caller may see; any other is ErrNotFound.
// Snapshot is the database's current snapshot as text (pg_current_snapshot):
// taken before a read, it tells which relayed changes that read may
// already hold (events.Snapshot).
func (s *Service) Snapshot(ctx context.Context) (string, error) {
	var snap string
	err := s.db.GetContext(ctx, &snap, `SELECT pg_current_snapshot()::text`)
	return snap, err
}

func (s *Service) Get(ctx context.Context, p store.Principal, id string) (*Cluster, error) {
	cond, args := visible(p)
	var c Cluster
	err := s.db.GetContext(ctx, &c, `SELECT `+clusterColumns+` FROM clusters WHERE `+cond+` AND id = $3`, append(args, id)...)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("cluster %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	return &c, nil
}

// Filter narrows a cluster listing.
type Filter struct {
	Statuses []string
	Template string
	Name     string // exact
}

// List returns up to first clusters the caller may see, newest first,
// after the cursor (a cluster id from an earlier page), and the cursor of
// the next page ("" at the end).
func (s *Service) List(ctx context.Context, p store.Principal, f Filter, first int, after string) ([]Cluster, string, error) {
	if first < 1 || first > 500 {
		return nil, "", invalid("first", "must be 1–500 (got %d)", first)
	}
	cond, args := visible(p)
	// Ids are zero-padded numbers that may outgrow the padding: order by
	// length first, so that text order is numeric order.
	q := `SELECT ` + listColumns + ` FROM clusters WHERE ` + cond
	args = append(args, pq.Array(f.Statuses), f.Template, after, f.Name)
	q += ` AND (coalesce(cardinality($3::text[]), 0) = 0 OR status = ANY($3)) AND ($4 = '' OR template = $4)
		AND ($5 = '' OR (length(id), id) < (length($5), $5)) AND ($6 = '' OR name = $6)
		ORDER BY length(id) DESC, id DESC LIMIT ` + strconv.Itoa(first+1)
	var cs []Cluster
	if err := s.db.SelectContext(ctx, &cs, q, args...); err != nil {
		return nil, "", err
	}
	next := ""
	if len(cs) > first {
		cs = cs[:first]
		next = cs[first-1].ID
	}
	return cs, next, nil
}

// Config returns a cluster's config as stored, for a cluster read by List
// (whose ConfigJSON is nil). The caller has already seen the cluster.
func (s *Service) Config(ctx context.Context, clusterID string) ([]byte, error) {
	var b []byte
	err := s.db.GetContext(ctx, &b, `SELECT config FROM clusters WHERE id = $1`, clusterID)
	return b, err
}

// Node is a node record.
type Node struct {
	ID           string         `db:"id"`
	NodeNum      int            `db:"nodenum"`
	Hostname     string         `db:"hostname"`
	Services     pq.StringArray `db:"services"`
	IPsJSON      []byte         `db:"ipaddresses"`
	HardwareType string         `db:"hardwaretype"`
	ImageType    string         `db:"imagetype"`
	Flavor       string         `db:"flavor"`
	Image        string         `db:"image"`
	SSHUser      string         `db:"sshuser"`
	Leaving      bool           `db:"leaving"`
	// UnreachableSince is when a task found the node not there; nil
	// while nothing is known wrong. StateReason says why.
	UnreachableSince *time.Time `db:"unreachable_since"`
	StateReason      string     `db:"unreachable_reason"`
	// HostKeysJSON is the node's pinned SSH host keys, a JSON list in
	// authorized_keys format: BOOTSTRAP's pin (facts node.hostKeys), else
	// CREATE's (vm.hostKeys), else none yet.
	HostKeysJSON []byte `db:"hostkeys"`
	// Deleted is set on the nodes of a TERMINATED cluster: their machines
	// are gone, whatever the last tasks on them left recorded.
	Deleted bool `db:"deleted"`

	states *stateLoader // shared by the nodes of one Nodes call
}

// HostKeys decodes the node's pinned host keys (authorized_keys lines).
func (n *Node) HostKeys() ([]string, error) {
	var keys []string
	if len(n.HostKeysJSON) == 0 {
		return nil, nil
	}
	if err := json.Unmarshal(n.HostKeysJSON, &keys); err != nil {
		return nil, fmt.Errorf("node %s: host keys: %w", n.ID, err)
	}
	return keys, nil
}

// IPAddresses decodes the node's address map.
func (n *Node) IPAddresses() (map[string]string, error) {
	var m map[string]string
	return m, json.Unmarshal(n.IPsJSON, &m)
}

// Nodes lists a cluster's nodes by number. The caller has already seen
// the cluster through Get or List.
func (s *Service) Nodes(ctx context.Context, clusterID string) ([]Node, error) {
	var ns []Node
	err := s.db.SelectContext(ctx, &ns, `SELECT id, nodenum, hostname, services, ipaddresses, hardwaretype, imagetype,
		flavor, image, sshuser, leaving, unreachable_since, unreachable_reason,
		coalesce(facts #> '{node,hostKeys}', facts #> '{vm,hostKeys}', '[]') AS hostkeys,
		coalesce((SELECT status = 'TERMINATED' FROM clusters WHERE id = $1), false) AS deleted
		FROM nodes WHERE cluster_id = $1 ORDER BY nodenum`, clusterID)
	l := &stateLoader{s: s, cluster: clusterID}
	for i := range ns {
		ns[i].states = l
	}
	return ns, err
}

// Job is a job record.
type Job struct {
	ID        string          `db:"id"`
	ClusterID string          `db:"cluster_id"`
	Action    string          `db:"action"`
	State     engine.JobState `db:"state"`
	Message   string          `db:"message"`
	PlanHash  string          `db:"plan_hash"`
	CreatedAt time.Time       `db:"created_at"`
	UpdatedAt time.Time       `db:"updated_at"`
}

const jobColumns = `j.id, j.cluster_id, j.action, j.state, j.message, j.plan_hash, j.created_at, j.updated_at`

// Job returns a job of a cluster the caller may see.
func (s *Service) Job(ctx context.Context, p store.Principal, id string) (*Job, error) {
	owner := p.User
	if p.Admin() {
		owner = ""
	}
	var j Job
	err := s.db.GetContext(ctx, &j, `SELECT `+jobColumns+` FROM jobs j JOIN clusters c ON c.id = j.cluster_id
		WHERE c.tenant_id = $1 AND ($2 = '' OR c.owner = $2) AND j.id = $3`, p.TenantID, owner, id)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("job %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	return &j, nil
}

// Jobs lists a cluster's jobs, newest first.
func (s *Service) Jobs(ctx context.Context, clusterID string) ([]Job, error) {
	var js []Job
	err := s.db.SelectContext(ctx, &js, `SELECT `+jobColumns+` FROM jobs j WHERE j.cluster_id = $1 ORDER BY j.created_at DESC, j.id DESC`, clusterID)
	return js, err
}

// Task is a task record.
type Task struct {
	ID          string         `db:"id"`
	Idx         int            `db:"idx"`
	NodeID      string         `db:"node_id"`
	Hostname    sql.NullString `db:"hostname"`
	Action      string         `db:"action"`
	Service     string         `db:"service"`
	Stage       int            `db:"stage"`
	State       string         `db:"state"`
	Attempt     int            `db:"attempt"`
	Failures    int            `db:"failures"`
	MaxAttempts int            `db:"max_attempts"`
	Message     string         `db:"message"`
	BestEffort  bool           `db:"best_effort"`
}

const taskColumns = `t.id, t.idx, t.node_id, n.hostname, t.action, t.service, t.stage, t.state,
		t.attempt, t.failures, t.max_attempts, t.message, t.best_effort
		FROM tasks t LEFT JOIN nodes n ON n.id = t.node_id AND t.node_id <> ''`

// Tasks lists a job's tasks in plan order.
func (s *Service) Tasks(ctx context.Context, jobID string) ([]Task, error) {
	var ts []Task
	err := s.db.SelectContext(ctx, &ts, `SELECT `+taskColumns+` WHERE t.job_id = $1 ORDER BY t.idx`, jobID)
	return ts, err
}

// TasksPage lists up to n of a job's tasks in plan order, those after the
// task after ("" for the first page). An after that is not the job's task
// is ErrNotFound: a page that silently restarted would show tasks twice.
func (s *Service) TasksPage(ctx context.Context, jobID, after string, n int) ([]Task, error) {
	from := -1
	if after != "" {
		err := s.db.GetContext(ctx, &from, `SELECT idx FROM tasks WHERE id = $2 AND job_id = $1`, jobID, after)
		if errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("task %s of job %s: %w", after, jobID, ErrNotFound)
		}
		if err != nil {
			return nil, err
		}
	}
	ts := []Task{}
	err := s.db.SelectContext(ctx, &ts, `SELECT `+taskColumns+` WHERE t.job_id = $1 AND t.idx > $2 ORDER BY t.idx LIMIT $3`,
		jobID, from, n)
	return ts, err
}

// Task is one task of a job, ErrNotFound when the job has none by that id.
func (s *Service) Task(ctx context.Context, jobID, id string) (*Task, error) {
	var t Task
	err := s.db.GetContext(ctx, &t, `SELECT `+taskColumns+` WHERE t.id = $2 AND t.job_id = $1`, jobID, id)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("task %s of job %s: %w", id, jobID, ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	return &t, nil
}

// Counts tallies a job's tasks by state.
func (s *Service) Counts(ctx context.Context, jobID string) (map[engine.TaskState]int, error) {
	var rows []struct {
		State engine.TaskState `db:"state"`
		N     int              `db:"n"`
	}
	if err := s.db.SelectContext(ctx, &rows, `SELECT state, count(*) AS n FROM tasks WHERE job_id = $1 GROUP BY state`, jobID); err != nil {
		return nil, err
	}
	out := map[engine.TaskState]int{}
	for _, r := range rows {
		out[r.State] = r.N
	}
	return out, nil
}

// Delete plans and submits CLUSTER_DELETE. A TERMINATED cluster is left as it
// is (nil job); a cluster with a job in flight is ErrConflict. providerFields,
// when given, replace the cluster's stored ones as on any other operation
// (docs/operations.md#provider-fields): a delete may need credentials that
// changed.
func (s *Service) Delete(ctx context.Context, p store.Principal, id, expectedPlanHash string, providerFields map[string]any) (*Job, error) {
	c, err := s.Get(ctx, p, id)
	if err != nil {
		return nil, err
	}
	if c.Status == engine.ClusterTerminated {
		return nil, nil
	}
	if c.Status == engine.ClusterPending && c.LatestJobID.Valid {
		// Being deleted already: a second delete (a retry, another user's
		// click) is the first one, not a conflict.
		if j, err := s.Job(ctx, p, c.LatestJobID.String); err == nil && j.Action == string(planner.ClusterDelete) &&
			(j.State == engine.JobRunning || j.State == engine.JobPaused) {
			return j, nil
		}
	}
	var jobID string
	err = s.tx(ctx, func(tx *sqlx.Tx) error {
		snap, nodes, err := s.loadForPlan(ctx, tx, id)
		if err != nil {
			return err
		}
		if providerFields != nil {
			// None given, the delete runs with what is stored, checked or
			// not: the lease janitor must be able to delete too.
			var op OpPlan
			if err := s.opFields(ctx, tx, p, id, snap, providerFields, &op); err != nil {
				return err
			}
			if err := s.creds.Put(ctx, tx, id, nsProviderFields, op.sensitive); err != nil {
				return err
			}
			b, err := json.Marshal(snap)
			if err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, `UPDATE clusters SET snapshot = $2, updated_at = now() WHERE id = $1`, id, b); err != nil {
				return err
			}
		}
		plan, err := planner.Build(&planner.Request{Action: planner.ClusterDelete, Services: snap.Services, Nodes: nodes,
			Network: snap.Provider != nil && snap.Provider.Network != nil})
		if err != nil {
			return err
		}
		if expectedPlanHash != "" && plan.Hash() != expectedPlanHash {
			return fmt.Errorf("%w: the plan differs from the one expected (plan hash %s)", ErrConflict, plan.Hash())
		}
		jobID, err = s.engine.SubmitTx(ctx, tx, engine.JobSpec{TenantID: p.TenantID, ClusterID: id,
			Action: planner.ClusterDelete, Plan: plan, Services: snap.Services})
		return err
	})
	if err != nil {
		return nil, err
	}
	s.engine.Submitted(jobID)
	return s.Job(ctx, p, jobID)
}

// loadForPlan reads a cluster's snapshot and nodes, locking the cluster.
func (s *Service) loadForPlan(ctx context.Context, tx *sqlx.Tx, id string) (*snapshot, []planner.Node, error) {
	var raw []byte
	if err := tx.GetContext(ctx, &raw, `SELECT snapshot FROM clusters WHERE id = $1 FOR UPDATE`, id); err != nil {
		return nil, nil, err
	}
	var snap snapshot
	if err := json.Unmarshal(raw, &snap); err != nil {
		return nil, nil, fmt.Errorf("cluster %s snapshot: %w", id, err)
	}
	var rows []struct {
		ID       string         `db:"id"`
		NodeNum  int            `db:"nodenum"`
		Services pq.StringArray `db:"services"`
	}
	if err := tx.SelectContext(ctx, &rows, `SELECT id, nodenum, services FROM nodes WHERE cluster_id = $1 ORDER BY nodenum`, id); err != nil {
		return nil, nil, err
	}
	nodes := make([]planner.Node, len(rows))
	for i, r := range rows {
		nodes[i] = planner.Node{ID: r.ID, NodeNum: r.NodeNum, Services: r.Services}
	}
	return &snap, nodes, nil
}

// JobControl is a change of a running or failed job.
type JobControl int

// Job controls (docs/operations.md#pause-resume-and-abort,
// docs/operations.md#retrying-a-failed-job).
const (
	Pause JobControl = iota
	Resume
	Abort
	Retry
)

// Control pauses, resumes, aborts or retries a job of a cluster the caller
// may see.
func (s *Service) Control(ctx context.Context, p store.Principal, jobID string, c JobControl) (*Job, error) {
	if _, err := s.Job(ctx, p, jobID); err != nil {
		return nil, err
	}
	var err error
	switch c {
	case Pause:
		err = s.engine.Pause(ctx, jobID)
	case Resume:
		err = s.engine.Resume(ctx, jobID)
	case Abort:
		err = s.engine.Abort(ctx, jobID)
	case Retry:
		err = s.engine.RetryJob(ctx, jobID)
	}
	if err != nil {
		return nil, err
	}
	return s.Job(ctx, p, jobID)
}

// TaskCluster returns the cluster of a task the caller may see.
func (s *Service) TaskCluster(ctx context.Context, p store.Principal, taskID string) (string, error) {
	owner := p.User
	if p.Admin() {
		owner = ""
	}
	var cluster string
	err := s.db.GetContext(ctx, &cluster, `SELECT c.id FROM tasks t JOIN jobs j ON j.id = t.job_id JOIN clusters c ON c.id = j.cluster_id
		WHERE c.tenant_id = $1 AND ($2 = '' OR c.owner = $2) AND t.id = $3`, p.TenantID, owner, taskID)
	if errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("task %s: %w", taskID, ErrNotFound)
	}
	return cluster, err
}

// Scrubber holds every sensitive value of a cluster (its credential store
// namespaces: the provider's sensitive fields and admin values, its key,
// drivers' secrets), to hide in what its tasks report.
func (s *Service) Scrubber(ctx context.Context, clusterID string) (*scrub.Set, error) {
	all, err := s.creds.Get(ctx, s.db, clusterID)
	if err != nil {
		return nil, err
	}
	return scrub.New(all), nil
}

// TaskScrubber is Scrubber of the cluster of a task.
func (s *Service) TaskScrubber(ctx context.Context, taskID string) (*scrub.Set, error) {
	all, err := s.creds.ForTask(ctx, s.db, taskID)
	if err != nil {
		return nil, err
	}
	return scrub.New(all), nil
}

// Attempt is one attempt of a task.
type Attempt struct {
	Attempt    int        `db:"attempt"`
	Agent      string     `db:"agent_id"`
	ClaimedAt  time.Time  `db:"claimed_at"`
	FinishedAt *time.Time `db:"finished_at"`
	Status     *int       `db:"status"`
	Message    string     `db:"message"`
	Retryable  *bool      `db:"retryable"`
	StdoutTail string     `db:"stdout_tail"`
	StderrTail string     `db:"stderr_tail"`
}

// Attempts lists a task's attempts, first to last.
func (s *Service) Attempts(ctx context.Context, taskID string) ([]Attempt, error) {
	var as []Attempt
	err := s.db.SelectContext(ctx, &as, `SELECT attempt, agent_id, claimed_at, finished_at, status, message, retryable,
		stdout_tail, stderr_tail FROM task_attempts WHERE task_id = $1 ORDER BY attempt`, taskID)
	return as, err
}
