package app_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/lambent/lambent/internal/testing/fakellm"
	"github.com/lambent/lambent/pkg/app"
)

// post creates a response on g with body and decodes it.
func (g *gateway) post(t *testing.T, body string) map[string]any {
	t.Helper()
	resp, err := http.Post(g.url+"/v1/responses", "application/json", strings.NewReader(body))
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
	var out map[string]any
	require.NoError(t, json.Unmarshal(b, &out))
	return out
}

// toolInvocations counts the tool Lambda invocations the endpoint received
// (the hook function's asynchronous ones left out).
func toolInvocations(r *recording) int {
	headers, _ := r.got()
	n := 0
	for _, h := range headers {
		if h.Get("X-Amz-Invocation-Type") != "Event" {
			n++
		}
	}
	return n
}

// Seed 000 FR-015: a gateway configured without LAMBENT_MAX_TURNS stops a
// runaway loop after 10 model calls (incomplete, max_turns).
func TestDefaultTurnLimitIsTen(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	toolLambdas(t)
	var turns []fakellm.Turn
	for i := range 12 {
		turns = append(turns, fakellm.Turn{ToolCalls: []fakellm.ToolCall{{ID: fmt.Sprint("c", i), Name: "calculator", Arguments: `{"expression":"1+1"}`}}})
	}
	fake := fakellm.New(turns...)
	defer fake.Close()
	g := newGateway(t, fake, nil, nil, nil)
	resp := g.post(t, `{"input":"loop","tools":[{"type":"lambent:calculator"}]}`)
	assert.Equal(t, "incomplete", resp["status"])
	assert.Equal(t, "max_turns", resp["incomplete_details"].(map[string]any)["reason"])
	assert.Equal(t, 10, fake.Calls())
}

// A hosted Lambda tool's call whose arguments do not match the manifest's
// schema never invokes the function: the model gets the violation as the
// call's error. LAMBENT_VALIDATE_TOOL_ARGUMENTS=false invokes it anyway
// (and the tool answers with its own error).
func TestToolArgumentsCheckedBeforeTheLambdaRuns(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	for _, c := range []struct {
		setting string
		invoked int
		error   string
	}{
		{"", 0, `Error: the arguments do not match the input schema of "calculator", so the tool did not run.`},
		{"false", 1, `missing required argument "expression"`},
	} {
		t.Run("validate="+c.setting, func(t *testing.T) {
			lambdas, _ := toolLambdas(t)
			fake := fakellm.New(
				fakellm.Turn{ToolCalls: []fakellm.ToolCall{{ID: "c1", Name: "calculator", Arguments: `{"expr":"6*7"}`}}},
				fakellm.Turn{Text: "I used it wrong."},
			)
			defer fake.Close()
			g := newGateway(t, fake, map[string]string{"LAMBENT_VALIDATE_TOOL_ARGUMENTS": c.setting}, nil, nil)
			resp := g.post(t, `{"input":"6*7","tools":[{"type":"lambent:calculator"}]}`)
			assert.Equal(t, "completed", resp["status"])
			shape := outputShape(resp)
			assert.True(t, strings.HasPrefix(shape[0], "mcp_call failed calculator error="+c.error), shape[0])
			assert.Equal(t, c.invoked, toolInvocations(lambdas))
			if c.setting == "" {
				assert.Contains(t, shape[0], "additional properties 'expr' not allowed")
			}
		})
	}
}

// A value of LAMBENT_VALIDATE_TOOL_ARGUMENTS that is not a boolean fails
// at start-up.
func TestValidateToolArgumentsSetting(t *testing.T) {
	_, err := app.FromEnv(func(k string) string { return map[string]string{"LAMBENT_VALIDATE_TOOL_ARGUMENTS": "sometimes"}[k] })
	require.Error(t, err)
	assert.Contains(t, err.Error(), "LAMBENT_VALIDATE_TOOL_ARGUMENTS")
}
