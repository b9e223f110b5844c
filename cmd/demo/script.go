package main

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/lambent/lambent/internal/chatwire"
	"github.com/lambent/lambent/internal/testing/fakellm"
)

// The demo model's tools: the hosted calculator and a client function.
const (
	calculatorTool = "calculator"
	weatherTool    = "get_weather"
)

var (
	// expressionRE finds arithmetic in a question ("What is 17 * 23?").
	expressionRE = regexp.MustCompile(`[-+*/^%().\d\s]*\d[-+*/^%().\d\s]*`)
	// cityRE finds the city of a weather question.
	cityRE = regexp.MustCompile(`(?i)\bin\s+([A-Z][\p{L}' -]*[\p{L}])`)
)

// script is the demo's scripted model. A question with arithmetic, when the
// calculator is on offer, gets a calculator call; a weather question, when
// get_weather is on offer, a get_weather call; a tool result gets an answer
// built from it; anything else a friendly plain-text answer.
func script(req fakellm.Request) fakellm.Turn {
	last := req.Messages[len(req.Messages)-1]
	usage := fakellm.Usage{PromptTokens: 12 * len(req.Messages), CompletionTokens: 18}
	if last.Role == "tool" {
		return fakellm.Turn{Text: answerFromTool(req.Messages, last), Usage: usage}
	}
	question := last.Content.String()
	if offered(req, weatherTool) && strings.Contains(strings.ToLower(question), "weather") {
		city := "Paris"
		if m := cityRE.FindStringSubmatch(question); m != nil {
			city = m[1]
		}
		args, _ := json.Marshal(map[string]string{"city": city})
		return fakellm.Turn{ToolCalls: []fakellm.ToolCall{{Name: weatherTool, Arguments: string(args)}}, Usage: usage}
	}
	if expr := expression(question); expr != "" && offered(req, calculatorTool) {
		args, _ := json.Marshal(map[string]string{"expression": expr})
		return fakellm.Turn{ToolCalls: []fakellm.ToolCall{{Name: calculatorTool, Arguments: string(args)}}, Usage: usage}
	}
	return fakellm.Turn{
		Text: "Hello from Lambent's demo model! I am scripted: ask me for arithmetic with the " +
			"lambent:calculator tool, or for the weather with a get_weather function, and watch the agentic loop.",
		Usage: usage,
	}
}

// expression returns the longest run of arithmetic in s that has an
// operator, or "".
func expression(s string) string {
	best := ""
	for _, m := range expressionRE.FindAllString(s, -1) {
		m = strings.TrimSpace(m)
		if strings.ContainsAny(m, "+-*/^%") && len(m) > len(best) {
			best = m
		}
	}
	return best
}

// offered reports whether the request offers the model a tool named name.
func offered(req fakellm.Request, name string) bool {
	for _, t := range req.Tools {
		if t.Function.Name == name {
			return true
		}
	}
	return false
}

// answerFromTool turns the result of the model's tool call into an answer.
func answerFromTool(msgs []chatwire.Message, result chatwire.Message) string {
	output := result.Content.String()
	var call chatwire.ToolCall
	for _, m := range msgs {
		for _, c := range m.ToolCalls {
			if c.ID == result.ToolCallID {
				call = c
			}
		}
	}
	var args map[string]string
	_ = json.Unmarshal([]byte(string(call.Function.Arguments)), &args)
	switch call.Function.Name {
	case calculatorTool:
		return fmt.Sprintf("%s = %s (worked out with the calculator tool).", args["expression"], output)
	case weatherTool:
		var w struct {
			TemperatureC *float64 `json:"temperature_c"`
			Conditions   string   `json:"conditions"`
		}
		if json.Unmarshal([]byte(output), &w) == nil && w.TemperatureC != nil {
			return fmt.Sprintf("In %s it is %g °C and %s.", args["city"], *w.TemperatureC, w.Conditions)
		}
		return fmt.Sprintf("The weather in %s: %s", args["city"], output)
	}
	return "The tool said: " + output
}
