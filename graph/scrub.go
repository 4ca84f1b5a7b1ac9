package graph

import (
	"context"

	"github.com/cooprhq/coopr/internal/scrub"
)

// Everything an agent reports as text (output chunks, a result's message
// and tails, a release's reason) is scrubbed here of every sensitive value
// the task's payload carried, before it is stored, published or shown
// (docs/security.md#scrubbing-task-output). The agent scrubs too; this does
// not trust it to.

// scrubChunk scrubs an output chunk of the attempt of cluster, carrying
// what a value split between chunks needs to the next one.
func (r *Resolver) scrubChunk(ctx context.Context, taskID string, attempt int, cluster, stream, chunk string) (string, error) {
	return r.scrubs.Chunk(taskID, attempt, stream, chunk, func() (*scrub.Set, error) {
		return r.Control.Scrubber(ctx, cluster)
	})
}

// endingSecrets is the sensitive values of an attempt that is ending (its
// output chunks' carries are dropped). The claim is not checked here: the
// finish or release that follows checks it, and the values only ever
// scrub the caller's own text.
func (r *Resolver) endingSecrets(ctx context.Context, taskID string, attempt int) (*scrub.Set, error) {
	if set := r.scrubs.Done(taskID, attempt); set != nil {
		return set, nil
	}
	return r.Control.TaskScrubber(ctx, taskID)
}

// scrubText hides the values of set in an agent's text, which may have
// been cut from a longer one (a tail), and then bounds it as cleanOutput
// does: scrubbed first, so that no cut leaves part of a value.
func scrubText(set *scrub.Set, s string, max int) string {
	return cleanOutput(set.Text(cleanOutput(s, 0)), max)
}

// hasText reports whether s holds some text to scrub.
func hasText(s *string) bool { return s != nil && *s != "" }
