package graph

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/cooprhq/coopr/graph/model"
	"github.com/cooprhq/coopr/server/webhook"
)

// The API's WebhookEvent is the event's name in upper case with _ for
// the dot (job.started is JOB_STARTED).
func eventOf(e model.WebhookEvent) webhook.Event {
	return webhook.Event(strings.ToLower(strings.Replace(string(e), "_", ".", 1)))
}

func eventModel(e string) model.WebhookEvent {
	return model.WebhookEvent(strings.ToUpper(strings.Replace(e, ".", "_", 1)))
}

func (r *Resolver) createWebhook(ctx context.Context, in model.WebhookInput) (*model.NewWebhook, error) {
	p, err := admin(ctx, "making a webhook")
	if err != nil {
		return nil, err
	}
	w := webhook.Input{URL: in.URL}
	for _, e := range in.Events {
		w.Events = append(w.Events, eventOf(e))
	}
	if in.Template != nil {
		w.Template = *in.Template
	}
	if in.Secret != nil {
		w.Secret = *in.Secret
	}
	made, secret, err := r.Hooks.Create(ctx, p.TenantID, p.User, w)
	if err != nil {
		return nil, err
	}
	return &model.NewWebhook{Webhook: made, Secret: secret}, nil
}

func (r *Resolver) webhookEvents(w *webhook.Webhook) []model.WebhookEvent {
	out := make([]model.WebhookEvent, len(w.Events))
	for i, e := range w.Events {
		out[i] = eventModel(e)
	}
	return out
}

func (r *Resolver) webhookDeliveries(ctx context.Context, w *webhook.Webhook, first *int, after *string) ([]*webhook.Delivery, error) {
	p, err := admin(ctx, "reading a webhook's deliveries")
	if err != nil {
		return nil, err
	}
	n := 20
	if first != nil {
		n = *first
	}
	if n < 1 || n > 500 {
		return nil, invalid("first", "must be 1 to 500 (got %d)", n)
	}
	cursor := ""
	if after != nil {
		cursor = *after
	}
	ds, err := r.Hooks.Deliveries(ctx, p.TenantID, w.ID, n, cursor)
	if err != nil {
		return nil, err
	}
	out := make([]*webhook.Delivery, len(ds))
	for i := range ds {
		out[i] = &ds[i]
	}
	return out, nil
}

func deliveryPayload(d *webhook.Delivery) (any, error) {
	var v any
	return v, json.Unmarshal(d.Payload, &v)
}
