package engine

import (
	"context"
	"database/sql/driver"
	"sync"

	"github.com/jmoiron/sqlx"
)

// sessions keeps connections set up for one hot statement. The claim and
// finish statements take arrays, for which Postgres's generic plan is
// costed for ten elements and so loses to a custom plan made again at every
// execution; their generic plans are the right ones (primary key lookups),
// so these sessions force them and save the planning on every call.
type sessions struct {
	db      *sqlx.DB
	setup   []string // SET statements run once per connection
	query   string
	maxIdle int

	mu   sync.Mutex
	idle []*session
}

type session struct {
	conn *sqlx.Conn
	stmt *sqlx.Stmt
}

func (p *sessions) get(ctx context.Context) (*session, error) {
	p.mu.Lock()
	if n := len(p.idle); n > 0 {
		s := p.idle[n-1]
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		return s, nil
	}
	p.mu.Unlock()
	conn, err := p.db.Connx(ctx)
	if err != nil {
		return nil, err
	}
	for _, q := range p.setup {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			closeConn(conn)
			return nil, err
		}
	}
	stmt, err := conn.PreparexContext(ctx, p.query)
	if err != nil {
		closeConn(conn)
		return nil, err
	}
	return &session{conn: conn, stmt: stmt}, nil
}

// put keeps a session for the next call unless it failed (it may be
// broken) or enough are kept already.
func (p *sessions) put(s *session, err error) {
	p.mu.Lock()
	if err == nil && len(p.idle) < p.maxIdle {
		p.idle = append(p.idle, s)
		p.mu.Unlock()
		return
	}
	p.mu.Unlock()
	_ = s.stmt.Close()
	closeConn(s.conn)
}

// closeConn closes a session's connection for good: returned to the pool,
// its settings (synchronous_commit off, quiet events) would reach whoever
// takes it next.
func closeConn(c *sqlx.Conn) {
	_ = c.Raw(func(any) error { return driver.ErrBadConn })
	_ = c.Close()
}

// selectContext runs the statement on a kept session.
func (p *sessions) selectContext(ctx context.Context, dest any, args ...any) error {
	s, err := p.get(ctx)
	if err != nil {
		return err
	}
	err = s.stmt.SelectContext(ctx, dest, args...)
	p.put(s, err)
	return err
}

// close ends the kept sessions (the engine stopping): kept outside the
// pool, they would hold their connections until the process ends.
func (p *sessions) close() {
	p.mu.Lock()
	idle := p.idle
	p.idle = nil
	p.mu.Unlock()
	for _, s := range idle {
		_ = s.stmt.Close()
		closeConn(s.conn)
	}
}

// prepared is a statement prepared once on the pool, on each connection
// as it first runs there, for a hot statement that needs no session of
// its own: a statement sent with arguments but not prepared is planned at
// every call.
type prepared struct {
	db    *sqlx.DB
	query string

	mu   sync.Mutex
	stmt *sqlx.Stmt
}

func (p *prepared) selectContext(ctx context.Context, dest any, args ...any) error {
	p.mu.Lock()
	if p.stmt == nil {
		stmt, err := p.db.PreparexContext(ctx, p.query)
		if err != nil {
			p.mu.Unlock()
			return err
		}
		p.stmt = stmt
	}
	stmt := p.stmt
	p.mu.Unlock()
	return stmt.SelectContext(ctx, dest, args...)
}

func (p *prepared) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stmt != nil {
		_ = p.stmt.Close()
		p.stmt = nil
	}
}
