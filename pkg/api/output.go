package api

import (
	"bytes"
	"strconv"
	"strings"
)

// Validated output (a Lambent extension, docs/validated-output.md): a
// request names its final output with one output tool,
//
//	{"type":"lambent:output","name":"report","description":"…","parameters":{JSON Schema},
//	 "reflection":true | "lambent:<hosted tool>","validators":["lambent:<hosted tool>", …]}
//
// or asks for structured text with text.format json_schema; the engine
// validates the output (JSON Schema, then each validator tool) and retries
// with feedback over attempts bounded by the request's "lambent" object.

// ToolOutput is the type of the output tool.
const ToolOutput = HostedPrefix + "output"

// SubmitTool is the name of the tool the engine adds next to an output tool
// with reflection; SubmitDescription is its description.
const (
	SubmitTool        = "submit"
	SubmitDescription = "Submit your final output for validation. Call this when you are satisfied with your output."
)

// Error codes of validated output: the error.code of a failed response and
// the code of a failed attempt.
const (
	CodeValidationFailed   = "validation_failed"
	CodeMaxIterations      = "max_iterations"
	CodeSubmitBeforeOutput = "submit_before_output"
	CodeInvalidResponse    = "invalid_response"
)

// IsOutput reports whether t is the output tool.
func (t *Tool) IsOutput() bool { return t.Type == ToolOutput }

// Reflects reports whether the output tool t has reflection.
func (t *Tool) Reflects() bool {
	return len(t.Reflection) > 0 && !bytes.Equal(t.Reflection, []byte("false"))
}

// ReflectionTool is the hosted tool name of t's reflection handler
// ("lambent:review" → "review"), or "" for the default handler (true).
func (t *Tool) ReflectionTool() string {
	var s string
	if !decodes(t.Reflection, &s) {
		return ""
	}
	return strings.TrimPrefix(s, HostedPrefix)
}

// LoopPolicy is the request's "lambent" object: how many attempts a
// validated output gets and how many iterations (model calls with their
// tool calls) each attempt may use. Unset fields take the gateway's
// settings (LAMBENT_MAX_ATTEMPTS, LAMBENT_MAX_ITERATIONS_PER_ATTEMPT),
// which also cap them: a request may lower them, never raise them.
type LoopPolicy struct {
	MaxAttempts             *int `json:"max_attempts,omitempty"`
	MaxIterationsPerAttempt *int `json:"max_iterations_per_attempt,omitempty"`
}

// Attempt is one attempt at producing a valid output.
type Attempt struct {
	Number int `json:"number"`
	// Iterations counts the attempt's model calls.
	Iterations int  `json:"iterations"`
	Valid      bool `json:"valid"`
	// Code is why a failed attempt failed: validation_failed,
	// submit_before_output, invalid_response or max_iterations.
	Code   string   `json:"code,omitempty"`
	Errors []string `json:"errors"`
	// Usage sums the attempt's model calls.
	Usage Usage `json:"usage"`
}

// Done reports whether the attempt has ended (a failed attempt always has
// errors).
func (a *Attempt) Done() bool { return a.Valid || len(a.Errors) > 0 }

// Cancellation says where a validated-output response was cancelled.
type Cancellation struct {
	// Phase is "iteration" (the attempt's model and tool calls) or
	// "validation".
	Phase     string `json:"phase"`
	Attempt   int    `json:"attempt"`
	Iteration int    `json:"iteration"`
}

// validateOutputTool checks the output tool's fields; p is its parameter
// path.
func validateOutputTool(t *Tool, p string) error {
	if t.Name == "" {
		return InvalidRequest(p+".name", "missing required parameter: '%s.name'", p)
	}
	if !validName(t.Name) {
		return InvalidRequest(p+".name", "invalid output tool name %q: use a-z, A-Z, 0-9, underscores and dashes, at most 64 characters", t.Name)
	}
	if t.Name == SubmitTool {
		return InvalidRequest(p+".name", "the output tool cannot be named %q: that name is the reflection submit tool's", SubmitTool)
	}
	if len(t.Parameters) == 0 || t.Parameters[0] != '{' {
		return InvalidRequest(p+".parameters", "the output tool needs parameters: a JSON Schema object")
	}
	if len(t.Reflection) > 0 {
		var b bool
		var s string
		switch {
		case decodes(t.Reflection, &b):
		case decodes(t.Reflection, &s) && strings.HasPrefix(s, HostedPrefix) && validName(strings.TrimPrefix(s, HostedPrefix)) && s != ToolOutput:
		default:
			return InvalidRequest(p+".reflection", "reflection must be true, false or a hosted tool (\"%s<name>\")", HostedPrefix)
		}
	}
	for i, v := range t.Validators {
		if !strings.HasPrefix(v, HostedPrefix) || !validName(strings.TrimPrefix(v, HostedPrefix)) || v == ToolOutput {
			return InvalidRequest(p+".validators["+strconv.Itoa(i)+"]", "a validator must be a hosted tool (\"%s<name>\"), got %q", HostedPrefix, v)
		}
	}
	return nil
}

// validateValidatedOutput checks the cross-field rules of validated output:
// one output tool at most, its name and submit free, every tool it needs
// allowed, and a loop policy only where there is an output to validate.
// names holds the request's tool names; it gains submit when the output
// tool reflects.
func (r *CreateResponseRequest) validateValidatedOutput(names map[string]bool) error {
	var out *Tool
	for i := range r.Tools {
		t := &r.Tools[i]
		if !t.IsOutput() {
			continue
		}
		if out != nil {
			return InvalidRequest("tools["+strconv.Itoa(i)+"]", "a request may have at most one %s tool", ToolOutput)
		}
		out = t
	}
	schema := r.Text != nil && r.Text.Format.Type == FormatJSONSchema
	if p := r.Lambent; p != nil {
		if out == nil && !schema {
			return InvalidRequest("lambent", "the lambent loop policy needs an output to validate: a %s tool or text.format json_schema", ToolOutput)
		}
		// The upper bounds are the gateway's settings, which the engine
		// checks (a request may lower them, never raise them).
		if n := p.MaxAttempts; n != nil && *n < 1 {
			return InvalidRequest("lambent.max_attempts", "lambent.max_attempts must be at least 1")
		}
		if n := p.MaxIterationsPerAttempt; n != nil && *n < 1 {
			return InvalidRequest("lambent.max_iterations_per_attempt", "lambent.max_iterations_per_attempt must be at least 1")
		}
	}
	if out == nil {
		return nil
	}
	if schema {
		return InvalidRequest("text.format", "text.format json_schema cannot be combined with a %s tool: the output tool's parameters are the output's schema", ToolOutput)
	}
	if names[SubmitTool] {
		// Submit without reflection, or a second submit next to the one
		// reflection adds.
		return InvalidRequest("tools", "a request with a %s tool cannot declare a tool named %q: it is the submit tool of reflection (\"reflection\": true adds it)", ToolOutput, SubmitTool)
	}
	if r.ToolChoice != nil && r.ToolChoice.EffectiveMode() == ToolChoiceNone {
		return InvalidRequest("tool_choice", "tool_choice \"none\" leaves the model no way to call the %s tool %q", ToolOutput, out.Name)
	}
	need := []string{out.Name}
	if out.Reflects() {
		names[SubmitTool] = true
		need = append(need, SubmitTool)
	}
	// Restricting the tools must leave the model the output tool and, with
	// reflection, submit.
	var lists [][]string
	if len(r.AllowedTools) > 0 {
		lists = append(lists, r.AllowedTools)
	}
	if c := r.ToolChoice; c != nil && c.Type == "allowed_tools" {
		var l []string
		for _, t := range c.Tools {
			n := t.Name
			if n == "" {
				n = strings.TrimPrefix(t.Type, HostedPrefix)
			}
			l = append(l, n)
		}
		lists = append(lists, l)
	}
	for _, l := range lists {
		for _, n := range need {
			if !contains(l, n) {
				return InvalidRequest("allowed_tools", "the allowed tools must include %q: without it the model cannot produce or submit the output", n)
			}
		}
	}
	return nil
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}
