package hooks

import (
	"fmt"
	"strings"

	"github.com/lambent/lambent/pkg/egress"
)

// Kinds of hook targets.
const (
	// TargetEventBridge is "eventbridge:<bus name or ARN>".
	TargetEventBridge = "eventbridge"
	// TargetLambda is "lambda:<function name or ARN>", invoked
	// asynchronously.
	TargetLambda = "lambda"
	// TargetWebhook is an http:// or https:// URL.
	TargetWebhook = "webhook"
)

// Target is one hook of LAMBENT_HOOKS.
type Target struct {
	Kind string
	// Value is the bus, the function or the URL.
	Value string
}

// ParseTargets reads LAMBENT_HOOKS: comma-separated targets, each
// "eventbridge:<bus>", "lambda:<function>" or an http(s) URL. Empty
// entries are skipped (the template joins optional ones).
func ParseTargets(s string) ([]Target, error) {
	var out []Target
	for e := range strings.SplitSeq(s, ",") {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		kind, value, _ := strings.Cut(e, ":")
		switch kind = strings.ToLower(kind); kind {
		case TargetEventBridge, TargetLambda:
			if value == "" {
				return nil, fmt.Errorf("hook %q: nothing follows %q", e, kind+":")
			}
			out = append(out, Target{Kind: kind, Value: value})
		case "http", "https":
			out = append(out, Target{Kind: TargetWebhook, Value: e})
		default:
			// Named without what may be a URL's query (a token).
			return nil, fmt.Errorf("hook %q: want eventbridge:<bus>, lambda:<function> or an http(s) URL", egress.ShownURL(e))
		}
	}
	return out, nil
}
