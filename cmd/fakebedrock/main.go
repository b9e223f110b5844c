// Command fakebedrock runs the scripted fake Bedrock runtime
// (internal/testing/fakebedrock) on FAKEBEDROCK_ADDR (default 127.0.0.1:8091) and
// prints how to point `make run` at it with LAMBENT_PROVIDER=bedrock: a
// local try-out of the Bedrock provider with the real AWS SDK client, no
// AWS account needed (`make fakebedrock`).
//
// Its model is a parrot with tools: a message starting with "calculate "
// gets a call to the calculator tool when one is offered (try
// "tools":[{"type":"lambent:calculator"}]), a tool result gets an answer
// quoting it, anything else is echoed. With reasoning.effort set it thinks
// out loud first, with a signed reasoning block, as Claude does.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/lambent/lambent/internal/testing/fakebedrock"
)

func main() {
	addr := os.Getenv("FAKEBEDROCK_ADDR")
	if addr == "" {
		addr = "127.0.0.1:8091"
	}
	fake, err := fakebedrock.ListenHandler(addr, parrot)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fakebedrock:", err)
		os.Exit(1)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	fmt.Printf(`fake Bedrock runtime on %s; in another shell:

  AWS_ENDPOINT_URL_BEDROCK_RUNTIME=%s AWS_REGION=%s \
  AWS_ACCESS_KEY_ID=fake AWS_SECRET_ACCESS_KEY=fake \
  LAMBENT_PROVIDER=bedrock LAMBENT_DEFAULT_MODEL=us.anthropic.claude-sonnet-4-20250514-v1:0 make run

  curl -s localhost:8080/v1/responses -H 'Content-Type: application/json' \
    -d '{"input":"calculate 6*7","tools":[{"type":"lambent:calculator"}],"reasoning":{"effort":"low"}}'

Ctrl-C stops it.
`, fake.URL, fake.URL, fakebedrock.Region)
	<-ctx.Done()
	fake.Close()
}

// parrot is the fake's model (see the package comment).
func parrot(req fakebedrock.Request) fakebedrock.Turn {
	// Input usage: the fake's own metering, cache reads and writes included.
	usage := fakebedrock.Usage{OutputTokens: 12}
	last := req.Messages[len(req.Messages)-1]
	var said, result string
	for _, b := range last.Content {
		switch {
		case b.ToolResult != nil:
			for _, c := range b.ToolResult.Content {
				if c.Text != nil {
					result += *c.Text
				}
			}
		case b.Text != nil:
			said += *b.Text
		}
	}
	turn := fakebedrock.Turn{Usage: usage}
	if len(req.AdditionalModelRequestFields) > 0 {
		turn.Reasoning = "The user said " + fmt.Sprintf("%q", said) + "; let me answer."
	}
	expr, calc := strings.CutPrefix(strings.TrimSpace(said), "calculate ")
	switch {
	case result != "":
		turn.Text = "The tool says: " + result
	case calc && offers(req, "calculator"):
		args, _ := json.Marshal(map[string]string{"expression": expr})
		turn.ToolUses = []fakebedrock.ToolUse{{Name: "calculator", Input: string(args)}}
	default:
		turn.Text = "You said: " + said
	}
	return turn
}

func offers(req fakebedrock.Request, name string) bool {
	if req.ToolConfig == nil {
		return false
	}
	for _, t := range req.ToolConfig.Tools {
		if t.ToolSpec != nil && t.ToolSpec.Name == name {
			return true
		}
	}
	return false
}
