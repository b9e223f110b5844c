package bedrock

import (
	"context"
	"io"
	"net/http"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/internal/testing/fakebedrock"
	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/provider"
)

// bodyTypes records whether request bodies reach the transport with a
// WriteTo method.
type bodyTypes struct {
	base     http.RoundTripper
	writerTo []bool
}

func (b *bodyTypes) RoundTrip(r *http.Request) (*http.Response, error) {
	_, ok := r.Body.(io.WriterTo)
	b.writerTo = append(b.writerTo, ok)
	return b.base.RoundTrip(r)
}

// The SDK's request bodies reach net/http without WriteTo (see
// awsconf.ReadOnlyBodies): with it, HTTP/1.1 connections are closed under
// streamed responses.
func TestRequestBodiesWithoutWriteTo(t *testing.T) {
	fake := fakebedrock.New(fakebedrock.Turn{Text: "a"}, fakebedrock.Turn{Text: "b"})
	defer fake.Close()
	cfg := fake.AWSConfig()
	rec := &bodyTypes{base: fake.Client().Transport}
	cfg.HTTPClient = &http.Client{Transport: rec}
	p := New(Config{AWS: cfg})
	req := &provider.Request{Model: "amazon.nova-lite-v1:0", Items: []api.Item{{Type: api.ItemMessage, Role: api.RoleUser,
		Content: []api.ContentPart{{Type: api.PartInputText, Text: "hi"}}}}}
	_, err := p.Complete(context.Background(), req)
	require.NoError(t, err)
	_, err = p.Stream(context.Background(), req, func(provider.Delta) error { return nil })
	require.NoError(t, err)
	require.Equal(t, []bool{false, false}, rec.writerTo)
}

// Bedrock's refusal to count a model reaches the client in the 501's
// message with its ARNs and account ids hidden, as every other Bedrock
// message that reaches a client.
func TestCountRefusalHidesIDs(t *testing.T) {
	p := &Provider{}
	refusal := &types.ValidationException{Message: aws.String("The provided model arn:aws:bedrock:us-east-1:123456789012:custom-model/x doesn't support counting tokens.")}
	err := p.countError(context.Background(), "my-model", refusal)
	var ae *api.Error
	require.ErrorAs(t, err, &ae)
	require.Equal(t, http.StatusNotImplemented, ae.Status)
	require.NotContains(t, ae.Message, "123456789012")
	require.Contains(t, ae.Message, `"my-model"`)
}
