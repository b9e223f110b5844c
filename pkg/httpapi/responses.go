package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"mime"
	"net/http"
	"slices"
	"strconv"

	"github.com/lambent/lambent/internal/textcut"
	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/pacing"
)

// body reads a JSON request body within the size limit; it fails with a
// 415, 413 or 400. A body must come as application/json: without a
// Content-Type it is refused too (see Handler), an empty body is not.
func (h *Handler) body(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	if ct := r.Header.Get("Content-Type"); ct != "" || r.ContentLength != 0 {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || mt != "application/json" {
			msg := "Unsupported Content-Type " + strconv.Quote(ct) + "; send application/json."
			if ct == "" {
				msg = "The request body has no Content-Type; send it as application/json."
			}
			return nil, &api.Error{Status: http.StatusUnsupportedMediaType, Type: api.ErrTypeInvalidRequest, Code: "unsupported_media_type", Message: msg}
		}
	}
	return api.ReadLimited(http.MaxBytesReader(w, r.Body, h.maxBody+1), h.maxBody)
}

// create serves POST /v1/responses.
func (h *Handler) create(w http.ResponseWriter, r *http.Request) error {
	body, err := h.body(w, r)
	if err != nil {
		return err
	}
	req, err := api.DecodeCreateRequest(body)
	if err != nil {
		return err
	}
	h.logClient(r)
	create := h.svc.CreateResponse
	if req.Background {
		create = h.svc.CreateBackground
	}
	rw := &responseWriter{h: h, w: w}
	defer rw.release()
	pw := pacing.New(rw, h.pacing)
	// Also on a panic, which httpapi recovers: the pacer's timer must not
	// write to w (nor take a buffer back into rw) once the handler returned.
	defer pw.Close()
	err = create(r.Context(), req, pw)
	// The pacing stops: what rw still buffers (the terminal event) goes
	// out with the end of the stream.
	pw.Close()
	if err != nil {
		if rw.begun() {
			h.log.WarnContext(r.Context(), "error after the response started", "err", err)
			_ = rw.Flush()
			return nil
		}
		if errors.Is(err, context.Canceled) {
			return nil
		}
		return err
	}
	if rw.begun() && req.Stream {
		rw.done()
	}
	return nil
}

// compact serves POST /v1/responses/compact.
func (h *Handler) compact(w http.ResponseWriter, r *http.Request) error {
	return serveCall(h, w, r, api.DecodeCompactRequest, h.svc.Compact)
}

// inputTokens serves POST /v1/responses/input_tokens, OpenAI's count of a
// create request's input tokens: the body decoded as a create request's
// (api.DecodeInputTokensRequest), counted by the model's provider (a 501
// input_tokens_unsupported when it cannot count: engine.CountInputTokens).
func (h *Handler) inputTokens(w http.ResponseWriter, r *http.Request) error {
	return serveCall(h, w, r, api.DecodeInputTokensRequest, h.svc.CountInputTokens)
}

// serveCall serves a POST whose JSON body decode reads and call answers
// with one JSON object; a call the client gave up on (its context
// cancelled) writes nothing.
func serveCall[Q, R any](h *Handler, w http.ResponseWriter, r *http.Request, decode func([]byte) (Q, error), call func(context.Context, Q) (R, error)) error {
	body, err := h.body(w, r)
	if err != nil {
		return err
	}
	req, err := decode(body)
	if err != nil {
		return err
	}
	res, err := call(r.Context(), req)
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return nil
		}
		return err
	}
	h.writeJSON(w, http.StatusOK, res)
	return nil
}

// get serves GET /v1/responses/{id}: the response, or with stream=true its
// events.
func (h *Handler) get(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	q := r.URL.Query()
	if q.Get("stream") == "true" || streamInBody(r) {
		after := int64(-1)
		if v := q.Get("starting_after"); v != "" {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 {
				return api.InvalidRequest("starting_after", "starting_after must be a non-negative integer")
			}
			after = n
		}
		rw := &responseWriter{h: h, w: w}
		defer rw.release()
		pw := pacing.New(rw, h.pacing)
		defer pw.Close() // also on a panic, as in create
		err := h.svc.StreamResponse(r.Context(), id, after, pw)
		pw.Close()
		if err != nil {
			if rw.begun() {
				_ = rw.Flush()
				return nil
			}
			return err
		}
		rw.done()
		return nil
	}
	if err := includeQuery(r); err != nil {
		return err
	}
	resp, err := h.svc.GetResponse(r.Context(), id)
	if err != nil {
		return err
	}
	if includesReasoningState(r) {
		c := *resp
		c.Output = showReasoningState(c.Output)
		resp = &c
	}
	h.writeJSON(w, http.StatusOK, resp)
	return nil
}

// streamInBody reports whether a GET carries {"stream": true} as a JSON
// body, as the official SDKs' retrieve-streaming helpers send it.
func streamInBody(r *http.Request) bool {
	if r.Body == nil || r.ContentLength == 0 {
		return false
	}
	var b struct {
		Stream bool `json:"stream"`
	}
	data, err := api.ReadLimited(r.Body, 4096)
	return err == nil && json.Unmarshal(data, &b) == nil && b.Stream
}

// delete serves DELETE /v1/responses/{id}.
func (h *Handler) delete(w http.ResponseWriter, r *http.Request) error {
	res, err := h.svc.DeleteResponse(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	h.writeJSON(w, http.StatusOK, res)
	return nil
}

// cancel serves POST /v1/responses/{id}/cancel.
func (h *Handler) cancel(w http.ResponseWriter, r *http.Request) error {
	res, err := h.svc.CancelResponse(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	h.writeJSON(w, http.StatusOK, res)
	return nil
}

// inputItems serves GET /v1/responses/{id}/input_items.
func (h *Handler) inputItems(w http.ResponseWriter, r *http.Request) error {
	return h.listItems(w, r, h.svc.ListInputItems)
}

// listItems serves a page of the items of the object {id} (a response's
// input, a conversation's items) that list returns, as the query asks
// (listOptions, include).
func (h *Handler) listItems(w http.ResponseWriter, r *http.Request, list func(ctx context.Context, id string, opts api.ListOptions) (*api.ItemList, error)) error {
	opts, err := listOptions(r)
	if err != nil {
		return err
	}
	page, err := list(r.Context(), r.PathValue("id"), opts)
	if err != nil {
		return err
	}
	if includesReasoningState(r) {
		page.Data = showReasoningState(page.Data)
	}
	h.writeJSON(w, http.StatusOK, page)
	return nil
}

// listOptions reads the query of a list of items: after (an item id),
// order (asc or desc, default desc), limit (1..100, default 20) and
// include (checked; includesReasoningState reads it).
func listOptions(r *http.Request) (api.ListOptions, error) {
	q := r.URL.Query()
	opts := api.ListOptions{After: q.Get("after"), Order: q.Get("order"), Limit: api.DefaultListLimit}
	if opts.After != "" && !api.ValidItemID(opts.After) {
		return opts, api.InvalidRequest("after", "after must be the id of an item: at most %d printable ASCII characters", api.MaxItemIDLen)
	}
	if opts.Order == "" {
		opts.Order = "desc"
	}
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil {
			return opts, api.InvalidRequest("limit", "limit must be an integer between 1 and %d", api.MaxListLimit)
		}
		opts.Limit = n
	}
	if err := api.CheckListQuery(opts.Order, opts.Limit); err != nil {
		return opts, err
	}
	return opts, includeQuery(r)
}

// includeQuery checks the include values of a query (include or
// include[]). Items are stored whole, so each known value is included
// already, but for reasoning items' encrypted_content, shown only when
// asked for (includesReasoningState).
func includeQuery(r *http.Request) error {
	return api.ValidateInclude("include", includeValues(r))
}

func includeValues(r *http.Request) []string {
	q := r.URL.Query()
	return append(q["include"], q["include[]"]...)
}

// includesReasoningState reports whether a read's include asks for
// reasoning items' encrypted_content (api.IncludeReasoningEncrypted).
func includesReasoningState(r *http.Request) bool {
	return slices.Contains(includeValues(r), api.IncludeReasoningEncrypted)
}

// showReasoningState is a copy of items with the hidden state of their
// reasoning items shown as encrypted_content (api.ShowReasoningState).
func showReasoningState(items []api.Item) []api.Item {
	items = slices.Clone(items)
	api.ShowReasoningState(items)
	return items
}

// health serves GET /healthz.
func (h *Handler) health(w http.ResponseWriter, _ *http.Request) error {
	h.writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	return nil
}

// listModels serves GET /v1/models: the models the gateway names and its
// providers reported.
func (h *Handler) listModels(w http.ResponseWriter, _ *http.Request) error {
	h.writeJSON(w, http.StatusOK, h.catalog().List())
	return nil
}

// getModel serves GET /v1/models/{id}: a model the gateway routes, else a
// 404 model_not_found.
func (h *Handler) getModel(w http.ResponseWriter, r *http.Request) error {
	m, err := h.catalog().Get(r.PathValue("id"))
	if err != nil {
		return err
	}
	h.writeJSON(w, http.StatusOK, m)
	return nil
}

// logClient logs, at level info, the headers by which OpenAI's own
// clients (Codex) name themselves, their session and their request, when
// a create request carries any, so that the request's log lines can be
// found by the client's ids.
func (h *Handler) logClient(r *http.Request) {
	clientHeaders := [...]struct{ header, attr string }{
		{"Originator", "originator"},
		{"Session-Id", "session_id"},
		{"X-Client-Request-Id", "client_request_id"},
	}
	var attrs []slog.Attr
	for _, c := range clientHeaders {
		if v := r.Header.Get(c.header); v != "" {
			attrs = append(attrs, slog.String(c.attr, textcut.Prefix(v, 128)))
		}
	}
	if len(attrs) > 0 {
		h.log.LogAttrs(r.Context(), slog.LevelInfo, "client request", attrs...)
	}
}

// catalog is the models of Config.Models now.
func (h *Handler) catalog() api.Models {
	if h.models == nil {
		return api.Models{}
	}
	return h.models.Models()
}
