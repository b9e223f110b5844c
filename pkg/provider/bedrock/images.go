package bedrock

import (
	"context"
	"encoding/base64"
	"mime"
	"net/http"
	"net/url"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"

	"github.com/lambent/lambent/internal/bounded"
	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/provider"
)

func imageError(format string, args ...any) *api.Error {
	return api.InvalidRequestCode("input", "invalid_image", format, args...)
}

// image is the image block of an input_image URL: a data URL, or an
// http(s) URL fetched through the SSRF guard (package egress). Either is capped at
// p.maxImage bytes and must be png, jpeg, gif or webp.
func (p *Provider) image(ctx context.Context, raw string) (types.ContentBlock, error) {
	var (
		data      []byte
		mediaType string
		err       error
	)
	if rest, ok := cutPrefixFold(raw, "data:"); ok {
		data, mediaType, err = p.decodeDataURL(rest)
	} else {
		data, mediaType, err = p.fetchImage(ctx, raw)
	}
	if err != nil {
		return nil, err
	}
	// The bytes tell the format (the model refuses an image whose bytes
	// are not the format declared, and a declared type may be wrong,
	// missing or generic); the declared type only when they do not.
	format, ok := imageFormat(http.DetectContentType(data))
	if !ok {
		if format, ok = imageFormat(mediaType); !ok {
			return nil, imageError("the image at %s is %s; Bedrock takes png, jpeg, gif and webp images", describeURL(raw), mediaType)
		}
	}
	return &types.ContentBlockMemberImage{Value: types.ImageBlock{Format: format, Source: &types.ImageSourceMemberBytes{Value: data}}}, nil
}

func cutPrefixFold(s, prefix string) (string, bool) {
	if len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix) {
		return s[len(prefix):], true
	}
	return s, false
}

// describeURL names an image URL in errors without a data URL's payload.
func describeURL(raw string) string {
	if _, ok := cutPrefixFold(raw, "data:"); ok {
		return "the data URL"
	}
	if len(raw) > 200 {
		raw = raw[:200] + "…"
	}
	return raw
}

// decodeDataURL decodes the part of a data URL after "data:".
func (p *Provider) decodeDataURL(rest string) ([]byte, string, error) {
	meta, payload, ok := strings.Cut(rest, ",")
	if !ok {
		return nil, "", imageError("the image data URL has no ',' before its data")
	}
	isBase64 := false
	if m, ok := strings.CutSuffix(meta, ";base64"); ok {
		meta, isBase64 = m, true
	}
	mediaType, _, _ := mime.ParseMediaType(meta)
	var data []byte
	var err error
	if isBase64 {
		if int64(base64.StdEncoding.DecodedLen(len(payload))) > p.maxImage+2 {
			return nil, "", imageError("the image data URL holds more than %d bytes", p.maxImage)
		}
		data, err = base64.StdEncoding.DecodeString(payload)
		if err != nil {
			data, err = base64.RawStdEncoding.DecodeString(strings.TrimRight(payload, "="))
		}
	} else {
		var s string
		s, err = url.PathUnescape(payload)
		data = []byte(s)
	}
	if err != nil {
		return nil, "", imageError("the image data URL is not valid: %v", err)
	}
	if int64(len(data)) > p.maxImage {
		return nil, "", imageError("the image data URL holds more than %d bytes", p.maxImage)
	}
	if len(data) == 0 {
		return nil, "", imageError("the image data URL is empty")
	}
	return data, mediaType, nil
}

// fetchImage downloads an http(s) image URL (bounded by the context, the
// fetch timeout and the size cap).
func (p *Provider) fetchImage(ctx context.Context, raw string) ([]byte, string, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, "", imageError("image_url must be a data: URL or an absolute http(s) URL, not %q", describeURL(raw))
	}
	fctx, cancel := context.WithTimeout(ctx, p.imageTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(fctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, "", imageError("image_url %q: %v", describeURL(raw), err)
	}
	req.Header.Set("User-Agent", UserAgent)
	req.Header.Set("Accept", "image/png, image/jpeg, image/gif, image/webp")
	resp, err := p.images.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, "", provider.ContextError(ctx)
		}
		return nil, "", imageError("the image at %s could not be fetched: %v", describeURL(raw), err)
	}
	// Closed unread (an error answer): this client keeps no connections
	// (egress.DrainClose would save none).
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return nil, "", imageError("fetching the image at %s failed: HTTP %d", describeURL(raw), resp.StatusCode)
	}
	if resp.ContentLength > p.maxImage {
		return nil, "", imageError("the image at %s is larger than %d bytes", describeURL(raw), p.maxImage)
	}
	data, over, err := bounded.Read(resp.Body, resp.ContentLength, p.maxImage)
	if err != nil {
		if ctx.Err() != nil {
			return nil, "", provider.ContextError(ctx)
		}
		return nil, "", imageError("reading the image at %s failed: %v", describeURL(raw), err)
	}
	if over {
		return nil, "", imageError("the image at %s is larger than %d bytes", describeURL(raw), p.maxImage)
	}
	mediaType, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	return data, mediaType, nil
}

// imageFormat maps a media type to Bedrock's image format.
func imageFormat(mediaType string) (types.ImageFormat, bool) {
	mt, _, _ := strings.Cut(strings.ToLower(mediaType), ";")
	switch strings.TrimSpace(mt) {
	case "image/png":
		return types.ImageFormatPng, true
	case "image/jpeg", "image/jpg", "image/pjpeg":
		return types.ImageFormatJpeg, true
	case "image/gif":
		return types.ImageFormatGif, true
	case "image/webp":
		return types.ImageFormatWebp, true
	}
	return "", false
}

// CheckContent returns the 400 of the first content part of items this
// provider does not send, which the conversion of a model call refuses
// too: a message's (provider.CheckMessages), or an input_image by file_id
// of a function call's output or a computer call's screenshot (which the
// engine hands the model as a function call's output; resultImages).
func (p *Provider) CheckContent(items []api.Item) error {
	if err := provider.CheckMessages(items); err != nil {
		return err
	}
	for i := range items {
		it := &items[i]
		if shot, ok := it.Screenshot(); ok && shot.ImageURL == "" {
			return provider.ImageFileID()
		}
		if it.Type == api.ItemFunctionCallOutput {
			for j := range it.OutputParts {
				if part := &it.OutputParts[j]; part.Type == api.PartInputImage && part.ImageURL == "" {
					return provider.ImageFileID()
				}
			}
		}
	}
	return nil
}

// resultImages adds the input_image parts of a tool output (a function's
// image output, a computer call's screenshot) to its toolResult block, as
// image blocks.
func (p *Provider) resultImages(ctx context.Context, it *api.Item, res *types.ContentBlockMemberToolResult) error {
	for i := range it.OutputParts {
		part := &it.OutputParts[i]
		if part.Type != api.PartInputImage {
			continue
		}
		if part.ImageURL == "" {
			return provider.ImageFileID()
		}
		b, err := p.image(ctx, part.ImageURL)
		if err != nil {
			return err
		}
		if img, ok := b.(*types.ContentBlockMemberImage); ok {
			res.Value.Content = append(res.Value.Content, &types.ToolResultContentBlockMemberImage{Value: img.Value})
		}
	}
	return nil
}
