package httpapi_test

import (
	"context"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/internal/chatwire"
	"github.com/lambent/lambent/internal/testing/fakellm"
)

// summaryPrefix starts the message that stands for a compaction item.
const summaryPrefix = "Summary of the earlier conversation:\n\n"

// compactingModel answers the summarising call with summary and
// otherwise as answer says, each with a small usage.
func compactingModel(answer func(last chatwire.Message, msgs []chatwire.Message) fakellm.Turn) *fakellm.Server {
	return fakellm.NewHandler(func(req fakellm.Request) fakellm.Turn {
		last := req.Messages[len(req.Messages)-1]
		turn := fakellm.Turn{Text: summary}
		if !strings.Contains(last.Content.String(), "Compact the conversation") {
			turn = answer(last, req.Messages)
		}
		turn.Usage = fakellm.Usage{PromptTokens: 30, CompletionTokens: 5}
		return turn
	})
}

// withCompaction is p asking for server-side compaction past 1,000 tokens.
func withCompaction(p responses.ResponseNewParams) responses.ResponseNewParams {
	p.ContextManagement = []responses.ResponseNewParamsContextManagement{{Type: "compaction", CompactThreshold: openai.Int(1000)}}
	return p
}

// Server-side compaction through openai-go: a streamed create whose input
// is over the threshold streams a compaction item before the answer, and
// the model saw the user's message and the summary only; a continuation
// (previous_response_id) sees from the compaction item; so does a create
// whose input sends every item back, those before the compaction item
// included.
func TestE2EServerCompaction(t *testing.T) {
	t.Parallel()
	g := newGateway(t, compactingModel(func(last chatwire.Message, _ []chatwire.Message) fakellm.Turn {
		if strings.Contains(last.Content.String(), "name") {
			return fakellm.Turn{Text: "You are Ada."}
		}
		return fakellm.Turn{Text: "Hello Ada."}
	}), map[string]string{"LAMBENT_COMPACTION_KEYS": compactionKeys("k1")})
	ctx := context.Background()
	reference := "Reference: " + strings.Repeat("x", 5000)
	input := []responses.ResponseInputItemUnionParam{
		responses.ResponseInputItemParamOfMessage("I am Ada.", responses.EasyInputMessageRoleUser),
		responses.ResponseInputItemParamOfMessage(reference, responses.EasyInputMessageRoleDeveloper),
	}
	stream := g.client.Responses.NewStreaming(ctx, withCompaction(responses.ResponseNewParams{Input: responses.ResponseNewParamsInputUnion{OfInputItemList: input}}))
	var added []string
	var r1 responses.Response
	for stream.Next() {
		ev := stream.Current()
		switch ev.Type {
		case "response.output_item.added":
			added = append(added, ev.Item.Type)
		case "response.completed":
			r1 = ev.Response
		}
	}
	require.NoError(t, stream.Err())
	require.Equal(t, []string{"compaction", "message"}, added)
	require.Len(t, r1.Output, 2)
	cmp := r1.Output[0].AsCompaction()
	require.True(t, strings.HasPrefix(cmp.ID, "cmp_"), cmp.ID)
	require.True(t, strings.HasPrefix(cmp.EncryptedContent, "k1."))
	require.NoError(t, validator(t).Validate("CompactionBody", []byte(r1.Output[0].RawJSON())))
	require.Equal(t, int64(70), r1.Usage.InputTokens+r1.Usage.OutputTokens, "the summarising call's usage counts")
	reqs := g.fake.Requests()
	require.Len(t, reqs, 2)
	require.Equal(t, []chatMsg{{"user", "I am Ada."}, {"system", reference}}, messages(reqs[0])[:2])
	afterCompaction := []chatMsg{{"user", "I am Ada."}, {"system", summaryPrefix + summary}}
	require.Equal(t, afterCompaction, messages(reqs[1]))

	// previous_response_id: the item and what follows it.
	p := withCompaction(textParams("What is my name?"))
	p.PreviousResponseID = openai.String(r1.ID)
	r2, err := g.client.Responses.New(ctx, p)
	require.NoError(t, err)
	require.Equal(t, "You are Ada.", r2.OutputText())
	require.Equal(t, []string{"message"}, []string{r2.Output[0].Type})
	reqs = g.fake.Requests()
	require.Len(t, reqs, 3)
	require.Equal(t, append(afterCompaction, chatMsg{"assistant", "Hello Ada."}, chatMsg{"user", "What is my name?"}), messages(reqs[2]))

	// Input-array chaining: every item sent back, then the new message.
	chained := append(input,
		responses.ResponseInputItemUnionParam{OfCompaction: &responses.ResponseCompactionItemParam{ID: openai.String(cmp.ID), EncryptedContent: cmp.EncryptedContent}},
		responses.ResponseInputItemParamOfMessage(r1.OutputText(), responses.EasyInputMessageRoleAssistant),
		responses.ResponseInputItemParamOfMessage("My name, again?", responses.EasyInputMessageRoleUser))
	r3, err := g.client.Responses.New(ctx, withCompaction(responses.ResponseNewParams{Input: responses.ResponseNewParamsInputUnion{OfInputItemList: chained}}))
	require.NoError(t, err)
	require.Equal(t, "You are Ada.", r3.OutputText())
	reqs = g.fake.Requests()
	require.Len(t, reqs, 4)
	require.Equal(t, append(afterCompaction, chatMsg{"assistant", "Hello Ada."}, chatMsg{"user", "My name, again?"}), messages(reqs[3]))

	// The stored response keeps every item of its input.
	items, err := g.client.Responses.InputItems.List(ctx, r3.ID, responses.InputItemListParams{Order: responses.InputItemListParamsOrderAsc})
	require.NoError(t, err)
	require.Len(t, items.Data, 5)
}

// The Agents SDK's modelSettings.contextManagement: a run whose tool
// output crosses the threshold is compacted between its tool turns (the
// SDK replays its items: the model sees the user's message and the
// summary), a run sending that history back whole, and a streamed
// continuation of it, see from the compaction item.
func TestClientAgentsServerCompaction(t *testing.T) {
	dir := jsClients(t)
	llm := compactingModel(func(last chatwire.Message, msgs []chatwire.Message) fakellm.Turn {
		text := last.Content.String()
		switch {
		case last.Role == "tool":
			return fakellm.Turn{Text: "Read it, uncompacted."}
		case strings.Contains(text, "name"):
			return fakellm.Turn{Text: "Your name is Ada."}
		case msgs[len(msgs)-1].Role == "system" || len(msgs) > 1 && msgs[1].Role == "system":
			return fakellm.Turn{Text: "Done reading."}
		}
		return fakellm.Turn{ToolCalls: []fakellm.ToolCall{{Name: "read_page", Arguments: `{"page":1}`}}}
	})
	g := newGateway(t, llm, map[string]string{"LAMBENT_COMPACTION_KEYS": compactionKeys("k1")})
	type run struct {
		Text  string
		Types [][]string
	}
	var got struct {
		Errors               []string
		First, Second, Third *run
	}
	runJS(t, dir, "agents_compaction.mjs", g.srv.URL+"/v1", &got)
	require.Empty(t, got.Errors)
	require.NotNil(t, got.Third)
	require.Equal(t, "Done reading.", got.First.Text)
	require.Equal(t, [][]string{{"function_call"}, {"compaction", "message"}}, got.First.Types)
	require.Equal(t, "Your name is Ada.", got.Second.Text)
	require.Equal(t, "Your name is Ada.", got.Third.Text)

	reqs := llm.Requests()
	require.Len(t, reqs, 5, "the tool call, the summary, the answer, then one call per run")
	afterCompaction := []chatMsg{{"user", "Read page 1. I am Ada."}, {"system", summaryPrefix + summary}}
	require.Equal(t, afterCompaction, messages(reqs[2]))
	second := append(afterCompaction, chatMsg{"assistant", "Done reading."}, chatMsg{"user", "What is my name?"})
	require.Equal(t, second, messages(reqs[3]))
	require.Equal(t, append(second, chatMsg{"assistant", "Your name is Ada."}, chatMsg{"user", "And again, my name?"}), messages(reqs[4]))
}

// The Vercel AI SDK and LangChain read responses whose output holds a
// compaction item, streamed and not, and send a history holding it back
// (the AI SDK as an item reference to it) without an error: the model
// then sees from the compaction item.
func TestClientsReadServerCompaction(t *testing.T) {
	dir := jsClients(t)
	// The question may come before the summary: a history still over
	// the threshold is compacted again, and the model sees the user's
	// messages the compaction item carries, then its summary.
	llm := compactingModel(func(_ chatwire.Message, msgs []chatwire.Message) fakellm.Turn {
		for _, m := range msgs {
			if m.Role == "user" && strings.Contains(m.Content.String(), "name") {
				return fakellm.Turn{Text: "You are Ada."}
			}
		}
		return fakellm.Turn{Text: "Hello Ada."}
	})
	g := newGateway(t, llm, map[string]string{"LAMBENT_COMPACTION_KEYS": compactionKeys("k1")})
	type reply struct{ Text string }
	var got struct {
		Errors     []string
		AIGenerate *struct {
			Text  string
			Kinds []string
		}
		AIHistory, LCInvoke, LCHistory *reply
		LCStream                       *reply
		AIStream                       *struct {
			Text   string
			Custom []string
		}
	}
	runJS(t, dir, "compaction_clients.mjs", g.srv.URL+"/v1", &got)
	require.Empty(t, got.Errors)
	require.Equal(t, "Hello Ada.", got.AIGenerate.Text)
	require.Equal(t, []string{"openai.compaction", "text"}, got.AIGenerate.Kinds)
	require.Equal(t, "You are Ada.", got.AIHistory.Text)
	require.Equal(t, "Hello Ada.", got.AIStream.Text)
	require.Equal(t, []string{"custom:openai.compaction"}, got.AIStream.Custom)
	require.Equal(t, "Hello Ada.", got.LCInvoke.Text)
	require.Equal(t, "You are Ada.", got.LCHistory.Text)
	require.Equal(t, "Hello Ada.", got.LCStream.Text)
}

// An image the user sent before a server-side compaction reaches the
// model after it (openai-go, a continuation with previous_response_id):
// the compaction item carries the user message's image with its text, and
// the model's next calls get it as an image_url part.
func TestE2EServerCompactionCarriesImages(t *testing.T) {
	t.Parallel()
	g := newGateway(t, compactingModel(func(chatwire.Message, []chatwire.Message) fakellm.Turn { return fakellm.Turn{Text: "A cat."} }),
		map[string]string{"LAMBENT_COMPACTION_KEYS": compactionKeys("k1")})
	ctx := context.Background()
	const cat = "https://example.com/cat.png"
	input := []responses.ResponseInputItemUnionParam{
		responses.ResponseInputItemParamOfMessage(responses.ResponseInputMessageContentListParam{
			responses.ResponseInputContentParamOfInputText("What is this?"),
			{OfInputImage: &responses.ResponseInputImageParam{ImageURL: openai.String(cat), Detail: responses.ResponseInputImageDetailLow}},
		}, responses.EasyInputMessageRoleUser),
		responses.ResponseInputItemParamOfMessage("Reference: "+strings.Repeat("x", 5000), responses.EasyInputMessageRoleDeveloper),
	}
	r1, err := g.client.Responses.New(ctx, withCompaction(responses.ResponseNewParams{Input: responses.ResponseNewParamsInputUnion{OfInputItemList: input}}))
	require.NoError(t, err)
	require.Equal(t, "compaction", r1.Output[0].Type)
	p := textParams("Sure?")
	p.PreviousResponseID = openai.String(r1.ID)
	_, err = g.client.Responses.New(ctx, p)
	require.NoError(t, err)
	reqs := g.fake.Requests()
	require.Len(t, reqs, 3)
	for _, r := range reqs[1:] {
		first := r.Messages[0]
		require.Equal(t, "user", first.Role)
		require.Len(t, first.Content.Parts, 2, "%s", r.Body)
		require.Equal(t, "What is this?", first.Content.Parts[0].Text)
		require.Equal(t, &chatwire.ImageURL{URL: cat, Detail: "low"}, first.Content.Parts[1].ImageURL)
	}
}
