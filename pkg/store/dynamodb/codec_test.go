package dynamodb

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/store"
	"github.com/lambent/lambent/pkg/store/storetest"
)

// maxWrite records the largest write it is given.
type maxWrite struct {
	bytes.Buffer
	max int
}

func (w *maxWrite) Write(p []byte) (int, error) {
	w.max = max(w.max, len(p))
	return w.Buffer.Write(p)
}

// TestRecordStreamed: a record is written item by item (no write holds
// more than one long item), in the form it always had (writeJSON's, HTML
// characters outside the items aside), and reads back the same.
func TestRecordStreamed(t *testing.T) {
	t.Parallel()
	rec := storetest.NewRecord(api.NewID(api.PrefixResponse), api.StatusCompleted)
	const item = 100 << 10
	for i := range 20 {
		out := fmt.Sprintf("report %d <&>\n", i) + strings.Repeat("row ok\n", item/7)
		rec.Response.Output = append(rec.Response.Output,
			api.Item{Type: api.ItemMCPCall, ID: fmt.Sprintf("mcp_%d", i), Status: api.ItemCompleted, ServerLabel: "ops", Name: "work", Arguments: "{}", Output: out})
	}
	rec.Context = append(rec.Context, api.Item{Type: api.ItemFunctionCallOutput, ID: "fco_ctx", CallID: "call_ctx", Output: strings.Repeat("c", item)})

	var w maxWrite
	require.NoError(t, writeRecord(&w, rec))
	var whole bytes.Buffer
	require.NoError(t, writeJSON(&whole, wire(rec)))
	require.Equal(t, whole.String(), w.String(), "the streamed record differs from its JSON")
	require.Less(t, w.max, item+64<<10, "a write held more than one long item")

	c := newCodec(DefaultMaxRecordBytes, compressionLevel)
	body, n, err := c.encode(rec)
	require.NoError(t, err)
	require.Equal(t, whole.Len(), n)
	got, err := c.decode(rec.Response.ID, bytes.NewReader(body))
	require.NoError(t, err)
	require.Equal(t, rec.Response.Output, got.Response.Output)
	require.Equal(t, rec.Context, got.Context)

	var tl *store.TooLargeError
	require.ErrorAs(t, newCodec(whole.Len()-1, compressionLevel).checkSize(rec), &tl)
	require.NoError(t, newCodec(whole.Len(), compressionLevel).checkSize(rec))
}

// TestChunkItem: a chunk's item is the one attributevalue makes of it.
func TestChunkItem(t *testing.T) {
	t.Parallel()
	c := chunk{PK: "t#resp_1", SK: chunkSK("g", 3), ExpiresAt: 1_900_000_000, Body: []byte{0x1f, 0x8b, 0}}
	want, err := attributevalue.MarshalMap(c)
	require.NoError(t, err)
	require.Equal(t, want, c.item())
}

// convMetadata reads the head of a conversation written before it, whose
// metadata is a map attribute, and writes a JSON string.
func TestConvMetadataReadsMap(t *testing.T) {
	var h convHead
	require.NoError(t, attributevalue.UnmarshalMap(map[string]types.AttributeValue{
		"metadata": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"k": &types.AttributeValueMemberS{Value: "v"}}},
	}, &h))
	require.Equal(t, convMetadata{"k": "v"}, h.Metadata)
	av, err := attributevalue.Marshal(convMetadata{"": "x"})
	require.NoError(t, err)
	require.Equal(t, &types.AttributeValueMemberS{Value: `{"":"x"}`}, av)
}

// TestConvMetadataReadByPreviousRelease: a head whose metadata a map
// attribute can hold (no empty key) is written as a map, which the
// release before convMetadata (metadata map[string]string) reads: during
// a rolling deploy its instances read heads the new ones wrote (a JSON
// string there failed every read, and a lock taken with ALL_NEW).
func TestConvMetadataReadByPreviousRelease(t *testing.T) {
	for _, md := range []convMetadata{{"k": "v"}, {}, nil} {
		var previous struct {
			Metadata map[string]string `dynamodbav:"metadata"`
		}
		item, err := attributevalue.MarshalMap(convHead{Metadata: md})
		require.NoError(t, err)
		require.NoError(t, attributevalue.UnmarshalMap(item, &previous), "metadata %v", md)
		if len(md) == 0 {
			require.Empty(t, previous.Metadata)
			continue
		}
		require.Equal(t, map[string]string(md), previous.Metadata)
	}
}

// TestSetAsideReadByPreviousRelease: a record holding items validated
// output set aside (api.ItemHidden.Aside) is read by the release before
// that field (during a rolling deploy, or after a rollback), which does not
// know it and shows every output item: the set-aside answer is written in
// the shape that release gave one, a "commentary" message with "text"
// parts, so that its output_text (the SDKs' helpers) is the validated
// output alone there too. This release reads the record back as written.
func TestSetAsideReadByPreviousRelease(t *testing.T) {
	t.Parallel()
	rec := storetest.NewRecord(api.NewID(api.PrefixResponse), api.StatusCompleted)
	valid := api.Item{Type: api.ItemMessage, ID: "msg_valid", Status: api.ItemCompleted, Role: api.RoleAssistant,
		Content: []api.ContentPart{{Type: api.PartOutputText, Text: `{"ok":true}`}}}
	rec.Response.Output = []api.Item{
		{Type: api.ItemMessage, ID: "msg_failed", Status: api.ItemCompleted, Role: api.RoleAssistant,
			Content: []api.ContentPart{{Type: api.PartOutputText, Text: "not json"}}, Hidden: api.ItemHidden{Aside: true}},
		{Type: api.ItemMessage, ID: "msg_feedback", Status: api.ItemCompleted, Role: api.RoleUser,
			Content: []api.ContentPart{{Type: api.PartInputText, Text: "Your answer failed validation."}}, Hidden: api.ItemHidden{Aside: true}},
		valid,
	}
	c := newCodec(DefaultMaxRecordBytes, compressionLevel)
	body, _, err := c.encode(rec)
	require.NoError(t, err)

	// The previous release: the same decoding, without Aside.
	var previous wireRecord
	require.NoError(t, c.decompressJSON(bytes.NewReader(body), &previous))
	var outputText strings.Builder
	for _, it := range previous.Response.Output {
		for _, p := range it.Content {
			if it.Role == api.RoleAssistant && p.Type == api.PartOutputText {
				outputText.WriteString(p.Text)
			}
		}
	}
	require.Equal(t, `{"ok":true}`, outputText.String(), "output_text as the previous release shows it")
	require.Equal(t, "commentary", previous.Response.Output[0].Phase)

	got, err := c.decode(rec.Response.ID, bytes.NewReader(body))
	require.NoError(t, err)
	require.Equal(t, rec.Response.Output[:2], got.Response.Output[:2], "the items set aside, as written")
	storetest.RequireSameRecord(t, rec, got)
}

// TestForcedMCPChoiceReadByPreviousRelease: the release before tool_choice
// {"type":"mcp"} refuses that type when it decodes a record (its
// ToolChoice.UnmarshalJSON: "unsupported tool_choice type"), so a record
// holding it, in its response or its background job's request, was one it
// could not read at all (store.ErrCorrupt: GET, continuations and the job
// failed). The record stores the choice in the form that release reads, an
// allowed_tools choice required to call that server's tool, and this
// release reads it back as it was given.
func TestForcedMCPChoiceReadByPreviousRelease(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"search", ""} {
		rec := storetest.NewRecord(api.NewID(api.PrefixResponse), api.StatusQueued)
		choice := api.ToolChoice{Type: api.ToolMCP, ServerLabel: "docs", Name: name}
		rec.Response.ToolChoice = choice
		rec.Job = &store.Job{Request: &api.CreateResponseRequest{Model: "m", ToolChoice: &choice}}
		c := newCodec(DefaultMaxRecordBytes, compressionLevel)
		body, _, err := c.encode(rec)
		require.NoError(t, err)

		var stored struct {
			Response struct {
				ToolChoice json.RawMessage `json:"tool_choice"`
			} `json:"response"`
			Job struct {
				Request struct {
					ToolChoice json.RawMessage `json:"tool_choice"`
				} `json:"request"`
			} `json:"job"`
		}
		require.NoError(t, c.decompressJSON(bytes.NewReader(body), &stored))
		ref := `{"type":"mcp","server_label":"docs"}`
		if name != "" {
			ref = `{"type":"mcp","server_label":"docs","name":"search"}`
		}
		previous := `{"type":"allowed_tools","mode":"required","tools":[` + ref + `]}`
		require.JSONEq(t, previous, string(stored.Response.ToolChoice), "the response's choice as the previous release reads it")
		require.JSONEq(t, previous, string(stored.Job.Request.ToolChoice), "the job request's choice as the previous release reads it")

		got, err := c.decode(rec.Response.ID, bytes.NewReader(body))
		require.NoError(t, err)
		require.Equal(t, choice, got.Response.ToolChoice)
		require.Equal(t, &choice, got.Job.Request.ToolChoice)
		require.Equal(t, api.ToolMCP, rec.Response.ToolChoice.Type, "the record written is not changed")
	}
}

// TestCutReadByPreviousRelease: the cut a record and a conversation's
// head keep (store.Record.Cut, store.Conversation.Cut) is a field of
// their own, which the releases before it, decoding without it, skip:
// during a rolling deploy they read both as before (and start uncut).
func TestCutReadByPreviousRelease(t *testing.T) {
	t.Parallel()
	rec := storetest.NewRecord(api.NewID(api.PrefixResponse), api.StatusCompleted)
	rec.Cut = rec.Context[0].ID
	c := newCodec(DefaultMaxRecordBytes, compressionLevel)
	body, _, err := c.encode(rec)
	require.NoError(t, err)
	// The previous release's record: these fields, read by the same decoder.
	var previous struct {
		Response  *api.Response             `json:"response"`
		Input     []api.Item                `json:"input"`
		Context   []api.Item                `json:"context"`
		Job       *store.Job                `json:"job,omitempty"`
		Hidden    map[string]api.ItemHidden `json:"hidden,omitempty"`
		ForcedMCP bool                      `json:"forced_mcp,omitempty"`
	}
	require.NoError(t, c.decompressJSON(bytes.NewReader(body), &previous))
	api.SetHidden(previous.Hidden, previous.Context, previous.Input, previous.Response.Output)
	storetest.RequireSameRecord(t, &store.Record{Response: rec.Response, Input: rec.Input, Context: rec.Context, Cut: rec.Cut},
		&store.Record{Response: previous.Response, Input: previous.Input, Context: previous.Context, Cut: rec.Cut})
	got, err := c.decode(rec.Response.ID, bytes.NewReader(body))
	require.NoError(t, err)
	require.Equal(t, rec.Cut, got.Cut)

	item, err := attributevalue.MarshalMap(convHead{PK: "t#conv_1", SK: skConversation, Next: 3, Cut: "msg_1"})
	require.NoError(t, err)
	require.Contains(t, item, attrCut)
	var head struct { // the previous release's head
		Next int64  `dynamodbav:"next"`
		Lock string `dynamodbav:"lock,omitempty"`
	}
	require.NoError(t, attributevalue.UnmarshalMap(item, &head))
	require.Equal(t, int64(3), head.Next)
}
