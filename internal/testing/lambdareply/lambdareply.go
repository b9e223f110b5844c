// Package lambdareply reads, in tests, what a Lambda handler of HTTP front
// doors (pkg/lambdaio) returns as the front door would: a streamed reply
// (a function URL's, a streaming REST API's) as Lambda's runtime client
// reads it, and any reply as its status, headers and body.
package lambdareply

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"
)

// Streamed is a streamed reply as Lambda's runtime client reads it: the
// prelude (JSON, then 8 zero bytes) in the first read, then one read per
// flush of the handler.
type Streamed struct {
	Prelude struct {
		StatusCode        int                 `json:"statusCode"`
		Headers           map[string]string   `json:"headers"`
		MultiValueHeaders map[string][]string `json:"multiValueHeaders"`
		Cookies           []string            `json:"cookies"`
	}
	Chunks [][]byte
}

// Body is the streamed body, its chunks joined.
func (s *Streamed) Body() []byte { return bytes.Join(s.Chunks, nil) }

// ReadStreamed reads the streamed reply r to its end and closes it.
func ReadStreamed(t testing.TB, r io.ReadCloser) *Streamed {
	t.Helper()
	defer r.Close()
	var s Streamed
	buf := make([]byte, 64<<10)
	n, err := r.Read(buf)
	require.NoError(t, err)
	first := buf[:n]
	require.True(t, bytes.HasSuffix(first, make([]byte, 8)), "the first read is the prelude and its 8 zero bytes: %q", first)
	require.NoError(t, json.Unmarshal(first[:n-8], &s.Prelude), "prelude %q", first)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			s.Chunks = append(s.Chunks, bytes.Clone(buf[:n]))
		}
		if errors.Is(err, io.EOF) {
			return &s
		}
		require.NoError(t, err)
	}
}

// Reply returns the status, headers and body of out, any of the four
// replies of lambdaio.Handler.Handle (a streamed one is read to its end).
func Reply(t testing.TB, out any) (int, http.Header, []byte) {
	t.Helper()
	hd := http.Header{}
	add := func(single map[string]string, multi map[string][]string) {
		for k, v := range single {
			hd.Add(k, v)
		}
		for k, vs := range multi {
			for _, v := range vs {
				hd.Add(k, v)
			}
		}
	}
	switch r := out.(type) {
	case *events.LambdaFunctionURLStreamingResponse:
		s := ReadStreamed(t, r)
		add(s.Prelude.Headers, s.Prelude.MultiValueHeaders)
		return s.Prelude.StatusCode, hd, s.Body()
	case *events.APIGatewayProxyStreamingResponse:
		s := ReadStreamed(t, r)
		add(s.Prelude.Headers, s.Prelude.MultiValueHeaders)
		return s.Prelude.StatusCode, hd, s.Body()
	case events.APIGatewayV2HTTPResponse:
		add(r.Headers, r.MultiValueHeaders)
		return r.StatusCode, hd, []byte(r.Body)
	case events.APIGatewayProxyResponse:
		add(r.Headers, r.MultiValueHeaders)
		return r.StatusCode, hd, []byte(r.Body)
	}
	t.Fatalf("not a reply of an HTTP front door: %T", out)
	return 0, nil, nil
}
