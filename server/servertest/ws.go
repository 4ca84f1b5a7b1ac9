package servertest

import (
	"context"
	"time"

	"github.com/cooprhq/coopr/client"
)

// Subscription is a client subscription with test-friendly reads.
type Subscription struct {
	*client.Subscription
}

// Subscribe starts a subscription with token.
func (s *Server) Subscribe(token, query string, vars map[string]any) (*Subscription, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sub, err := (&client.Client{URL: s.URL, Token: token}).Subscribe(ctx, query, vars)
	if err != nil {
		return nil, err
	}
	return &Subscription{sub}, nil
}

// Next waits up to timeout for the next result. A timeout closes the
// websocket: a test expecting silence must read in the background.
func (sub *Subscription) Next(timeout time.Duration) (*Response, bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return sub.Subscription.Next(ctx)
}
