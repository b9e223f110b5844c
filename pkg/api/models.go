package api

import (
	"net/http"
	"strings"
)

// Model is one model of GET /v1/models, in OpenAI's shape.
type Model struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

// ModelList is the body of GET /v1/models.
type ModelList struct {
	Object string  `json:"object"`
	Data   []Model `json:"data"`
}

// Models is what the gateway tells clients of its models: the models it
// names (the default model, the models of exact routes), the models its
// providers reported, and the prefixes of its prefix routes, each with the
// provider that serves it (owned_by).
type Models struct {
	// Named are listed by GET /v1/models first, in order.
	Named []Model
	// Reported are the models a provider listed (its GET /models), listed
	// after Named (those Named has already left out).
	Reported []Model
	// Prefixes are prefix routes (ID holds the prefix, without its "*"):
	// GET /v1/models/{id} knows a model id that starts with one.
	Prefixes []Model
}

// List is the body of GET /v1/models.
func (m Models) List() ModelList {
	data := make([]Model, 0, len(m.Named)+len(m.Reported))
	seen := make(map[string]bool, len(m.Named))
	for _, l := range [][]Model{m.Named, m.Reported} {
		for _, x := range l {
			if !seen[x.ID] {
				seen[x.ID] = true
				data = append(data, withObject(x))
			}
		}
	}
	return ModelList{Object: "list", Data: data}
}

// Get is the body of GET /v1/models/{id}: a listed model, else a model
// of a prefix route (the longest prefix); else a 404 model_not_found, as
// OpenAI answers.
func (m Models) Get(id string) (*Model, error) {
	for _, x := range m.List().Data {
		if x.ID == id {
			return &x, nil
		}
	}
	var best *Model
	for i, p := range m.Prefixes {
		if strings.HasPrefix(id, p.ID) && (best == nil || len(p.ID) > len(best.ID)) {
			best = &m.Prefixes[i]
		}
	}
	if best == nil {
		return nil, &Error{Status: http.StatusNotFound, Type: ErrTypeInvalidRequest, Param: "model", Code: "model_not_found",
			Message: "The model '" + id + "' does not exist or is not routed by this gateway."}
	}
	x := withObject(Model{ID: id, OwnedBy: best.OwnedBy})
	return &x, nil
}

func withObject(m Model) Model {
	m.Object = "model"
	return m
}
