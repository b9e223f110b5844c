package main

// API keys and AWS IAM front doors together: with LAMBENT_API_KEYS set,
// SigV4-signed requests (the events/ samples of AWS_IAM front doors carry
// the caller's identity) need no key and belong to the caller's IAM ARN,
// while requests from NONE front doors need a listed key.

import (
	"encoding/json"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/internal/testing/fakellm"
	"github.com/lambent/lambent/internal/testing/lambdareply"
)

// sampleKey is the bearer key of the NONE-auth samples.
const sampleKey = "sk-lambent-example"

// reply returns the status and body of any of the handler's replies.
func reply(t *testing.T, out any) (int, []byte) {
	t.Helper()
	switch r := out.(type) {
	case *events.LambdaFunctionURLStreamingResponse:
		s := lambdareply.ReadStreamed(t, r)
		return s.Prelude.StatusCode, s.Body()
	case *events.APIGatewayProxyStreamingResponse:
		s := lambdareply.ReadStreamed(t, r)
		return s.Prelude.StatusCode, s.Body()
	case events.APIGatewayV2HTTPResponse:
		return r.StatusCode, []byte(r.Body)
	case events.APIGatewayProxyResponse:
		return r.StatusCode, []byte(r.Body)
	}
	t.Fatalf("unexpected reply %T", out)
	return 0, nil
}

// edit decodes a sample event, lets fn change it and encodes it again.
func edit(t *testing.T, ev json.RawMessage, fn func(m map[string]any)) json.RawMessage {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(ev, &m))
	fn(m)
	b, err := json.Marshal(m)
	require.NoError(t, err)
	return b
}

func obj(m map[string]any, path ...string) map[string]any {
	for _, k := range path {
		m = m[k].(map[string]any)
	}
	return m
}

func TestAPIKeysAndIAMFrontDoors(t *testing.T) {
	t.Parallel()
	fake := fakellm.NewHandler(func(fakellm.Request) fakellm.Turn { return fakellm.Turn{Text: answer} })
	defer fake.Close()
	h := lambdaHandler(newAppEnv(t, fake, map[string]string{"LAMBENT_API_KEYS": "acme=" + sampleKey}))
	call := func(ev json.RawMessage) (int, []byte) {
		t.Helper()
		out, err := h(testCtx(t), ev)
		require.NoError(t, err)
		return reply(t, out)
	}

	// AWS_IAM front doors: the signed samples pass without an API key.
	for _, name := range []string{"gateway-url-create.json", "gateway-url-create-stream.json", "gateway-rest-create-iam.json", "gateway-httpapi-create-iam.json"} {
		status, body := call(readEvent(t, name))
		require.Equal(t, 200, status, "%s: %s", name, body)
	}

	// NONE front doors: the listed key passes, another key or none is a 401.
	for _, name := range []string{"gateway-rest-create-stream.json", "gateway-httpapi-create.json"} {
		ev := readEvent(t, name)
		status, body := call(ev)
		require.Equal(t, 200, status, "%s: %s", name, body)
		for _, auth := range []string{"Bearer sk-lambent-other-key-0000", ""} {
			status, body = call(edit(t, ev, func(m map[string]any) {
				for _, k := range []string{"Authorization", "authorization"} {
					if hd, ok := m["headers"].(map[string]any); ok && hd[k] != nil {
						hd[k] = auth
					}
					if mv, ok := m["multiValueHeaders"].(map[string]any); ok && mv[k] != nil {
						mv[k] = []string{auth}
					}
				}
			}))
			require.Equal(t, 401, status, "%s with %q: %s", name, auth, body)
		}
	}

	// Tenants: a response created by an IAM caller is its own; neither
	// another IAM caller nor an API key sees it.
	status, body := call(readEvent(t, "gateway-url-create.json"))
	require.Equal(t, 200, status)
	created := requireCompleted(t, body)
	path := "/v1/responses/" + created.ID
	get := edit(t, readEvent(t, "gateway-url-get.json"), func(m map[string]any) {
		m["rawPath"] = path
		obj(m, "requestContext", "http")["path"] = path
	})
	status, body = call(get)
	require.Equal(t, 200, status, "the caller reads its own response: %s", body)
	require.Equal(t, created.ID, requireCompleted(t, body).ID)

	other := edit(t, get, func(m map[string]any) {
		iam := obj(m, "requestContext", "authorizer", "iam")
		iam["userArn"] = "arn:aws:sts::111122223333:assumed-role/someone-else/someone-else"
		iam["callerId"] = "AROAOTHEREXAMPLE0000:someone-else"
	})
	status, body = call(other)
	require.Equal(t, 404, status, "another IAM caller: %s", body)

	withKey := edit(t, get, func(m map[string]any) {
		delete(obj(m, "requestContext"), "authorizer")
		obj(m, "headers")["authorization"] = "Bearer " + sampleKey
	})
	status, body = call(withKey)
	require.Equal(t, 404, status, "an API key's tenant: %s", body)
}

// LAMBENT_IAM_TENANT=role: every session of a role is one tenant (another
// session of the role reads the response, another role does not); by
// default (arn) each session is its own.
func TestIAMTenantRole(t *testing.T) {
	t.Parallel()
	fake := fakellm.NewHandler(func(fakellm.Request) fakellm.Turn { return fakellm.Turn{Text: answer} })
	defer fake.Close()
	session := func(ev json.RawMessage, role, name string) json.RawMessage {
		return edit(t, ev, func(m map[string]any) {
			iam := obj(m, "requestContext", "authorizer", "iam")
			iam["userArn"] = "arn:aws:sts::111122223333:assumed-role/" + role + "/" + name
			iam["callerId"] = "AROAEXAMPLE" + role + ":" + name
		})
	}
	for mode, sameRoleSees := range map[string]bool{"": false, "arn": false, "role": true} {
		t.Run("mode "+mode, func(t *testing.T) {
			h := lambdaHandler(newAppEnv(t, fake, map[string]string{"LAMBENT_IAM_TENANT": mode}))
			call := func(ev json.RawMessage) (int, []byte) {
				t.Helper()
				out, err := h(testCtx(t), ev)
				require.NoError(t, err)
				return reply(t, out)
			}
			status, body := call(session(readEvent(t, "gateway-url-create.json"), "lambent-client", "session-1"))
			require.Equal(t, 200, status, "%s", body)
			path := "/v1/responses/" + requireCompleted(t, body).ID
			get := edit(t, readEvent(t, "gateway-url-get.json"), func(m map[string]any) {
				m["rawPath"] = path
				obj(m, "requestContext", "http")["path"] = path
			})
			status, _ = call(session(get, "lambent-client", "session-1"))
			require.Equal(t, 200, status, "the same session")
			status, _ = call(session(get, "lambent-client", "session-2"))
			require.Equal(t, map[bool]int{true: 200, false: 404}[sameRoleSees], status, "another session of the role")
			status, _ = call(session(get, "other-role", "session-1"))
			require.Equal(t, 404, status, "another role")
		})
	}
}
