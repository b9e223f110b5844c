package httpapi_test

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/wsapi"
)

// npmFields are the field names of the TypeScript interface of the pinned
// npm openai SDK's declaration file (a path under its package) whose
// opening line is header, its fields indented by indent spaces: what the
// SDK's users can send.
func npmFields(t *testing.T, file, header string, indent int) []string {
	t.Helper()
	f, err := os.Open(filepath.Join(jsClients(t), "node_modules", "openai", file))
	require.NoError(t, err)
	defer f.Close()
	field := regexp.MustCompile(fmt.Sprintf(`^ {%d}([a-z_]+)\??:`, indent))
	end := strings.Repeat(" ", indent-4) + "}"
	var names []string
	in := false
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case !in:
			in = line == header
		case line == end:
			require.NotEmpty(t, names, "%s: %s", file, header)
			return names
		default:
			if m := field.FindStringSubmatch(line); m != nil {
				names = append(names, m[1])
			}
		}
	}
	require.NoError(t, sc.Err())
	t.Fatalf("%s: no %q", file, header)
	return nil
}

// Every parameter the pinned npm openai SDK can send to POST
// /v1/responses, /compact and /input_tokens, and in a WebSocket
// response.create, is one the gateway knows (it acts on it, or checks and
// ignores it, or refuses it naming why): none is the 400
// unknown_parameter of a parameter no client has. A newer SDK that adds
// one fails here until the gateway decides what it does with it
// (docs/api.md, Request parameters); TestEveryOpenAIGoParamIsKnown does
// the same for openai-go.
func TestEveryNPMParamIsKnown(t *testing.T) {
	const responses = "resources/responses/responses.d.ts"
	for _, c := range []struct {
		name   string
		fields []string
		decode func([]byte) error
	}{
		{"ResponseCreateParamsBase", npmFields(t, responses, "export interface ResponseCreateParamsBase {", 4),
			func(b []byte) error { _, err := api.DecodeCreateRequest(b); return err }},
		{"ResponseCompactParams", npmFields(t, responses, "export interface ResponseCompactParams {", 4),
			func(b []byte) error { _, err := api.DecodeCompactRequest(b); return err }},
		{"InputTokenCountParams", npmFields(t, "resources/responses/input-tokens.d.ts", "export interface InputTokenCountParams {", 4),
			func(b []byte) error { _, err := api.DecodeInputTokensRequest(b); return err }},
		{"ResponsesClientEvent.ResponseCreate", npmFields(t, responses, "    interface ResponseCreate {", 8),
			func(b []byte) error {
				b = append([]byte(`{"type":"response.create",`), b[1:]...)
				_, err := wsapi.DecodeCreate(wsapi.Message{Data: b, Size: int64(len(b))}, 1<<20)
				return err
			}},
	} {
		for _, p := range c.fields {
			if p == "type" {
				continue
			}
			// null is "absent" for a known parameter; an unknown one is
			// refused whatever its value.
			err := c.decode([]byte(`{"model":"m","input":"hi","` + p + `":null}`))
			if err != nil {
				assert.NotEqual(t, "unknown_parameter", api.AsError(err).Code, "%s.%s: %v", c.name, p, err)
			}
		}
	}
}
