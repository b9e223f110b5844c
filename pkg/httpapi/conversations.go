package httpapi

import (
	"net/http"

	"github.com/lambent/lambent/pkg/api"
)

// The Conversations API: /v1/conversations and its items, as OpenAI
// defines them (see docs/api.md, "Conversations").

// createConversation serves POST /v1/conversations.
func (h *Handler) createConversation(w http.ResponseWriter, r *http.Request) error {
	body, err := h.body(w, r)
	if err != nil {
		return err
	}
	req, err := api.DecodeConversationCreate(body)
	if err != nil {
		return err
	}
	c, err := h.svc.CreateConversation(r.Context(), req)
	if err != nil {
		return err
	}
	h.writeJSON(w, http.StatusOK, c)
	return nil
}

// getConversation serves GET /v1/conversations/{id}.
func (h *Handler) getConversation(w http.ResponseWriter, r *http.Request) error {
	c, err := h.svc.GetConversation(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	h.writeJSON(w, http.StatusOK, c)
	return nil
}

// updateConversation serves POST /v1/conversations/{id}: new metadata.
func (h *Handler) updateConversation(w http.ResponseWriter, r *http.Request) error {
	body, err := h.body(w, r)
	if err != nil {
		return err
	}
	md, err := api.DecodeMetadataUpdate(body)
	if err != nil {
		return err
	}
	c, err := h.svc.UpdateConversation(r.Context(), r.PathValue("id"), md)
	if err != nil {
		return err
	}
	h.writeJSON(w, http.StatusOK, c)
	return nil
}

// deleteConversation serves DELETE /v1/conversations/{id}.
func (h *Handler) deleteConversation(w http.ResponseWriter, r *http.Request) error {
	res, err := h.svc.DeleteConversation(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	h.writeJSON(w, http.StatusOK, res)
	return nil
}

// addConversationItems serves POST /v1/conversations/{id}/items.
func (h *Handler) addConversationItems(w http.ResponseWriter, r *http.Request) error {
	if err := includeQuery(r); err != nil {
		return err
	}
	body, err := h.body(w, r)
	if err != nil {
		return err
	}
	req, err := api.DecodeConversationItems(body)
	if err != nil {
		return err
	}
	list, err := h.svc.AddConversationItems(r.Context(), r.PathValue("id"), req.Items)
	if err != nil {
		return err
	}
	h.writeJSON(w, http.StatusOK, list)
	return nil
}

// listConversationItems serves GET /v1/conversations/{id}/items.
func (h *Handler) listConversationItems(w http.ResponseWriter, r *http.Request) error {
	return h.listItems(w, r, h.svc.ListConversationItems)
}

// getConversationItem serves GET /v1/conversations/{id}/items/{item_id}.
func (h *Handler) getConversationItem(w http.ResponseWriter, r *http.Request) error {
	if err := includeQuery(r); err != nil {
		return err
	}
	it, err := h.svc.GetConversationItem(r.Context(), r.PathValue("id"), r.PathValue("item_id"))
	if err != nil {
		return err
	}
	if includesReasoningState(r) {
		it = &showReasoningState([]api.Item{*it})[0]
	}
	h.writeJSON(w, http.StatusOK, it)
	return nil
}

// deleteConversationItem serves DELETE /v1/conversations/{id}/items/{item_id}:
// the answer is the conversation, as OpenAI's.
func (h *Handler) deleteConversationItem(w http.ResponseWriter, r *http.Request) error {
	c, err := h.svc.DeleteConversationItem(r.Context(), r.PathValue("id"), r.PathValue("item_id"))
	if err != nil {
		return err
	}
	h.writeJSON(w, http.StatusOK, c)
	return nil
}
