package hooks_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/pkg/awsjson"
	"github.com/lambent/lambent/pkg/hooks"
)

// invokerFunc is a hooks.LambdaInvoker of a function.
type invokerFunc func(context.Context, awsjson.InvokeInput) (*awsjson.InvokeOutput, error)

func (f invokerFunc) Invoke(ctx context.Context, in awsjson.InvokeInput) (*awsjson.InvokeOutput, error) {
	return f(ctx, in)
}

// TestLambdaSinkResendsUndelivered: an event whose invocation provably
// never reached Lambda (its connection could not be dialed) is sent once
// more, as a tool's invocation is; one that may have reached it (EOF after
// the request went out) is not, nor is an undelivered one twice.
func TestLambdaSinkResendsUndelivered(t *testing.T) {
	dialErr := &url.Error{Op: "Post", URL: "http://lambda", Err: &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}}
	eofErr := &url.Error{Op: "Post", URL: "http://lambda", Err: errors.New("EOF")}
	for _, tc := range []struct {
		name  string
		fails []error
		calls int
		ok    bool
	}{
		{"undelivered once", []error{dialErr}, 2, true},
		{"undelivered twice", []error{dialErr, dialErr}, 2, false},
		{"maybe delivered", []error{eofErr}, 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls := 0
			sink := &hooks.Lambda{Function: "audit", Client: invokerFunc(func(context.Context, awsjson.InvokeInput) (*awsjson.InvokeOutput, error) {
				calls++
				if calls <= len(tc.fails) {
					return nil, tc.fails[calls-1]
				}
				return &awsjson.InvokeOutput{StatusCode: http.StatusAccepted}, nil
			})}
			err := sink.Deliver(t.Context(), event(hooks.EventToolResult, "c1"), []byte(`{}`))
			assert.Equal(t, tc.calls, calls)
			if tc.ok {
				require.NoError(t, err)
			} else {
				require.Error(t, err)
			}
		})
	}
}
