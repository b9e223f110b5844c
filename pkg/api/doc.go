// Package api holds the OpenResponses wire types: the create-response request
// and its validation, the response object, items and content parts, streaming
// events, the response status state machine, IDs and API errors.
//
// It imports only the standard library and internal/wirejson (the encoder
// its MarshalJSON methods use); every other package of Lambent builds on it.
package api
