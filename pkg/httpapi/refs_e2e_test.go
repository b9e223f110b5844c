package httpapi_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/internal/testing/dynamotest"
	"github.com/lambent/lambent/internal/testing/fakellm"
	"github.com/lambent/lambent/pkg/app"
)

// The Vercel AI SDK's history with store:true, through the official
// client on DynamoDB: earlier assistant messages and function calls come
// back as item references without previous_response_id. Unknown ids and
// another tenant's ids are a 400 naming the id, as OpenAI answers.
func TestE2EItemReferencesWithoutPreviousResponse(t *testing.T) {
	t.Parallel()
	const keyA, keyB = "sk-lambent-tenant-a-0123456789", "sk-lambent-tenant-b-0123456789"
	fake := fakellm.New(
		fakellm.Turn{Text: "Nice to meet you, Ada."},
		fakellm.Turn{Text: "Your name is Ada."},
		fakellm.Turn{ToolCalls: []fakellm.ToolCall{{ID: "call_w1", Name: "get_weather", Arguments: `{"city":"Paris"}`}}},
		fakellm.Turn{Text: "Sunny in Paris."},
	)
	g := newGatewayWith(t, fake, map[string]string{"LAMBENT_API_KEYS": "acme=" + keyA + ", globex=" + keyB},
		&app.Options{Store: dynamotest.NewStore(t, "")})
	ctx := context.Background()
	clientFor := func(key string) openai.Client {
		return openai.NewClient(option.WithBaseURL(g.srv.URL+"/v1/"), option.WithAPIKey(key), option.WithMaxRetries(0), option.WithHTTPClient(g.srv.Client()))
	}
	a, b := clientFor(keyA), clientFor(keyB)
	user := func(text string) responses.ResponseInputItemUnionParam {
		return responses.ResponseInputItemParamOfMessage(text, responses.EasyInputMessageRoleUser)
	}
	ref := responses.ResponseInputItemParamOfItemReference
	list := func(items ...responses.ResponseInputItemUnionParam) responses.ResponseNewParamsInputUnion {
		return responses.ResponseNewParamsInputUnion{OfInputItemList: items}
	}

	first, err := a.Responses.New(ctx, textParams("My name is Ada."))
	require.NoError(t, err)
	require.Len(t, first.Output, 1)
	msg := first.Output[0].ID

	second, err := a.Responses.New(ctx, responses.ResponseNewParams{Input: list(user("My name is Ada."), ref(msg), user("What is my name?"))})
	require.NoError(t, err)
	require.Equal(t, "Your name is Ada.", second.OutputText())
	reqs := fake.Requests()
	require.Len(t, reqs, 2)
	type chat struct{ Role, Text string }
	var got []chat
	for _, m := range reqs[1].Messages {
		got = append(got, chat{m.Role, m.Content.String()})
	}
	require.Equal(t, []chat{{"user", "My name is Ada."}, {"assistant", "Nice to meet you, Ada."}, {"user", "What is my name?"}}, got)
	items, err := a.Responses.InputItems.List(ctx, second.ID, responses.InputItemListParams{Order: responses.InputItemListParamsOrderAsc})
	require.NoError(t, err)
	require.Len(t, items.Data, 3)
	require.Equal(t, msg, items.Data[1].ID, "the reference is stored as the item it names")

	// Client tools, multi-step: the call comes back as a reference, its
	// output as an item.
	p := textParams("Weather in Paris?")
	p.Tools = []responses.ToolUnionParam{weatherTool()}
	paused, err := a.Responses.New(ctx, p)
	require.NoError(t, err)
	require.Equal(t, "function_call", paused.Output[0].Type)
	done, err := a.Responses.New(ctx, responses.ResponseNewParams{
		Input: list(user("Weather in Paris?"), ref(paused.Output[0].ID), functionOutput("call_w1", "sunny")),
		Tools: []responses.ToolUnionParam{weatherTool()},
	})
	require.NoError(t, err)
	require.Equal(t, "Sunny in Paris.", done.OutputText())
	reqs = fake.Requests()
	require.Len(t, reqs, 4)
	var roles []string
	for _, m := range reqs[3].Messages {
		roles = append(roles, m.Role)
	}
	require.Equal(t, []string{"user", "assistant", "tool"}, roles)
	require.Equal(t, "call_w1", reqs[3].Messages[1].ToolCalls[0].ID)

	for _, c := range []struct {
		client openai.Client
		id     string
	}{{a, "msg_unknown"}, {a, msg + "0"}, {b, msg}} {
		_, err := c.client.Responses.New(ctx, responses.ResponseNewParams{Input: list(user("hi"), ref(c.id))})
		apiErr := wantAPIError(t, err, http.StatusBadRequest)
		require.Equal(t, "invalid_request_error", apiErr.Type)
		require.Equal(t, "input[1].id", apiErr.Param)
		require.Equal(t, "Item with id '"+c.id+"' not found.", apiErr.Message)
	}
	require.Len(t, fake.Requests(), 4, "no failed request reached the model")
}
