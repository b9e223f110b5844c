package lambdaio

import (
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/pkg/tenant"
)

// An event from an AWS_IAM front door hands the caller's IAM identity to
// the handler (tenant.Caller), on every front door and transfer mode; an
// event from a NONE front door hands none.
func TestCallerIdentity(t *testing.T) {
	const arn = "arn:aws:sts::111122223333:assumed-role/lambent-client/session-1"
	seen := make(chan string, 1)
	h := New(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, ok := tenant.Caller(r.Context())
		if !ok {
			got = "<none>"
		}
		seen <- got
		_, _ = io.WriteString(w, "ok")
	}), Config{Logger: quiet()})

	urlIAM := urlEvent(http.MethodGet, "/x", "", "")
	urlIAM.RequestContext.Authorizer = &events.LambdaFunctionURLRequestContextAuthorizerDescription{
		IAM: &events.LambdaFunctionURLRequestContextAuthorizerIAMDescription{UserARN: arn, CallerID: "AROAEXAMPLE:session-1"}}
	urlCallerOnly := urlEvent(http.MethodGet, "/x", "", "")
	urlCallerOnly.RequestContext.Authorizer = &events.LambdaFunctionURLRequestContextAuthorizerDescription{
		IAM: &events.LambdaFunctionURLRequestContextAuthorizerIAMDescription{CallerID: "AROAEXAMPLE:session-1"}}
	restIAM := restEvent(http.MethodGet, "/x", "")
	restIAM.RequestContext.Identity.UserArn, restIAM.RequestContext.Identity.Caller = arn, "AROAEXAMPLE:session-1"
	restBuffered := *restIAM
	restBuffered.StageVariables = map[string]string{TransferModeStageVariable: "BUFFERED"}
	var restV1 map[string]any
	require.NoError(t, json.Unmarshal(mustJSON(t, restIAM), &restV1))
	restV1["version"] = "1.0"
	httpIAM := httpAPIEvent(http.MethodGet, "/x", "")
	httpIAM.RequestContext.Authorizer = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
		IAM: &events.APIGatewayV2HTTPRequestContextAuthorizerIAMDescription{UserARN: arn}}

	for name, c := range map[string]struct {
		ev   any
		want string
	}{
		"function URL IAM":           {urlIAM, arn},
		"function URL callerId only": {urlCallerOnly, "AROAEXAMPLE:session-1"},
		"function URL NONE":          {urlEvent(http.MethodGet, "/x", "", ""), "<none>"},
		"REST stream IAM":            {restIAM, arn},
		"REST buffered IAM":          {&restBuffered, arn},
		"HTTP API 1.0 IAM":           {restV1, arn},
		"REST NONE":                  {restEvent(http.MethodGet, "/x", ""), "<none>"},
		"HTTP API 2.0 IAM":           {httpIAM, arn},
		"HTTP API 2.0 NONE":          {httpAPIEvent(http.MethodGet, "/x", ""), "<none>"},
	} {
		t.Run(name, func(t *testing.T) {
			out, err := h.Handle(testCtx(t), mustJSON(t, c.ev))
			require.NoError(t, err)
			if body, ok := out.(io.ReadCloser); ok {
				_, _ = io.Copy(io.Discard, body)
				require.NoError(t, body.Close())
			}
			assert.Equal(t, c.want, <-seen)
		})
	}
}

// The REST sample's null identity fields decode to no caller.
func TestCallerNullIdentity(t *testing.T) {
	var ev events.APIGatewayProxyRequest
	require.NoError(t, json.Unmarshal([]byte(`{"httpMethod":"GET","path":"/x","requestContext":{"identity":{"caller":null,"userArn":null,"sourceIp":"198.51.100.77"}}}`), &ev))
	assert.Empty(t, restCaller(&ev))
}
