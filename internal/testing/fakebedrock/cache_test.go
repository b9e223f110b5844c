package fakebedrock_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
	"github.com/aws/smithy-go"
	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/internal/testing/fakebedrock"
)

const (
	sonnet4 = "us.anthropic.claude-sonnet-4-20250514-v1:0"
	nova    = "eu.amazon.nova-pro-v1:0"
)

func point() types.CachePointBlock { return types.CachePointBlock{Type: types.CachePointTypeDefault} }

func cachePoint() types.ContentBlock { return &types.ContentBlockMemberCachePoint{Value: point()} }

// The fake refuses the cache points Bedrock refuses.
func TestCachePointValidation(t *testing.T) {
	t.Parallel()
	// Every answer thinks, signed "sig", so the reasoning sent back is valid.
	fake := fakebedrock.NewHandler(func(fakebedrock.Request) fakebedrock.Turn {
		return fakebedrock.Turn{Text: "ok", Reasoning: "hm", Signature: "sig"}
	})
	defer fake.Close()
	client := bedrockruntime.NewFromConfig(fake.AWSConfig())
	user, asst := types.ConversationRoleUser, types.ConversationRoleAssistant
	withTools := func() *types.ToolConfiguration {
		tc := toolConfig()
		tc.Tools = append(tc.Tools, &types.ToolMemberCachePoint{Value: point()})
		return tc
	}
	system := []types.SystemContentBlock{&types.SystemContentBlockMemberText{Value: "Be brief."}, &types.SystemContentBlockMemberCachePoint{Value: point()}}
	reasoning := &types.ContentBlockMemberReasoningContent{Value: &types.ReasoningContentBlockMemberReasoningText{
		Value: types.ReasoningTextBlock{Text: aws.String("hm"), Signature: aws.String("sig")}}}
	for _, tc := range []struct {
		name, model string
		msgs        []types.Message
		system      []types.SystemContentBlock
		tools       *types.ToolConfiguration
		code, want  string // "" accepted
	}{
		{"four on Claude", sonnet4, []types.Message{message(user, text("a"), cachePoint()), message(asst, text("b")), message(user, text("c"), cachePoint())}, system, withTools(), "", ""},
		{"five on Claude", sonnet4, []types.Message{message(user, text("a"), cachePoint(), text("b"), cachePoint()), message(asst, text("b")), message(user, text("c"), cachePoint())}, system, withTools(),
			"ValidationException", "A maximum of 4 blocks with cache_control may be provided. Found 5."},
		{"ARN of a foundation model", "arn:aws:bedrock:us-east-1::foundation-model/anthropic.claude-3-7-sonnet-20250219-v1:0", []types.Message{message(user, text("a"), cachePoint())}, nil, withTools(), "", ""},
		{"Nova in system and messages", nova, []types.Message{message(user, text("a"), cachePoint())}, system, toolConfig(), "", ""},
		{"Nova in tools", nova, []types.Message{message(user, text("a"))}, nil, withTools(),
			"ValidationException", "#/toolConfig/tools/1: extraneous key [cachePoint] is not permitted"},
		{"a model without caching", "meta.llama3-70b-instruct-v1:0", []types.Message{message(user, text("a"), cachePoint())}, nil, nil,
			"AccessDeniedException", "You invoked an unsupported model or your request did not allow prompt caching."},
		{"Claude 3 Haiku", "anthropic.claude-3-haiku-20240307-v1:0", nil, system, nil,
			"AccessDeniedException", "did not allow prompt caching"},
		{"after reasoning", sonnet4, []types.Message{message(user, text("a")), message(asst, reasoning, cachePoint(), text("b")), message(user, text("c"))}, nil, nil,
			"ValidationException", "Cache point cannot be inserted after reasoning block."},
		{"not default", sonnet4, []types.Message{message(user, text("a"), &types.ContentBlockMemberCachePoint{Value: types.CachePointBlock{Type: "ephemeral"}})}, nil, nil,
			"ValidationException", "Member must satisfy enum value set: [default]"},
	} {
		msgs := tc.msgs
		if msgs == nil {
			msgs = []types.Message{message(user, text("a"))}
		}
		_, err := client.Converse(context.Background(), &bedrockruntime.ConverseInput{ModelId: aws.String(tc.model), Messages: msgs, System: tc.system, ToolConfig: tc.tools})
		if tc.want == "" {
			require.NoError(t, err, tc.name)
			continue
		}
		var ae smithy.APIError
		require.True(t, errors.As(err, &ae), "%s: %v", tc.name, err)
		require.Equal(t, tc.code, ae.ErrorCode(), tc.name)
		require.Contains(t, ae.ErrorMessage(), tc.want, tc.name)
	}
}

// The fake caches by cache point: the prefix up to a point is written
// once, then read by every request that starts with it (same model,
// within the TTL of the fake's clock); a prefix under the model's
// minimum is not cached; tokens are bytes / 4.
func TestCaching(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	fake := fakebedrock.NewHandler(func(fakebedrock.Request) fakebedrock.Turn {
		return fakebedrock.Turn{Text: "ok", Usage: fakebedrock.Usage{OutputTokens: 3}}
	})
	defer fake.Close()
	fake.SetClock(func() time.Time { mu.Lock(); defer mu.Unlock(); return now })
	advance := func(d time.Duration) { mu.Lock(); defer mu.Unlock(); now = now.Add(d) }
	client := bedrockruntime.NewFromConfig(fake.AWSConfig())
	user, asst := types.ConversationRoleUser, types.ConversationRoleAssistant
	long := strings.Repeat("All work and no play makes Jack a dull boy. ", 200) // 8,800 bytes
	system := []types.SystemContentBlock{&types.SystemContentBlockMemberText{Value: long}, &types.SystemContentBlockMemberCachePoint{Value: point()}}
	call := func(model string, system []types.SystemContentBlock, msgs ...types.Message) *types.TokenUsage {
		t.Helper()
		out, err := client.Converse(context.Background(), &bedrockruntime.ConverseInput{ModelId: aws.String(model), System: system, Messages: msgs})
		require.NoError(t, err)
		u := out.Usage
		require.Equal(t, int32(3), aws.ToInt32(u.OutputTokens))
		require.Equal(t, aws.ToInt32(u.InputTokens)+aws.ToInt32(u.CacheReadInputTokens)+aws.ToInt32(u.CacheWriteInputTokens)+3, aws.ToInt32(u.TotalTokens))
		return u
	}
	reads := func(u *types.TokenUsage) (int32, int32, int32) {
		return aws.ToInt32(u.InputTokens), aws.ToInt32(u.CacheReadInputTokens), aws.ToInt32(u.CacheWriteInputTokens)
	}

	q1 := message(user, text("What does Jack do?"), cachePoint())
	in, read, write := reads(call(sonnet4, system, q1))
	require.Zero(t, read)
	require.Greater(t, write, int32(2200), "the system prompt and the question are written")
	require.Zero(t, in, "nothing follows the last point")
	first := write

	// The next turn starts with the first: it reads all of it and writes
	// its new part.
	q2 := []types.Message{message(user, text("What does Jack do?"), cachePoint()), message(asst, text("He works.")), message(user, text("Does he play?"), cachePoint())}
	in, read, write = reads(call(sonnet4, system, q2...))
	require.Equal(t, first, read)
	require.Positive(t, write)
	require.Less(t, write, int32(20))
	require.Zero(t, in)
	second := first + write

	// Without a point at its end, the new part is plain input.
	q3 := []types.Message{q2[0], q2[1], message(user, text("Does he play?"), cachePoint()), message(asst, text("No.")), message(user, text("Why?"))}
	in, read, write = reads(call(sonnet4, system, q3...))
	require.Equal(t, second, read, "the second turn's prefix is read")
	require.Zero(t, write)
	require.Positive(t, in)

	// Claude looks back from a point for a cached prefix (up to 20
	// blocks); Nova reads at its points only.
	q4 := []types.Message{q2[0], q2[1], message(user, text("Does he play?")), message(asst, text("No.")), message(user, text("Why not?"), cachePoint())}
	_, read, write = reads(call(sonnet4, system, q4...))
	require.Equal(t, second, read, "found looking back")
	require.Positive(t, write)
	reads(call(nova, system, q2...))
	_, read, _ = reads(call(nova, system, q4...))
	require.Less(t, read, second, "no look-back: the first turn's point only")
	require.Positive(t, read)

	// Another model has its own cache.
	_, read, write = reads(call("us.anthropic.claude-3-7-sonnet-20250219-v1:0", system, q1))
	require.Zero(t, read)
	require.Equal(t, first, write)

	// A prefix under the minimum (1,024 tokens for Claude Sonnet 4) is
	// not cached, without an error.
	short := []types.SystemContentBlock{&types.SystemContentBlockMemberText{Value: "Be brief."}, &types.SystemContentBlockMemberCachePoint{Value: point()}}
	in, read, write = reads(call(sonnet4, short, q1))
	require.Zero(t, read)
	require.Zero(t, write)
	require.Positive(t, in)

	// Each use renews the TTL; 5 minutes without one and it is gone.
	advance(4 * time.Minute)
	_, read, _ = reads(call(sonnet4, system, q1))
	require.Equal(t, first, read)
	advance(4 * time.Minute)
	_, read, _ = reads(call(sonnet4, system, q1))
	require.Equal(t, first, read, "renewed by the read 4 minutes ago")
	advance(fakebedrock.CacheTTL)
	_, read, write = reads(call(sonnet4, system, q1))
	require.Zero(t, read)
	require.Equal(t, first, write)

	// A scripted input usage is reported as scripted; the estimate stays
	// on the request.
	reqs := fake.Requests()
	require.Equal(t, first, int32(reqs[0].Metered.CacheWriteInputTokens))
}

// A scripted usage with input figures is reported as it is.
func TestCachingScriptedUsage(t *testing.T) {
	t.Parallel()
	fake := fakebedrock.New(fakebedrock.Turn{Text: "ok", Usage: fakebedrock.Usage{InputTokens: 7, OutputTokens: 1}})
	defer fake.Close()
	client := bedrockruntime.NewFromConfig(fake.AWSConfig())
	out, err := client.Converse(context.Background(), &bedrockruntime.ConverseInput{ModelId: aws.String(sonnet4),
		Messages: []types.Message{message(types.ConversationRoleUser, text(strings.Repeat("x", 8000)), cachePoint())}})
	require.NoError(t, err)
	require.Equal(t, int32(7), aws.ToInt32(out.Usage.InputTokens))
	require.Zero(t, aws.ToInt32(out.Usage.CacheWriteInputTokens))
	require.Positive(t, fake.Requests()[0].Metered.CacheWriteInputTokens)
}
