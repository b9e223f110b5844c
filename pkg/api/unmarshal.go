package api

import (
	"encoding/json"
	"errors"

	"github.com/lambent/lambent/internal/wirejson"
)

// unmarshal decodes data into v as json.Unmarshal does: with wirejson's
// decoder first (about three times faster, and it does not scan each nested
// value again before decoding it, as encoding/json does at every level of a
// request's items and content parts), then, only when that fails, again with
// encoding/json, whose errors the API's 400 texts are built from. A valid
// body costs one fast pass; a faulty one pays for both
// (FuzzUnmarshalMatchesEncodingJSON holds the two to the same results).
//
// An *Error is a nested value's decoder refusing it (an item's, a content
// part's), its text already built from encoding/json's: it is returned as
// it is, as encoding/json returns it, rather than decoding everything
// again, and everything under it again at each level above.
func unmarshal(data []byte, v any) error {
	err := wirejson.Unmarshal(data, v)
	if err == nil {
		return nil
	}
	if e := (*Error)(nil); errors.As(err, &e) && json.Valid(data) {
		return e
	}
	return json.Unmarshal(data, v)
}

// decodes reports whether data decodes into v, for a probe that needs no
// error text.
func decodes(data []byte, v any) bool { return wirejson.Unmarshal(data, v) == nil }

// unmarshalFields decodes the JSON object data into its fields, as
// unmarshal does (nil for null). The map starts small: wirejson's decoder
// would make one for 64 fields.
func unmarshalFields(data []byte) (map[string]json.RawMessage, error) {
	fields := make(map[string]json.RawMessage, 8)
	err := unmarshal(data, &fields)
	return fields, err
}

// decodeElems decodes the JSON array v (the request's param) into a []T.
// The elements are decoded in one pass over v, each by T's decoder; when
// that fails, again one at a time by elem, from their texts, which alias
// v (nothing of it copied), so that the error names the element (and elem
// may accept a form T's decoder refuses). A valid array is read once;
// splitting it first and decoding each element by itself made Codex's
// first request decode about 15% slower (docs/performance.md).
func decodeElems[T any](param string, v json.RawMessage, elem func(i int, raw json.RawMessage, t *T) error) ([]T, error) {
	var out []T
	if wirejson.Unmarshal(v, &out) == nil {
		return out, nil
	}
	raws, err := wirejson.SplitArray(v)
	if err != nil {
		if err := unmarshal(v, &raws); err != nil {
			return nil, InvalidRequest(param, "invalid %s: %s", param, jsonErrText(err))
		}
	}
	if raws == nil {
		return nil, nil
	}
	out = make([]T, len(raws))
	for i, raw := range raws {
		if err := elem(i, raw, &out[i]); err != nil {
			return nil, err
		}
	}
	return out, nil
}
