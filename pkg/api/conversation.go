package api

import (
	"encoding/json"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/lambent/lambent/internal/wirejson"
)

// PrefixConversation begins every conversation id.
const PrefixConversation = "conv_"

// MaxConversationIDLen bounds the length of a conversation id.
const MaxConversationIDLen = 128

// Conversation is the conversation object of the Conversations API
// (POST/GET /v1/conversations[/{id}]).
type Conversation struct {
	ID        string            `json:"id"`
	Object    string            `json:"object"`
	CreatedAt int64             `json:"created_at"`
	Metadata  map[string]string `json:"metadata"`
}

// MarshalJSON writes nil metadata as {}, as OpenAI does.
func (c *Conversation) MarshalJSON() ([]byte, error) {
	type plain Conversation
	p := plain(*c)
	if p.Metadata == nil {
		p.Metadata = map[string]string{}
	}
	return wirejson.Marshal(&p)
}

// ConversationDeleted is the body of DELETE /v1/conversations/{id}.
type ConversationDeleted struct {
	ID      string `json:"id"`
	Object  string `json:"object"` // "conversation.deleted"
	Deleted bool   `json:"deleted"`
}

// ConversationRef is a response's conversation: {"id": ...}.
type ConversationRef struct {
	ID string `json:"id"`
}

// ValidConversationID reports whether id is a well-formed conversation id:
// "conv_" followed by letters, digits, '_' or '-', at most
// MaxConversationIDLen characters in all. Nothing else reaches a store.
func ValidConversationID(id string) bool {
	return validPrefixedID(id, PrefixConversation, MaxConversationIDLen)
}

// decodeConversation decodes the create request's conversation: an id, or
// {"id": id}.
func (r *CreateResponseRequest) decodeConversation(v json.RawMessage) error {
	const p = "conversation"
	var id string
	switch v[0] {
	case '"':
		if err := into(p, v, &id); err != nil {
			return err
		}
	case '{':
		var w struct {
			ID *string `json:"id"`
		}
		if err := object(p, v, &w, "id"); err != nil {
			return err
		}
		if w.ID == nil {
			return InvalidRequest(p+".id", "missing required parameter: 'conversation.id'")
		}
		id = *w.ID
	default:
		return InvalidRequest(p, "invalid type for 'conversation': expected a string or an object with an id")
	}
	if id == "" {
		return InvalidRequestCode(p, "empty_string", "Invalid 'conversation': empty string. Expected a conversation id.")
	}
	r.Conversation = id
	return nil
}

// ConversationCreateRequest is the body of POST /v1/conversations.
type ConversationCreateRequest struct {
	// Items are the conversation's first items (at most
	// MaxConversationItemsPerCall by default; see package limits).
	Items    []Item
	Metadata map[string]string
}

// ConversationItemsRequest is the body of POST /v1/conversations/{id}/items.
type ConversationItemsRequest struct {
	Items []Item
}

// DecodeConversationCreate decodes and validates the body of POST
// /v1/conversations (an empty body is an empty conversation).
func DecodeConversationCreate(body []byte) (*ConversationCreateRequest, error) {
	out := &ConversationCreateRequest{}
	if len(strings.TrimSpace(string(body))) == 0 {
		return out, nil
	}
	fields, err := decodeObject(body)
	if err != nil {
		return nil, err
	}
	for _, k := range slices.Sorted(maps.Keys(fields)) {
		v := fields[k]
		switch k {
		case "items":
			if !isNull(v) {
				if out.Items, err = decodeItems("items", v); err != nil {
					return nil, err
				}
			}
		case "metadata":
			if !isNull(v) {
				if out.Metadata, err = decodeMetadata(k, v); err != nil {
					return nil, err
				}
			}
		default:
			return nil, unknownParam(k)
		}
	}
	if err := ValidateMetadata(out.Metadata); err != nil {
		return nil, err
	}
	return out, nil
}

// DecodeConversationItems decodes and validates the body of POST
// /v1/conversations/{id}/items: a non-empty items array.
func DecodeConversationItems(body []byte) (*ConversationItemsRequest, error) {
	fields, err := decodeObject(body)
	if err != nil {
		return nil, err
	}
	out := &ConversationItemsRequest{}
	for _, k := range slices.Sorted(maps.Keys(fields)) {
		v := fields[k]
		if k != "items" {
			return nil, unknownParam(k)
		}
		if !isNull(v) {
			if out.Items, err = decodeItems("items", v); err != nil {
				return nil, err
			}
		}
	}
	if len(out.Items) == 0 {
		return nil, InvalidRequest("items", "missing required parameter: 'items' (at least one item)")
	}
	return out, nil
}

// DecodeMetadataUpdate decodes the body of POST /v1/conversations/{id}:
// {"metadata": {...}}; metadata is required (null clears it).
func DecodeMetadataUpdate(body []byte) (map[string]string, error) {
	fields, err := decodeObject(body)
	if err != nil {
		return nil, err
	}
	v, ok := fields["metadata"]
	for _, k := range slices.Sorted(maps.Keys(fields)) {
		if k != "metadata" {
			return nil, unknownParam(k)
		}
	}
	if !ok {
		return nil, InvalidRequest("metadata", "missing required parameter: 'metadata'")
	}
	md := map[string]string{}
	if !isNull(v) {
		if md, err = decodeMetadata("metadata", v); err != nil {
			return nil, err
		}
	}
	if err := ValidateMetadata(md); err != nil {
		return nil, err
	}
	return md, nil
}

// decodeItems decodes an array of input items (param names it) and
// validates each: messages, function calls and outputs, reasoning,
// compaction and MCP items; item references are not items of their own
// and are refused.
func decodeItems(param string, v json.RawMessage) ([]Item, error) {
	if v[0] != '[' {
		return nil, InvalidRequest(param, "invalid type for '%s': expected an array of items", param)
	}
	if err := checkArrayLen(param, v); err != nil {
		return nil, err
	}
	var raws []json.RawMessage
	if err := unmarshal(v, &raws); err != nil {
		return nil, InvalidRequest(param, "invalid %s: %s", param, jsonErrText(err))
	}
	items := make([]Item, len(raws))
	for i, raw := range raws {
		p := param + "[" + strconv.Itoa(i) + "]"
		if err := unmarshal(raw, &items[i]); err != nil {
			return nil, prefixParam(typeError("", err), p)
		}
		if items[i].Type == ItemReference {
			return nil, InvalidRequest(p+".type", "item_reference items cannot be added to a conversation; add the item itself")
		}
		if err := validateInputItem(&items[i]); err != nil {
			return nil, prefixParam(err, p)
		}
	}
	return items, nil
}
