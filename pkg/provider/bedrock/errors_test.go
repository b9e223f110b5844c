package bedrock_test

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/internal/testing/fakebedrock"
	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/provider"
	"github.com/lambent/lambent/pkg/provider/bedrock"
)

func hi(model string) *provider.Request {
	return &provider.Request{Model: model, Items: []api.Item{user("hi")}}
}

func requireAPIError(t *testing.T, err error, status int, typ, code string) *api.Error {
	t.Helper()
	var ae *api.Error
	require.ErrorAs(t, err, &ae)
	require.Equal(t, status, ae.Status, ae.Message)
	if typ != "" {
		require.Equal(t, typ, ae.Type)
	}
	require.Equal(t, code, ae.Code, ae.Message)
	return ae
}

func TestErrors(t *testing.T) {
	for _, tc := range []struct {
		exception, typ, code string
		status               int
		// retried: the SDK's retryer tries again (3 attempts in all).
		retried bool
		// names: the message names the model.
		names bool
	}{
		{"ThrottlingException", api.ErrTypeRateLimit, provider.CodeRateLimitExceeded, 429, true, true},
		{"ServiceQuotaExceededException", api.ErrTypeRateLimit, provider.CodeRateLimitExceeded, 429, false, true},
		{"ValidationException", api.ErrTypeInvalidRequest, "invalid_request", 400, false, false},
		{"AccessDeniedException", api.ErrTypeInvalidRequest, provider.CodeModelAccessDenied, 403, false, true},
		{"ResourceNotFoundException", api.ErrTypeInvalidRequest, provider.CodeModelNotFound, 404, false, true},
		{"ModelTimeoutException", api.ErrTypeUpstream, provider.CodeUpstreamTimeout, 504, false, true},
		{"ServiceUnavailableException", api.ErrTypeServiceUnavailable, provider.CodeServerOverloaded, 503, true, false},
		{"ModelNotReadyException", api.ErrTypeUpstream, provider.CodeModelUnavailable, 503, true, true},
		{"ModelErrorException", api.ErrTypeUpstream, provider.CodeUpstreamError, 502, false, true},
		{"InternalServerException", api.ErrTypeUpstream, provider.CodeUpstreamError, 502, true, true},
	} {
		t.Run(tc.exception, func(t *testing.T) {
			// AWS messages name the gateway's role, account and ARNs.
			said := "bedrock says: " + tc.exception + " for arn:aws:sts::123456789012:assumed-role/lambent-GatewayRole/gw"
			turn := fakebedrock.Turn{Error: tc.exception, ErrorMessage: said}
			both(t, []fakebedrock.Turn{turn, turn, turn}, func(t *testing.T, call func(*provider.Request) (*provider.Result, error), fake *fakebedrock.Server) {
				_, err := call(hi(claude))
				ae := requireAPIError(t, err, tc.status, tc.typ, tc.code)
				switch tc.exception {
				case "ValidationException", "ResourceNotFoundException":
					require.Contains(t, ae.Message, "bedrock says: "+tc.exception+" for (hidden)", "a message about the request or the model is passed on")
					require.NotContains(t, ae.Message, "123456789012", "without account ids")
					require.NotContains(t, ae.Message, "arn:aws:sts", "nor ARNs")
				default:
					require.NotContains(t, ae.Message, "bedrock says", "Bedrock's message stays in the cause")
					require.Contains(t, ae.Message, tc.exception, "the exception is named")
					require.Contains(t, ae.Err.Error(), said, "the cause, for the logs")
				}
				if tc.names {
					require.Contains(t, ae.Message, claude)
				}
				if tc.status == 429 {
					require.Equal(t, api.RetryAfterSeconds(provider.DefaultRetryAfter), ae.RetryAfter, "Bedrock names no delay: the default")
				}
				if tc.exception == "AccessDeniedException" {
					require.Contains(t, ae.Message, "Model access")
					require.Equal(t, "model", ae.Param)
					require.True(t, ae.NoRetry, "the operator must act")
				}
				want := 1
				if tc.retried {
					want = 3
				}
				require.Equal(t, want, fake.Calls())
			})
		})
	}
}

// The SDK's retryer retries throttling, and a model not ready yet (which
// Bedrock documents as retried, and the standard retryer does not retry by
// itself): a call refused so that then succeeds is a success.
func TestThrottlingRetried(t *testing.T) {
	for _, exception := range []string{"ThrottlingException", "ModelNotReadyException"} {
		t.Run(exception, func(t *testing.T) {
			both(t, []fakebedrock.Turn{{Error: exception}, {Error: exception}, {Text: "finally"}},
				func(t *testing.T, call func(*provider.Request) (*provider.Result, error), fake *fakebedrock.Server) {
					res, err := call(hi(claude))
					require.NoError(t, err)
					require.Equal(t, "finally", res.Text)
					require.Equal(t, 3, fake.Calls())
				})
		})
	}
}

// The SDK's default retryer (not the tests' fast one) retries a model not
// ready yet too.
func TestModelNotReadyRetriedByDefaultRetryer(t *testing.T) {
	fake := fakebedrock.New(fakebedrock.Turn{Error: "ModelNotReadyException"}, fakebedrock.Turn{Text: "ready"})
	defer fake.Close()
	cfg := fake.AWSConfig()
	cfg.Retryer = nil
	p := bedrock.New(bedrock.Config{AWS: cfg})
	res, err := p.Complete(context.Background(), hi(claude))
	require.NoError(t, err)
	require.Equal(t, "ready", res.Text)
	require.Equal(t, 2, fake.Calls())
}

// Retries stop at the call's deadline (the engine's deadline budget): with
// the SDK's own backoff, a model that keeps throttling ends the call when
// its context does, as a timeout.
func TestRetriesBoundedByDeadline(t *testing.T) {
	fake := fakebedrock.NewHandler(func(fakebedrock.Request) fakebedrock.Turn { return fakebedrock.Turn{Error: "ThrottlingException"} })
	defer fake.Close()
	cfg := fake.AWSConfig()
	cfg.Retryer = nil // the SDK's default: standard retryer, exponential backoff
	cfg.RetryMaxAttempts = 1000
	p := bedrock.New(bedrock.Config{AWS: cfg})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := p.Complete(ctx, hi(claude))
	ae := requireAPIError(t, err, 504, api.ErrTypeUpstream, provider.CodeUpstreamTimeout)
	require.ErrorIs(t, ae, context.DeadlineExceeded)
	require.Less(t, fake.Calls(), 1000)
}

func TestCancelled(t *testing.T) {
	for _, stream := range []bool{false, true} {
		block := make(chan struct{})
		p, fake := newProvider(t, fakebedrock.Turn{Block: block})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			var err error
			if stream {
				_, err = p.Stream(ctx, hi(claude), func(provider.Delta) error { return nil })
			} else {
				_, err = p.Complete(ctx, hi(claude))
			}
			done <- err
		}()
		require.Eventually(t, func() bool { return fake.Calls() == 1 }, 5*time.Second, time.Millisecond)
		cancel()
		err := <-done
		close(block)
		requireAPIError(t, err, provider.StatusClientClosedRequest, api.ErrTypeServer, provider.CodeRequestCancelled)
		require.ErrorIs(t, err, context.Canceled)
	}
}

// In-stream exceptions fail the call; a validation exception's message is
// passed on, the others' stay in the cause.
func TestStreamExceptions(t *testing.T) {
	for _, tc := range []struct {
		exception string
		status    int
		code      string
	}{
		{"modelStreamErrorException", 502, provider.CodeUpstreamError},
		{"internalServerException", 502, provider.CodeUpstreamError},
		{"throttlingException", 429, provider.CodeRateLimitExceeded},
		{"validationException", 400, "invalid_request"},
		{"serviceUnavailableException", 503, provider.CodeServerOverloaded},
	} {
		t.Run(tc.exception, func(t *testing.T) {
			p, _ := newProvider(t, fakebedrock.Turn{Text: "half an answer", StreamError: tc.exception, ErrorMessage: "it broke: " + tc.exception})
			var got string
			_, err := p.Stream(context.Background(), hi(claude), func(d provider.Delta) error {
				got += d.Text
				return nil
			})
			ae := requireAPIError(t, err, tc.status, "", tc.code)
			if tc.code == "invalid_request" {
				require.Contains(t, ae.Message, "it broke: "+tc.exception)
			} else {
				require.NotContains(t, ae.Message, "it broke", "Bedrock's message stays in the cause")
				require.Contains(t, ae.Err.Error(), "it broke: "+tc.exception)
			}
			require.Equal(t, "half an answer", got, "the deltas before the exception were passed on")
		})
	}
}

// relayedStatuses are statuses of the model's own that Bedrock relays
// (originalStatusCode), and what the gateway makes of them: the model's
// throttling a 429 rate_limit_exceeded, as a ThrottlingException is, any
// other failure a 502.
var relayedStatuses = []struct {
	original, status int
	code             string
}{
	{429, 429, provider.CodeRateLimitExceeded},
	{500, 502, provider.CodeUpstreamError},
}

// requireRelayed asserts err, the error of exception relaying the model's
// original status: its status and code, the exception named, cause (what
// Bedrock said) kept for the logs and, for throttling, the default retry
// delay (Bedrock names none) said in the message too.
func requireRelayed(t *testing.T, err error, original, status int, code, exception, cause string) *api.Error {
	t.Helper()
	ae := requireAPIError(t, err, status, "", code)
	require.Contains(t, ae.Message, exception)
	require.Contains(t, ae.Err.Error(), cause, "the cause, for the logs")
	if original == http.StatusTooManyRequests {
		require.Equal(t, api.ErrTypeRateLimit, ae.Type)
		require.Equal(t, api.RetryAfterSeconds(provider.DefaultRetryAfter), ae.RetryAfter)
		require.Contains(t, ae.Message, "please try again in")
	}
	return ae
}

// A modelStreamErrorException relays the model's own status inside the
// stream (see relayedStatuses).
func TestStreamModelThrottled(t *testing.T) {
	for _, tc := range relayedStatuses {
		t.Run(strconv.Itoa(tc.original), func(t *testing.T) {
			p, _ := newProvider(t, fakebedrock.Turn{Text: "half", StreamError: "modelStreamErrorException",
				ErrorMessage: "Model stream error", OriginalStatusCode: tc.original, OriginalMessage: "Too many requests, please wait before trying again."})
			_, err := p.Stream(context.Background(), hi(claude), func(provider.Delta) error { return nil })
			ae := requireRelayed(t, err, tc.original, tc.status, tc.code, "ModelStreamErrorException", "Model stream error")
			require.Contains(t, ae.Message, claude)
		})
	}
}

// A ModelErrorException (HTTP 424, for Converse and for a ConverseStream
// refused before its stream) relays the model's own failure (a Marketplace
// model's SageMaker endpoint, an imported model) and status (see
// relayedStatuses); its message names the model as the client gave it
// (its ARN here, which the response's model field echoes too) but none of
// what Bedrock said (the account's CloudWatch logs), and the SDK does not
// retry it.
func TestModelErrorThrottled(t *testing.T) {
	const (
		endpoint = "arn:aws:sagemaker:us-east-1:123456789012:endpoint/jumpstart-llama"
		said     = `Received client error (429) from primary with message "Too many requests". ` +
			`See https://us-east-1.console.aws.amazon.com/cloudwatch/home?region=us-east-1#logEventViewer:group=/aws/sagemaker/Endpoints/jumpstart-llama in account 123456789012 for more information.`
	)
	for _, tc := range relayedStatuses {
		t.Run(strconv.Itoa(tc.original), func(t *testing.T) {
			turn := fakebedrock.Turn{Error: "ModelErrorException", ErrorMessage: said, OriginalStatusCode: tc.original, ResourceName: endpoint}
			both(t, []fakebedrock.Turn{turn}, func(t *testing.T, call func(*provider.Request) (*provider.Result, error), fake *fakebedrock.Server) {
				_, err := call(hi(endpoint))
				ae := requireRelayed(t, err, tc.original, tc.status, tc.code, "ModelErrorException", said)
				require.Contains(t, ae.Message, endpoint, "the client's own model, as it gave it")
				require.NotContains(t, ae.Message, "cloudwatch", "nothing of what Bedrock said")
				require.NotContains(t, ae.Message, "Too many requests")
				require.Equal(t, 1, fake.Calls())
			})
		})
	}
}

func TestStreamCut(t *testing.T) {
	p, _ := newProvider(t, fakebedrock.Turn{Text: "one two three four", CutAfterEvents: 3})
	_, err := p.Stream(context.Background(), hi(claude), func(provider.Delta) error { return nil })
	var ae *api.Error
	require.ErrorAs(t, err, &ae)
	require.Equal(t, 502, ae.Status)
}

// A stream that ends without messageStop is incomplete, not an answer.
func TestStreamWithoutMessageStop(t *testing.T) {
	p, _ := newProvider(t, fakebedrock.Turn{Events: []fakebedrock.Event{
		{Type: "messageStart", Payload: map[string]any{"role": "assistant"}},
		{Type: "contentBlockDelta", Payload: map[string]any{"contentBlockIndex": 0, "delta": map[string]any{"text": "Hel"}}},
	}})
	_, err := p.Stream(context.Background(), hi(claude), func(provider.Delta) error { return nil })
	requireAPIError(t, err, 502, api.ErrTypeUpstream, provider.CodeUpstreamStreamCut)
}

// Content that contradicts itself (a text delta for a toolUse block, input
// before the toolUse start) is a malformed answer.
func TestStreamMalformedBlocks(t *testing.T) {
	start := fakebedrock.Event{Type: "contentBlockStart", Payload: map[string]any{"contentBlockIndex": 1, "start": map[string]any{"toolUse": map[string]any{"toolUseId": "t1", "name": "get_weather"}}}}
	for name, evs := range map[string][]fakebedrock.Event{
		"text in a toolUse block": {start, {Type: "contentBlockDelta", Payload: map[string]any{"contentBlockIndex": 1, "delta": map[string]any{"text": "x"}}}},
		"input before start":      {{Type: "contentBlockDelta", Payload: map[string]any{"contentBlockIndex": 2, "delta": map[string]any{"toolUse": map[string]any{"input": "{}"}}}}},
		"started twice":           {start, start},
	} {
		t.Run(name, func(t *testing.T) {
			p, _ := newProvider(t, fakebedrock.Turn{Events: evs})
			_, err := p.Stream(context.Background(), &provider.Request{Model: claude, Items: []api.Item{user("hi")}, Tools: []api.ToolDefinition{weatherTool()}},
				func(provider.Delta) error { return nil })
			requireAPIError(t, err, 502, api.ErrTypeUpstream, provider.CodeUpstreamBadResponse)
		})
	}
}

// A 200 Converse reply without output is a clear failure.
func TestConverseWithoutOutput(t *testing.T) {
	p, _ := newProvider(t, fakebedrock.Turn{OmitOutput: true})
	_, err := p.Complete(context.Background(), hi(claude))
	ae := requireAPIError(t, err, 502, api.ErrTypeUpstream, provider.CodeUpstreamBadResponse)
	require.Contains(t, ae.Message, "without output")
}

// An error from the delta callback aborts the stream and is returned as is.
func TestStreamCallbackError(t *testing.T) {
	p, _ := newProvider(t, fakebedrock.Turn{Text: "a b c d e f"})
	stop := errors.New("client went away")
	n := 0
	_, err := p.Stream(context.Background(), hi(claude), func(provider.Delta) error {
		n++
		if n == 2 {
			return stop
		}
		return nil
	})
	require.Same(t, stop, err)
	require.Equal(t, 2, n)
}

func TestUnreachable(t *testing.T) {
	fake := fakebedrock.New()
	cfg := fake.AWSConfig()
	fake.Close()
	cfg.Retryer = func() aws.Retryer { return aws.NopRetryer{} }
	p := bedrock.New(bedrock.Config{AWS: cfg})
	_, err := p.Complete(context.Background(), hi(claude))
	requireAPIError(t, err, 502, api.ErrTypeUpstream, provider.CodeUpstreamUnreachable)
}

// Bedrock's answers that name the model as the problem: an id it does
// not know (a ValidationException, also for a model retired from the
// region) is a 404 model_not_found; a legacy model or a missing use case
// form (ResourceNotFoundException) a 404 saying so; the gateway's
// credentials refused (UnrecognizedClientException and kin) a 502
// upstream_auth_failed no retry cures.
func TestModelAndCredentialErrors(t *testing.T) {
	legacy := "Access denied. This Model is marked by provider as Legacy and you have not been actively using the model in the last 15 days. Please upgrade to an active model on Amazon Bedrock"
	for _, tc := range []struct {
		exception, message string
		status             int
		code, param, says  string
		noRetry            bool
	}{
		{"ValidationException", "The provided model identifier is invalid.", 404, provider.CodeModelNotFound, "model", "The provided model identifier is invalid.", false},
		{"ResourceNotFoundException", legacy, 404, provider.CodeModelNotFound, "model", legacy, false},
		{"UnrecognizedClientException", "The security token included in the request is invalid.", 502, provider.CodeUpstreamAuthFailed, "", "UnrecognizedClientException", true},
	} {
		t.Run(tc.exception, func(t *testing.T) {
			both(t, []fakebedrock.Turn{{Error: tc.exception, ErrorMessage: tc.message}}, func(t *testing.T, call func(*provider.Request) (*provider.Result, error), _ *fakebedrock.Server) {
				_, err := call(hi(claude))
				ae := requireAPIError(t, err, tc.status, "", tc.code)
				require.Equal(t, tc.param, ae.Param)
				require.Contains(t, ae.Message, tc.says)
				require.Contains(t, ae.Message, claude)
				require.Equal(t, tc.noRetry, ae.NoRetry)
			})
		})
	}
}

// An input over the model's context window (Bedrock's ValidationException,
// as Bedrock or the model words it, before or inside the stream) is a 400
// context_length_exceeded, param input, the code OpenAI's API gives it and
// clients (Codex, the Agents SDK) act on.
func TestContextLengthExceeded(t *testing.T) {
	for _, said := range []string{
		"The model returned the following errors: prompt is too long: 200049 tokens > 200000 maximum",
		"The model returned the following errors: Input is too long for requested model.",
		"Input is too long for requested model.",
	} {
		t.Run(said, func(t *testing.T) {
			check := func(t *testing.T, err error) {
				ae := requireAPIError(t, err, 400, api.ErrTypeInvalidRequest, "context_length_exceeded")
				require.Equal(t, "input", ae.Param)
				require.Contains(t, ae.Message, said)
				require.Contains(t, ae.Message, claude)
			}
			both(t, []fakebedrock.Turn{{Error: "ValidationException", ErrorMessage: said}}, func(t *testing.T, call func(*provider.Request) (*provider.Result, error), _ *fakebedrock.Server) {
				_, err := call(hi(claude))
				check(t, err)
			})
			p, _ := newProvider(t, fakebedrock.Turn{StreamError: "validationException", ErrorMessage: said})
			_, err := p.Stream(context.Background(), hi(claude), func(provider.Delta) error { return nil })
			check(t, err)
		})
	}
}
