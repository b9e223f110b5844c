package schema

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestEventSchemaNames(t *testing.T) {
	v, err := New()
	require.NoError(t, err)
	var doc map[string]any
	require.NoError(t, json.Unmarshal(openapiJSON, &doc))
	schemas := doc["components"].(map[string]any)["schemas"].(map[string]any)
	for _, typ := range []string{"response.created", "response.in_progress", "response.completed", "response.failed", "response.incomplete", "response.queued",
		"response.output_item.added", "response.output_item.done", "response.content_part.added", "response.content_part.done",
		"response.output_text.delta", "response.output_text.done", "response.output_text.annotation.added", "response.refusal.delta", "response.refusal.done",
		"response.reasoning.delta", "response.reasoning.done", "response.reasoning_summary_part.added", "response.reasoning_summary_part.done",
		"response.reasoning_summary_text.delta", "response.reasoning_summary_text.done",
		"response.function_call_arguments.delta", "response.function_call_arguments.done", "error"} {
		name := EventSchema(typ)
		_, ok := schemas[name]
		require.True(t, ok, "%s → %s", typ, name)
		_, err := v.schema(name)
		require.NoError(t, err)
	}
}

func TestValidateRejects(t *testing.T) {
	v, err := New()
	require.NoError(t, err)
	require.Error(t, v.ValidateEvent([]byte(`{"type":"response.output_text.delta","sequence_number":1}`)))
	require.NoError(t, v.ValidateEvent([]byte(`{"type":"response.output_text.delta","sequence_number":1,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"hi"}`)))
	require.Error(t, v.Validate("ResponseResource", []byte(`{"id":"x"}`)))
}
