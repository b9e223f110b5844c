package engine

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/tools"
)

// Every terminal state carries lambent.timing, the same in the stream's
// terminal event and in the stored response, measured on the engine's
// clock: model calls of 2 s, tool batches of 3 s. completed_at stays as
// OpenAI sets it (completed and requires_action only).
func TestTimingOnEveryTerminalState(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	cases := []struct {
		name   string
		status api.Status
		// steps builds the script: took makes a step take d.
		steps                 func(took func(time.Duration, step) step, cancel func()) []step
		model, tool, duration time.Duration
		completedAt           bool
		maxTurns              int
	}{
		{name: "completed", status: api.StatusCompleted, completedAt: true,
			steps: func(took func(time.Duration, step) step, _ func()) []step {
				return []step{took(2*time.Second, calls(1, 1, call("c1", "t", `{}`))), took(2*time.Second, text("done", 1, 1))}
			}, model: 4 * time.Second, tool: 3 * time.Second, duration: 7 * time.Second},
		{name: "requires_action", status: api.StatusRequiresAction, completedAt: true,
			steps: func(took func(time.Duration, step) step, _ func()) []step {
				return []step{took(2*time.Second, calls(1, 1, call("c1", "client_fn", `{}`)))}
			}, model: 2 * time.Second, duration: 2 * time.Second},
		{name: "incomplete", status: api.StatusIncomplete, maxTurns: 1,
			steps: func(took func(time.Duration, step) step, _ func()) []step {
				return []step{took(2*time.Second, calls(1, 1, call("c1", "t", `{}`)))}
			}, model: 2 * time.Second, tool: 3 * time.Second, duration: 5 * time.Second},
		{name: "failed", status: api.StatusFailed,
			steps: func(took func(time.Duration, step) step, _ func()) []step {
				s := took(time.Second, step{err: &api.Error{Status: 502, Type: api.ErrTypeUpstream, Code: "upstream_error", Message: "the model failed"}})
				return []step{s}
			}, model: time.Second, duration: time.Second},
		{name: "cancelled", status: api.StatusCancelled,
			steps: func(took func(time.Duration, step) step, cancel func()) []step {
				s := took(time.Second, calls(1, 1))
				advance := s.hook
				s.hook = func(ctx context.Context) { advance(ctx); cancel() }
				return []step{s}
			}, model: time.Second, duration: time.Second},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			clock := &fakeClock{t: start}
			took := func(d time.Duration, s step) step {
				s.hook = func(context.Context) { clock.advance(d) }
				return s
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			m := newMock(func(_ context.Context, c tools.ToolCall) (*tools.ToolResult, error) {
				clock.advance(3 * time.Second)
				return &tools.ToolResult{Output: "ok"}, nil
			}, "t")
			e, st := newEngine(t, script(c.steps(took, cancel)...), m, func(cfg *Config) {
				cfg.Now = clock.Now
				cfg.Loop.MaxTurns = c.maxTurns
			})
			rec := &recorder{}
			body := `{"input":"go","stream":true,"tools":[{"type":"lambent:t"},{"type":"function","name":"client_fn","parameters":{"type":"object"}}]}`
			require.NoError(t, e.CreateResponse(ctx, decodeReq(t, body), rec))
			evs := rec.parsed(t)
			var last struct {
				Response struct {
					ID          string     `json:"id"`
					Status      api.Status `json:"status"`
					CompletedAt *int64     `json:"completed_at"`
					Lambent     *api.LambentInfo
				} `json:"response"`
			}
			require.NoError(t, json.Unmarshal(evs[len(evs)-1].Data, &last))
			got := last.Response
			assert.Equal(t, c.status, got.Status)
			require.NotNil(t, got.Lambent)
			want := api.Timing{StartedAt: start, EndedAt: start.Add(c.duration), DurationMS: c.duration.Milliseconds(),
				ModelMS: c.model.Milliseconds(), ToolMS: c.tool.Milliseconds()}
			require.NotNil(t, got.Lambent.Timing)
			assert.Equal(t, want, *got.Lambent.Timing)
			if c.completedAt {
				require.NotNil(t, got.CompletedAt)
				assert.Equal(t, want.EndedAt.Unix(), *got.CompletedAt)
			} else {
				assert.Nil(t, got.CompletedAt)
			}
			stored, err := st.Get(context.Background(), got.ID)
			require.NoError(t, err)
			require.NotNil(t, stored.Response.Lambent)
			assert.Equal(t, want, *stored.Response.Lambent.Timing)
		})
	}
}

// A non-streamed response carries the same timing in its body.
func TestTimingInTheResponseBody(t *testing.T) {
	t.Parallel()
	clock := &fakeClock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	s := text("hi", 1, 1)
	s.hook = func(context.Context) { clock.advance(1500 * time.Millisecond) }
	e, _ := newEngine(t, script(s), nil, func(c *Config) { c.Now = clock.Now })
	rec, err := run1(t, e, `{"input":"x"}`)
	require.NoError(t, err)
	var body map[string]any
	require.NoError(t, json.Unmarshal(rec.resp, &body))
	assert.Equal(t, map[string]any{"started_at": "2026-01-02T03:04:05Z", "ended_at": "2026-01-02T03:04:06.5Z",
		"duration_ms": float64(1500), "model_ms": float64(1500), "tool_ms": float64(0)}, body["lambent"].(map[string]any)["timing"])
}
