package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/engine/schemacheck"
)

// Argument validation (docs/tools.md, "Arguments"). A call of a hosted tool
// (built-in, Lambda, manifest) or of an MCP tool whose server declares an
// input schema is checked against that schema before it runs: arguments
// that do not match are fed back to the model as an is_error result naming
// the violations, and the tool does not run (a Lambda invocation costs
// money; a handler need not parse what the schema rules out). A schema is
// compiled once, on the first call that needs it: a hosted tool's once per
// definition for the engine's life (Engine.argChecks), an MCP tool's once
// per response, within the request limits of a request's schemas (size,
// depth, enum values, numbers, regular expressions: checkSchema,
// schemacheck.Compile). A schema that cannot be used is logged and
// skipped: the calls run unchecked, as before. Config.Loop.SkipArgumentCheck
// turns it off.

// argCheck is the input schema of one tool definition, compiled on first
// use (safe for the concurrent calls of a turn).
type argCheck struct {
	raw    json.RawMessage
	once   sync.Once
	schema *jsonschema.Schema // nil: not checked
}

// newArgCheck returns the check of raw, nil when there is no schema.
func newArgCheck(raw json.RawMessage) *argCheck {
	if t := bytes.TrimSpace(raw); len(t) == 0 || bytes.Equal(t, []byte("null")) {
		return nil
	}
	return &argCheck{raw: raw}
}

// hostedArgCheck is the check of a hosted tool's definition, shared by
// every response (nil when argument validation is off or the tool has no
// schema). The catalog's definitions are the operator's, so the cache holds
// at most one entry per definition the manifest and built-in tools make.
func (e *Engine) hostedArgCheck(def api.ToolDefinition) *argCheck {
	if e.cfg.Loop.SkipArgumentCheck {
		return nil
	}
	c := newArgCheck(def.Parameters)
	if c == nil {
		return nil
	}
	got, _ := e.argChecks.LoadOrStore(def.Name+"\x00"+string(def.Parameters), c)
	return got.(*argCheck)
}

// compiled returns the compiled schema, compiling it on the first call; nil
// when it cannot be used (logged once, naming tool).
func (c *argCheck) compiled(ctx context.Context, e *Engine, tool string) *jsonschema.Schema {
	c.once.Do(func() {
		l := &e.cfg.Limits
		err := checkSchema(l, c.raw, func() string { return "input_schema" })
		if err == nil {
			c.schema, err = schemacheck.Compile(c.raw, l.SchemaPatterns)
		}
		if err != nil {
			c.schema = nil
			e.log.WarnContext(ctx, "tool input schema skipped: the arguments of its calls are not checked", "tool", tool, "err", err)
		}
	})
	return c.schema
}

// argumentsError is the error result fed back for a call of tool whose
// arguments do not match its input schema, "" when they do (or there is
// nothing to check against). Absent arguments count as {}.
func (e *Engine) argumentsError(ctx context.Context, c *argCheck, tool, args string) string {
	if c == nil {
		return ""
	}
	s := c.compiled(ctx, e, tool)
	if s == nil {
		return ""
	}
	if strings.TrimSpace(args) == "" {
		args = "{}"
	}
	errs := schemacheck.Check(s, args, "the input")
	if errs == nil {
		return ""
	}
	return fmt.Sprintf("Error: the arguments do not match the input schema of %q, so the tool did not run. Call it again with arguments that do:\n- %s", tool, strings.Join(errs, "\n- "))
}
