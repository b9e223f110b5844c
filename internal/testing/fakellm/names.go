package fakellm

import (
	"net/http"
	"strings"
)

// NameModel is a fake that remembers a name, for tests of what a
// continuation sees: it answers "What is my name?" from the
// conversation's "My name is X" message, refuses (a 400) a last message
// that contains "fail", and answers anything else with greeting.
func NameModel(greeting string) *Server {
	return NewHandler(func(req Request) Turn {
		last := req.Messages[len(req.Messages)-1].Content.String()
		switch {
		case strings.Contains(last, "fail"):
			return Turn{Status: http.StatusBadRequest, ErrorMessage: "refused"}
		case strings.Contains(last, "What is my name?"):
			for _, m := range req.Messages {
				if s := m.Content.String(); strings.HasPrefix(s, "My name is ") {
					return Turn{Text: "Your name is " + strings.TrimPrefix(s, "My name is ") + "."}
				}
			}
			return Turn{Text: "I do not know your name."}
		}
		return Turn{Text: greeting}
	})
}
