package main

import (
	"fmt"
	"io"
	"strconv"
)

// The demo's requests, printed as curl commands and run by the test.
const (
	// hostedRequest makes the model call the hosted calculator: Lambent runs
	// it and calls the model again, all in one request.
	hostedRequest = `{"model":"demo","input":"What is 17 * 23?","tools":[{"type":"lambent:calculator"}]}`
	// pauseRequest makes the model call a client function: the response
	// pauses with status requires_action.
	pauseRequest = `{"model":"demo","input":"What is the weather in Paris?","tools":[{"type":"function","name":"get_weather",` +
		`"description":"Current weather of a city","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}]}`
	// weatherOutput is what the client's get_weather returns.
	weatherOutput = `{"temperature_c":18,"conditions":"sunny"}`
	// streamRequest streams a plain answer as Server-Sent Events.
	streamRequest = `{"model":"demo","input":"Hello! Who are you?","stream":true}`
)

// continuationJQ builds the continuation of a paused response: one
// function_call_output per function_call, on previous_response_id.
var continuationJQ = `{model: "demo", previous_response_id: .id, input: [.output[] | select(.type == "function_call") | ` +
	`{type: "function_call_output", call_id: .call_id, output: ` + strconv.Quote(weatherOutput) + `}]}`

// printCommands writes the demo's curl commands for the gateway at base
// (http://host:port), a shell script the test runs too.
func printCommands(w io.Writer, base string) {
	url := base + "/v1/responses"
	fmt.Fprintf(w, `
# Lambent demo: the gateway on %s answers with a scripted fake model
# (no model, no AWS; Ctrl-C stops it). Try these from another shell:

# 1. A hosted tool loop: the model calls the calculator, Lambent runs it and calls the model again.
curl -s %s -H 'Content-Type: application/json' -d '%s'; echo

# 2. A client tool: the response pauses (status "requires_action") on a get_weather call;
#    the client runs it and continues with previous_response_id (this one needs jq).
R=$(curl -s %s -H 'Content-Type: application/json' -d '%s'); echo "$R"
echo "$R" | jq '%s' | curl -s %s -H 'Content-Type: application/json' -d @-; echo

# 3. A stream of Server-Sent Events.
curl -sN %s -H 'Content-Type: application/json' -d '%s'

`, base, url, hostedRequest, url, pauseRequest, continuationJQ, url, url, streamRequest)
}
