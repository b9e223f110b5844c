package provider

import (
	"context"
	"fmt"
	"net/http"

	"github.com/lambent/lambent/pkg/api"
)

// CodeInputTokensUnsupported is the code of the 501 of a token count its
// model's provider cannot make (CountUnsupported).
const CodeInputTokensUnsupported = "input_tokens_unsupported"

// Counter is a Provider that can count the input tokens of a model call
// without making it (Bedrock's CountTokens).
type Counter interface {
	// CountTokens returns the input tokens the model would read for req:
	// the input_tokens of its usage, had the call been made.
	CountTokens(ctx context.Context, req *Request) (int, error)
}

// CounterFor returns the Counter that counts the input tokens of model:
// p, or for a Router the provider model is routed to; false when that
// provider counts none.
func CounterFor(p Provider, model string) (Counter, bool) {
	if r, ok := p.(*Router); ok {
		p = r.For(model)
	}
	c, ok := p.(Counter)
	return c, ok
}

// CountUnsupported is the 501 input_tokens_unsupported of a count of
// model's input tokens that its provider cannot make; why says why. No
// retry cures it (x-should-retry: false).
func CountUnsupported(model, why string) *api.Error {
	return &api.Error{Status: http.StatusNotImplemented, Type: api.ErrTypeInvalidRequest, Code: CodeInputTokensUnsupported, NoRetry: true,
		Message: fmt.Sprintf("Counting input tokens (POST /v1/responses/input_tokens) is not supported for the model %q: %s. "+
			"A response's usage.input_tokens counts what its model calls read.", model, why)}
}
