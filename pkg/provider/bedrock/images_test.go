package bedrock_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/internal/testing/fakebedrock"
	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/provider"
	"github.com/lambent/lambent/pkg/provider/bedrock"
)

// png is the start of a PNG file (its signature and IHDR chunk), which
// content sniffing recognises.
var png = append([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"), bytes.Repeat([]byte{7}, 40)...)

func imageMessage(url string) api.Item {
	return api.Item{Type: api.ItemMessage, Role: api.RoleUser, Content: []api.ContentPart{
		{Type: api.PartInputText, Text: "What is this?"}, {Type: api.PartInputImage, ImageURL: url},
	}}
}

func TestImages(t *testing.T) {
	images := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/cat.jpg":
			w.Header().Set("Content-Type", "image/jpeg")
			_, _ = w.Write([]byte("\xff\xd8\xff\xe0jpeg-bytes"))
		case "/untyped":
			w.Header().Set("Content-Type", "application/octet-stream")
			_, _ = w.Write(png)
		case "/big.png":
			w.Header().Set("Content-Type", "image/png")
			_, _ = w.Write(bytes.Repeat(png, 10))
		case "/page":
			w.Header().Set("Content-Type", "text/html")
			_, _ = w.Write([]byte("<html>not an image</html>"))
		default:
			http.NotFound(w, r)
		}
	}))
	defer images.Close()
	fake := fakebedrock.NewHandler(func(fakebedrock.Request) fakebedrock.Turn { return fakebedrock.Turn{Text: "A cat."} })
	defer fake.Close()
	newP := func(allow []string) *bedrock.Provider {
		return bedrock.New(bedrock.Config{AWS: fake.AWSConfig(), MaxImageBytes: 200, CachePoints: bedrock.CachePointsOff,
			ImageFetch: bedrock.ImageFetch{AllowHosts: allow, Client: images.Client()}})
	}
	p := newP([]string{"127.0.0.1"})
	dataURL := "data:image/png;base64," + base64.StdEncoding.EncodeToString(png)

	for _, tc := range []struct {
		name, url, format string
		data              []byte
	}{
		{"data URL", dataURL, "png", png},
		{"data URL with a generic type", "data:application/octet-stream;base64," + base64.StdEncoding.EncodeToString(png), "png", png},
		{"http URL", images.URL + "/cat.jpg", "jpeg", []byte("\xff\xd8\xff\xe0jpeg-bytes")},
		{"http URL, sniffed", images.URL + "/untyped", "png", png},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(fake.Requests())
			_, err := p.Complete(context.Background(), &provider.Request{Model: claude, Items: []api.Item{imageMessage(tc.url)}})
			require.NoError(t, err)
			m := fake.Requests()[before].Messages[0]
			require.Len(t, m.Content, 2)
			require.Equal(t, "What is this?", text(m.Content[0]))
			require.Equal(t, tc.format, m.Content[1].Image.Format)
			require.Equal(t, tc.data, m.Content[1].Image.Source.Bytes)
		})
	}

	for _, tc := range []struct {
		name string
		p    *bedrock.Provider
		item api.Item
		code string
	}{
		{"data URL over the cap", p, imageMessage("data:image/png;base64," + base64.StdEncoding.EncodeToString(bytes.Repeat(png, 10))), "invalid_image"},
		{"http URL over the cap", p, imageMessage(images.URL + "/big.png"), "invalid_image"},
		{"not an image", p, imageMessage(images.URL + "/page"), "invalid_image"},
		{"not found", p, imageMessage(images.URL + "/missing.png"), "invalid_image"},
		{"other scheme", p, imageMessage("file:///etc/passwd"), "invalid_image"},
		{"private address (SSRF guard)", newP(nil), imageMessage(images.URL + "/cat.jpg"), "invalid_image"},
		{"file_id", p, api.Item{Type: api.ItemMessage, Role: api.RoleUser, Content: []api.ContentPart{{Type: api.PartInputImage, FileID: "file_1"}}}, "unsupported_content"},
		{"input_file", p, api.Item{Type: api.ItemMessage, Role: api.RoleUser, Content: []api.ContentPart{{Type: api.PartInputFile, FileData: "abc"}}}, "unsupported_content"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := fake.Calls()
			_, err := tc.p.Complete(context.Background(), &provider.Request{Model: claude, Items: []api.Item{tc.item}})
			ae := requireAPIError(t, err, 400, api.ErrTypeInvalidRequest, tc.code)
			require.Equal(t, "input", ae.Param)
			require.Equal(t, before, fake.Calls(), "nothing is sent to Bedrock")
		})
	}
}

// CheckContent refuses, before a call, what converting the call refuses:
// a message's input_file and file_id image, a function output's file_id
// image, a computer call's screenshot by file_id; an image by URL passes.
func TestCheckContent(t *testing.T) {
	t.Parallel()
	p := bedrock.New(bedrock.Config{})
	for _, it := range []api.Item{
		{Type: api.ItemMessage, Role: api.RoleUser, Content: []api.ContentPart{{Type: api.PartInputImage, FileID: "file_1"}}},
		{Type: api.ItemMessage, Role: api.RoleUser, Content: []api.ContentPart{{Type: api.PartInputFile, FileData: "abc"}}},
		{Type: api.ItemMessage, Role: api.RoleDeveloper, Content: []api.ContentPart{{Type: api.PartInputImage, ImageURL: "https://example.com/a.png"}}},
		{Type: api.ItemFunctionCallOutput, CallID: "c1", OutputParts: []api.ContentPart{{Type: api.PartInputImage, FileID: "file_1"}}},
		{Type: api.ItemComputerCallOutput, CallID: "c1", OutputRaw: []byte(`{"type":"computer_screenshot","file_id":"file_1"}`)},
	} {
		ae := requireAPIError(t, p.CheckContent([]api.Item{it}), 400, api.ErrTypeInvalidRequest, "unsupported_content")
		require.Equal(t, "input", ae.Param)
	}
	require.NoError(t, p.CheckContent([]api.Item{imageMessage("https://example.com/a.png")}))
	require.NoError(t, p.CheckContent([]api.Item{{Type: api.ItemComputerCallOutput, CallID: "c1",
		OutputRaw: []byte(`{"type":"computer_screenshot","image_url":"https://example.com/a.png","file_id":"file_1"}`)}}))
}

// CheckContent refuses what a model call's conversion refuses with the
// same error (the engine's early refusal is the one a client sees): a
// developer message's image by file_id was "by file_id is not supported"
// early and "supported in user messages only" at the conversion.
func TestCheckContentMatchesConversion(t *testing.T) {
	t.Parallel()
	fake := fakebedrock.NewHandler(func(fakebedrock.Request) fakebedrock.Turn { return fakebedrock.Turn{Text: "ok"} })
	defer fake.Close()
	p := bedrock.New(bedrock.Config{AWS: fake.AWSConfig(), CachePoints: bedrock.CachePointsOff})
	for _, role := range []string{api.RoleUser, api.RoleSystem, api.RoleDeveloper} {
		for _, part := range []api.ContentPart{{Type: api.PartInputImage, FileID: "file_1"}, {Type: api.PartInputFile, FileData: "abc"}} {
			it := api.Item{Type: api.ItemMessage, Role: role, Content: []api.ContentPart{{Type: api.PartInputText, Text: "x"}, part}}
			early := p.CheckContent([]api.Item{it})
			_, late := p.Complete(context.Background(), &provider.Request{Model: claude, Items: []api.Item{it}})
			require.Error(t, late, "%s message, %s part", role, part.Type)
			require.Error(t, early, "%s message, %s part", role, part.Type)
			require.Equal(t, late.Error(), early.Error(), "%s message, %s part", role, part.Type)
		}
	}
}
