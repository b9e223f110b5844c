package engine

import (
	"time"

	"github.com/lambent/lambent/pkg/api"
)

// timing accumulates a response's lambent.timing (api.Timing) on the
// engine's clock (Config.Now): when its loop started, and the time its
// model calls and tool batches took. A background response keeps it in
// the response it stores at each checkpoint and hand-off, and the next
// invocation continues from there (startTiming).
type timing struct {
	start        time.Time
	model, tools time.Duration
}

// startTiming starts the timing of r's loop at now, or continues the
// timing stored with a resumed background response.
func (r *run) startTiming(now time.Time) {
	if !r.timing.start.IsZero() {
		return
	}
	if l := r.resp.Lambent; l != nil && l.Timing != nil {
		t := l.Timing
		r.timing = timing{start: t.StartedAt, model: time.Duration(t.ModelMS) * time.Millisecond, tools: time.Duration(t.ToolMS) * time.Millisecond}
		return
	}
	r.timing.start = now
}

// modelTook counts a model call's time: for the deadline budget and the
// response's timing.
func (r *run) modelTook(d time.Duration) {
	measure(&r.budget.maxModel, d)
	r.timing.model += d
}

// toolsTook counts a tool batch's time (a turn's calls, run concurrently,
// or an output's validators): for the deadline budget and the timing.
func (r *run) toolsTook(d time.Duration) {
	measure(&r.budget.maxTools, d)
	r.timing.tools += d
}

// stampTiming sets resp's timing (r's response, or the clone a
// checkpoint stores) as of now. A response that never ran a loop (a
// queued background response cancelled or failed) starts and ends now.
func (r *run) stampTiming(resp *api.Response, now time.Time) {
	r.startTiming(now)
	start, end := r.timing.start.UTC().Truncate(time.Millisecond), now.UTC().Truncate(time.Millisecond)
	resp.SetTiming(api.Timing{StartedAt: start, EndedAt: end, DurationMS: end.Sub(start).Milliseconds(),
		ModelMS: r.timing.model.Milliseconds(), ToolMS: r.timing.tools.Milliseconds()})
}
