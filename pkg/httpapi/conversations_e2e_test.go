package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/conversations"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"
	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/internal/testing/fakellm"
	"github.com/lambent/lambent/pkg/api"
)

// conversationModel answers as clientModel does, and blocks on block
// (when set) a request whose last message says "slow".
func conversationModel(block <-chan struct{}) *fakellm.Server {
	return fakellm.NewHandler(func(req fakellm.Request) fakellm.Turn {
		if last := req.Messages[len(req.Messages)-1]; block != nil && strings.Contains(last.Content.String(), "slow") {
			return fakellm.Turn{Text: "Slow answer.", Block: block}
		}
		return clientTurn(req)
	})
}

// conversationGateways are a gateway on the memory store and one on a
// DynamoDB Local table, each in front of conversationModel(block).
func conversationGateways(t *testing.T, block <-chan struct{}) map[string]*gateway {
	return map[string]*gateway{
		"memory": newGateway(t, conversationModel(block), nil),
		"dynamo": dynamoGateway(t, conversationModel(block), "lambent_conv_"+api.NewID("")[24:]),
	}
}

func userMessage(text string) responses.ResponseInputItemUnionParam {
	return responses.ResponseInputItemParamOfMessage(text, responses.EasyInputMessageRoleUser)
}

func inConversation(id, input string) responses.ResponseNewParams {
	p := textParams(input)
	p.Conversation = responses.ResponseNewParamsConversationUnion{OfString: openai.String(id)}
	return p
}

// itemTypes lists a conversation's items (asc) as "type:role:text".
func itemTypes(t *testing.T, g *gateway, id string) []string {
	t.Helper()
	var out []string
	iter := g.client.Conversations.Items.ListAutoPaging(t.Context(), id, conversations.ItemListParams{Order: conversations.ItemListParamsOrderAsc, Limit: openai.Int(2)})
	for iter.Next() {
		it := iter.Current()
		s := it.Type
		switch it.Type {
		case "message":
			var text []string
			for _, c := range it.Content.OfMessageContentArray {
				text = append(text, c.Text)
			}
			s += ":" + it.Role + ":" + strings.Join(text, "")
		case "function_call":
			s += ":" + it.Name
		case "function_call_output":
			s += ":" + it.Output.OfString
		}
		out = append(out, s)
	}
	require.NoError(t, iter.Err())
	return out
}

// The Conversations API through openai-go on both stores: create with
// items and metadata, responses in the conversation (the model sees its
// items; input and output are appended, a client-tool pause and its
// continuation too; streamed as well), items add/list/get/delete,
// metadata update, delete, and the errors.
func TestConversationsOpenAIGo(t *testing.T) {
	t.Parallel()
	for name, g := range conversationGateways(t, nil) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			conv, err := g.client.Conversations.New(ctx, conversations.ConversationNewParams{
				Items:    []responses.ResponseInputItemUnionParam{userMessage("My name is Ada")},
				Metadata: shared.Metadata{"topic": "names"},
			})
			require.NoError(t, err)
			require.True(t, strings.HasPrefix(conv.ID, "conv_"), conv.ID)
			require.Equal(t, "conversation", string(conv.Object))
			require.NotZero(t, conv.CreatedAt)

			r, err := g.client.Responses.New(ctx, inConversation(conv.ID, "What is my name?"))
			require.NoError(t, err)
			require.Equal(t, "Your name is Ada.", r.OutputText(), "the model saw the conversation's items")
			require.Equal(t, conv.ID, r.Conversation.ID)
			got, err := g.client.Responses.Get(ctx, r.ID, responses.ResponseGetParams{})
			require.NoError(t, err)
			require.Equal(t, conv.ID, got.Conversation.ID)

			// A client-tool pause, continued in the conversation.
			p := inConversation(conv.ID, "What is the weather?")
			p.Tools = []responses.ToolUnionParam{weatherTool()}
			paused, err := g.client.Responses.New(ctx, p)
			require.NoError(t, err)
			require.Equal(t, responses.ResponseStatus("requires_action"), paused.Status)
			callID := paused.Output[0].CallID
			p = inConversation(conv.ID, "")
			p.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{functionOutput(callID, "sunny")}}
			p.Tools = []responses.ToolUnionParam{weatherTool()}
			done, err := g.client.Responses.New(ctx, p)
			require.NoError(t, err)
			require.Equal(t, "Result: sunny", done.OutputText())

			// Streamed, with {"id"}.
			sp := textParams("Hi there")
			sp.Conversation = responses.ResponseNewParamsConversationUnion{OfConversationObject: &responses.ResponseConversationParam{ID: conv.ID}}
			stream := g.client.Responses.NewStreaming(ctx, sp)
			var final responses.Response
			for stream.Next() {
				if ev := stream.Current(); ev.Type == "response.completed" {
					final = ev.Response
				}
			}
			require.NoError(t, stream.Err())
			require.Equal(t, conv.ID, final.Conversation.ID)

			// A hosted tool's call (an mcp_call item) is appended too, and
			// the model sees it as a call and its result later.
			hr, err := g.client.Responses.New(ctx, inConversation(conv.ID, "Please calculate 17*23"),
				option.WithJSONSet("tools", []map[string]any{{"type": "lambent:calculator"}}))
			require.NoError(t, err)
			require.Equal(t, "Result: 391", hr.OutputText())
			again, err := g.client.Responses.New(ctx, inConversation(conv.ID, "Results again?"))
			require.NoError(t, err)
			require.Equal(t, "Earlier results: sunny, 391", again.OutputText())

			require.Equal(t, []string{
				"message:user:My name is Ada",
				"message:user:What is my name?", "message:assistant:Your name is Ada.",
				"message:user:What is the weather?", "function_call:get_weather",
				"function_call_output:sunny", "message:assistant:Result: sunny",
				"message:user:Hi there", "message:assistant:Hello from Lambent.",
				"message:user:Please calculate 17*23", "mcp_call", "message:assistant:Result: 391",
				"message:user:Results again?", "message:assistant:Earlier results: sunny, 391",
			}, itemTypes(t, g, conv.ID))

			// Items: add, get, delete; the list's default order is desc.
			added, err := g.client.Conversations.Items.New(ctx, conv.ID, conversations.ItemNewParams{
				Items: []responses.ResponseInputItemUnionParam{userMessage("one"), userMessage("two")},
			})
			require.NoError(t, err)
			require.Len(t, added.Data, 2)
			require.Equal(t, added.Data[0].ID, added.FirstID)
			one := added.Data[0].ID
			require.True(t, strings.HasPrefix(one, "msg_"), one)
			it, err := g.client.Conversations.Items.Get(ctx, conv.ID, one, conversations.ItemGetParams{})
			require.NoError(t, err)
			require.Equal(t, "one", it.Content.OfMessageContentArray[0].Text)
			page, err := g.client.Conversations.Items.List(ctx, conv.ID, conversations.ItemListParams{Limit: openai.Int(1)})
			require.NoError(t, err)
			require.Equal(t, added.Data[1].ID, page.Data[0].ID)
			require.True(t, page.HasMore)
			after, err := g.client.Conversations.Items.Delete(ctx, conv.ID, one)
			require.NoError(t, err)
			require.Equal(t, conv.ID, after.ID)
			_, err = g.client.Conversations.Items.Get(ctx, conv.ID, one, conversations.ItemGetParams{})
			wantAPIError(t, err, http.StatusNotFound)

			// Metadata.
			upd, err := g.client.Conversations.Update(ctx, conv.ID, conversations.ConversationUpdateParams{Metadata: shared.Metadata{"topic": "weather"}})
			require.NoError(t, err)
			require.Equal(t, map[string]any{"topic": "weather"}, upd.Metadata)
			read, err := g.client.Conversations.Get(ctx, conv.ID)
			require.NoError(t, err)
			require.Equal(t, map[string]any{"topic": "weather"}, read.Metadata)

			// conversation with previous_response_id: a 400.
			bad := inConversation(conv.ID, "x")
			bad.PreviousResponseID = openai.String(r.ID)
			_, err = g.client.Responses.New(ctx, bad)
			e := wantAPIError(t, err, http.StatusBadRequest)
			require.Equal(t, "conversation", e.Param)

			// More items than one call may add.
			many := make([]responses.ResponseInputItemUnionParam, 21)
			for i := range many {
				many[i] = userMessage(fmt.Sprint(i))
			}
			_, err = g.client.Conversations.Items.New(ctx, conv.ID, conversations.ItemNewParams{Items: many})
			require.Equal(t, "limit_exceeded", wantAPIError(t, err, http.StatusBadRequest).Code)

			del, err := g.client.Conversations.Delete(ctx, conv.ID)
			require.NoError(t, err)
			require.True(t, del.Deleted)
			require.Equal(t, "conversation.deleted", string(del.Object))
			_, err = g.client.Conversations.Get(ctx, conv.ID)
			wantAPIError(t, err, http.StatusNotFound)
			_, err = g.client.Responses.New(ctx, inConversation(conv.ID, "hello?"))
			require.Equal(t, "conversation", wantAPIError(t, err, http.StatusNotFound).Param)
			_, err = g.client.Responses.New(ctx, inConversation("conv_nope", "hello?"))
			wantAPIError(t, err, http.StatusNotFound)
			_, err = g.client.Conversations.Get(ctx, "resp_x")
			wantAPIError(t, err, http.StatusNotFound)
		})
	}
}

// One response at a time in a conversation: while one runs, a second
// create and an items-create are refused with OpenAI's 400
// conversation_locked; once it has ended, the conversation is free and
// holds its items. Deleting the conversation while a response runs
// deletes it; the response still completes.
func TestConversationsOneResponseAtATime(t *testing.T) {
	t.Parallel()
	block := make(chan struct{})
	gws := conversationGateways(t, block)
	var wg sync.WaitGroup
	defer wg.Wait()
	var once sync.Once
	release := func() { once.Do(func() { close(block) }) }
	defer release()
	type running struct {
		g    *gateway
		conv string
		done chan *responses.Response
	}
	start := func(t *testing.T, g *gateway) running {
		conv, err := g.client.Conversations.New(t.Context(), conversations.ConversationNewParams{})
		require.NoError(t, err)
		rn := running{g: g, conv: conv.ID, done: make(chan *responses.Response, 1)}
		wg.Go(func() {
			r, err := g.client.Responses.New(context.Background(), inConversation(conv.ID, "slow please"))
			if err != nil {
				t.Errorf("slow response: %v", err)
			}
			rn.done <- r
		})
		// The slow response holds the lock once its model call started.
		for g.fake.Calls() == 0 {
			time.Sleep(time.Millisecond)
		}
		return rn
	}
	runs := map[string][]running{}
	for name, g := range gws {
		runs[name] = []running{start(t, g), start(t, g)}
		for g.fake.Calls() < 2 {
			time.Sleep(time.Millisecond)
		}
		first, second := runs[name][0], runs[name][1]
		_, err := g.client.Responses.New(t.Context(), inConversation(first.conv, "me too"))
		e := wantAPIError(t, err, http.StatusBadRequest)
		require.Equal(t, "conversation_locked", e.Code, name)
		require.Equal(t, "conversation", e.Param, name)
		require.Contains(t, e.Message, "Another process is currently operating on this conversation")
		_, err = g.client.Conversations.Items.New(t.Context(), first.conv, conversations.ItemNewParams{Items: []responses.ResponseInputItemUnionParam{userMessage("x")}})
		require.Equal(t, "conversation_locked", wantAPIError(t, err, http.StatusBadRequest).Code, name)
		// Reading is never refused.
		_, err = g.client.Conversations.Get(t.Context(), first.conv)
		require.NoError(t, err)
		_, err = g.client.Conversations.Delete(t.Context(), second.conv)
		require.NoError(t, err, "deleting while a response runs")
	}
	release()
	for name, rs := range runs {
		g := gws[name]
		first, second := rs[0], rs[1]
		r := <-first.done
		require.Equal(t, "Slow answer.", r.OutputText())
		r2 := <-second.done
		require.Equal(t, responses.ResponseStatus("completed"), r2.Status, "the response in a deleted conversation completes")
		_, err := g.client.Responses.Get(t.Context(), r2.ID, responses.ResponseGetParams{})
		require.NoError(t, err, "and is stored")
		// Free again, with the response's items.
		next, err := g.client.Responses.New(t.Context(), inConversation(first.conv, "and now"))
		require.NoError(t, err, name)
		require.Equal(t, "completed", string(next.Status))
		require.Equal(t, []string{
			"message:user:slow please", "message:assistant:Slow answer.",
			"message:user:and now", "message:assistant:Hello from Lambent.",
		}, itemTypes(t, g, first.conv), name)
	}
}

// A background response in a conversation holds it until it ends, then
// appends its items.
func TestConversationsBackground(t *testing.T) {
	t.Parallel()
	for name, g := range conversationGateways(t, nil) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			conv, err := g.client.Conversations.New(ctx, conversations.ConversationNewParams{
				Items: []responses.ResponseInputItemUnionParam{userMessage("My name is Bo")},
			})
			require.NoError(t, err)
			p := inConversation(conv.ID, "What is my name?")
			p.Background = openai.Bool(true)
			created, err := g.client.Responses.New(ctx, p)
			require.NoError(t, err)
			require.Equal(t, conv.ID, created.Conversation.ID)
			var r *responses.Response
			for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
				r, err = g.client.Responses.Get(ctx, created.ID, responses.ResponseGetParams{})
				require.NoError(t, err)
				if r.Status == "completed" {
					break
				}
			}
			require.Equal(t, "Your name is Bo.", r.OutputText())
			require.Equal(t, []string{
				"message:user:My name is Bo", "message:user:What is my name?", "message:assistant:Your name is Bo.",
			}, itemTypes(t, g, conv.ID))
		})
	}
}

// The npm openai SDK (client.conversations.*, responses.create with
// conversation, streamed too) and the OpenAI Agents SDK with
// conversationId (a function tool it runs itself included), on both
// stores.
func TestConversationsJSClients(t *testing.T) {
	t.Parallel()
	dir := jsClients(t)
	for name, g := range conversationGateways(t, nil) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var got struct {
				Errors  []string
				Created struct {
					ID, Object string
					Metadata   map[string]string
					Created    bool
				}
				Answer struct {
					Text         string
					Conversation struct{ ID string }
				}
				Streamed struct {
					Status, Text string
					Conversation struct{ ID string }
				}
				Added struct {
					Object string
					N      int
					First  bool
				}
				Retrieved   string
				Items       []string
				ItemDeleted struct {
					Object string
					ID     bool
				} `json:"itemDeleted"`
				ItemsAfterDelete int `json:"itemsAfterDelete"`
				Updated          bool
				Exclusive        struct {
					Status int
					Param  string
				}
				Agents     struct{ Text string }
				AgentsTool struct{ Text string } `json:"agentsTool"`
				AgentItems []string              `json:"agentItems"`
				Deleted    struct {
					Object  string
					Deleted bool
				}
				AfterDelete int `json:"afterDelete"`
			}
			runJS(t, dir, "openai_conversations.mjs", g.srv.URL+"/v1", &got)
			require.Empty(t, got.Errors)
			require.Equal(t, "conversation", got.Created.Object)
			require.Equal(t, map[string]string{"topic": "names"}, got.Created.Metadata)
			require.True(t, got.Created.Created)
			require.Equal(t, "Your name is Ada.", got.Answer.Text)
			require.Equal(t, got.Created.ID, got.Answer.Conversation.ID)
			require.Equal(t, "completed", got.Streamed.Status)
			require.Equal(t, got.Created.ID, got.Streamed.Conversation.ID)
			require.Equal(t, "list", got.Added.Object)
			require.Equal(t, 1, got.Added.N)
			require.True(t, got.Added.First)
			require.Equal(t, "user:extra", got.Retrieved)
			require.Equal(t, []string{
				"user:My name is Ada", "user:What is my name?", "assistant:Your name is Ada.",
				"user:Hello there", "assistant:Hello from Lambent.", "user:extra",
			}, got.Items)
			require.Equal(t, "conversation", got.ItemDeleted.Object)
			require.True(t, got.ItemDeleted.ID)
			require.Equal(t, 5, got.ItemsAfterDelete)
			require.True(t, got.Updated)
			require.Equal(t, http.StatusBadRequest, got.Exclusive.Status)
			require.Equal(t, "conversation", got.Exclusive.Param)
			require.Equal(t, "Your name is Cy.", got.Agents.Text)
			require.Equal(t, "Result: sunny in Rome", got.AgentsTool.Text)
			require.Equal(t, []string{
				"user:My name is Cy", "assistant:Hello from Lambent.",
				"user:What is my name?", "assistant:Your name is Cy.",
				"user:What is the weather in Rome?", "function_call", "function_call_output", "assistant:Result: sunny in Rome",
			}, got.AgentItems)
			require.Equal(t, "conversation.deleted", got.Deleted.Object)
			require.True(t, got.Deleted.Deleted)
			require.Equal(t, http.StatusNotFound, got.AfterDelete)
		})
	}
}

// WebSocket mode: response.create with a conversation reads and appends
// it like HTTP, and another tenant cannot reach it (HTTP or WebSocket).
func TestConversationsWebSocket(t *testing.T) {
	t.Parallel()
	g := newWSGateway(t, nil)
	status, _, body := g.doWith(http.MethodPost, "/v1/conversations", `{"metadata":{"via":"ws"}}`, "Content-Type", "application/json", "Authorization", "Bearer "+wsKeyA)
	require.Equal(t, http.StatusOK, status, "%s", body)
	var conv struct{ ID string }
	require.NoError(t, json.Unmarshal(body, &conv))
	ws := dialWS(t, g.srv, wsKeyA)
	evs := ws.create(fmt.Sprintf(`{"type":"response.create","conversation":%q,"input":"My name is Ada"}`, conv.ID))
	require.Equal(t, "response.completed", last(evs).Type)
	evs = ws.create(fmt.Sprintf(`{"type":"response.create","conversation":{"id":%q},"input":"What is my name?"}`, conv.ID))
	require.Equal(t, "Your name is Ada.", textOf(t, evs))
	ws.createErr(fmt.Sprintf(`{"type":"response.create","conversation":%q,"previous_response_id":%q,"input":"x"}`, conv.ID, last(evs).Response.ID), http.StatusBadRequest, "mutually_exclusive_parameters")

	status, _, body = g.doAuth(http.MethodGet, "/v1/conversations/"+conv.ID+"/items?order=asc", wsKeyA)
	require.Equal(t, http.StatusOK, status, "%s", body)
	var list struct {
		Data []struct{ Role string } `json:"data"`
	}
	require.NoError(t, json.Unmarshal(body, &list))
	require.Len(t, list.Data, 4)

	foreign := dialWS(t, g.srv, wsKeyB)
	foreign.createErr(fmt.Sprintf(`{"type":"response.create","conversation":%q,"input":"What is my name?"}`, conv.ID), http.StatusNotFound, "conversation_not_found")
	for _, path := range []string{"/v1/conversations/" + conv.ID, "/v1/conversations/" + conv.ID + "/items"} {
		status, _, _ = g.doAuth(http.MethodGet, path, wsKeyB)
		require.Equal(t, http.StatusNotFound, status, path)
	}
	status, _, _ = g.doAuth(http.MethodDelete, "/v1/conversations/"+conv.ID, wsKeyB)
	require.Equal(t, http.StatusNotFound, status)
}

// A conversation longer than LAMBENT_LIMIT_CONVERSATION_ITEMS is refused
// before the model is called, and releases its lock; a response made in a
// conversation keeps only its own items (previous_response_id on it
// continues from those).
func TestConversationsLimits(t *testing.T) {
	t.Parallel()
	fake := conversationModel(nil)
	g := newGateway(t, fake, map[string]string{"LAMBENT_LIMIT_CONVERSATION_ITEMS": "2"})
	ctx := t.Context()
	conv, err := g.client.Conversations.New(ctx, conversations.ConversationNewParams{
		Items: []responses.ResponseInputItemUnionParam{userMessage("My name is Ada")},
	})
	require.NoError(t, err)
	r, err := g.client.Responses.New(ctx, inConversation(conv.ID, "Hi there"))
	require.NoError(t, err)
	cont, err := g.client.Responses.New(ctx, responses.ResponseNewParams{
		PreviousResponseID: openai.String(r.ID),
		Input:              responses.ResponseNewParamsInputUnion{OfString: openai.String("What is my name?")},
	})
	require.NoError(t, err)
	require.Equal(t, "I do not know your name.", cont.OutputText(), "the record holds the response's own items only")
	calls := fake.Calls()
	_, err = g.client.Responses.New(ctx, inConversation(conv.ID, "What is my name?"))
	e := wantAPIError(t, err, http.StatusBadRequest)
	require.Equal(t, "limit_exceeded", e.Code)
	require.Equal(t, calls, fake.Calls(), "refused before the model call")
	page, err := g.client.Conversations.Items.List(ctx, conv.ID, conversations.ItemListParams{Order: conversations.ItemListParamsOrderAsc})
	require.NoError(t, err)
	require.Len(t, page.Data, 3)
	_, err = g.client.Conversations.Items.Delete(ctx, conv.ID, page.Data[1].ID) // "Hi there"
	require.NoError(t, err)
	// Item ids are unique in a conversation (and in one call).
	held := r.Output[0].ID
	for _, items := range []string{
		`[{"type":"message","id":"` + held + `","role":"user","content":"x"}]`,
		`[{"type":"message","id":"msg_x","role":"user","content":"x"},{"type":"message","id":"msg_x","role":"user","content":"y"}]`,
	} {
		_, err = g.client.Conversations.Items.New(ctx, conv.ID, conversations.ItemNewParams{}, option.WithJSONSet("items", json.RawMessage(items)))
		require.Equal(t, "duplicate_item_id", wantAPIError(t, err, http.StatusBadRequest).Code, items)
	}
	again, err := g.client.Responses.New(ctx, inConversation(conv.ID, "What is my name?"))
	require.NoError(t, err, "the refusals released the conversation")
	require.Equal(t, "Your name is Ada.", again.OutputText())
}
