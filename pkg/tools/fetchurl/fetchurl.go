// Package fetchurl implements the "fetch_url" hosted tool: an HTTP(S) GET
// that returns a page's readable text to the model.
//
// Because the model chooses the URL, the tool is guarded against server-side
// request forgery: its dialer resolves every host itself and refuses
// loopback, private, link-local (including cloud metadata endpoints),
// carrier-grade NAT, multicast, unspecified and reserved addresses, in IPv4,
// IPv6 and IPv4-embedding IPv6 forms. The check runs for every connection,
// after DNS resolution, so redirects and DNS rebinding cannot get around it.
package fetchurl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/lambent/lambent/internal/bounded"
	"github.com/lambent/lambent/internal/textcut"
	"github.com/lambent/lambent/pkg/egress"
	"github.com/lambent/lambent/pkg/tooldef"
	"github.com/lambent/lambent/pkg/tools"
)

// Name is the function name the model uses to call the tool.
const Name = "fetch_url"

// UserAgent is the User-Agent header sent with every request.
const UserAgent = "Lambent-fetch_url/1"

// MaxRedirects is the most redirects one fetch follows.
const MaxRedirects = egress.MaxRedirects

// Defaults applied to zero (or negative) Config fields.
const (
	// DefaultTimeout bounds a whole fetch: connect, redirects and body.
	DefaultTimeout = 10 * time.Second
	// DefaultMaxBytes is how much of a response body is read.
	DefaultMaxBytes = 1 << 20
	// DefaultMaxOutput is the most text returned to the model.
	DefaultMaxOutput = 32 << 10
)

// maxURLLength bounds the URL the model may pass.
const maxURLLength = 8 << 10

// Config configures the fetch_url tool. The zero value is ready to use.
type Config struct {
	// Timeout bounds one whole fetch, redirects and body included
	// (default DefaultTimeout).
	Timeout time.Duration
	// MaxBytes is how many bytes of the response body are read at most;
	// anything beyond is ignored and the output says it was truncated
	// (default DefaultMaxBytes).
	MaxBytes int64
	// MaxOutput is the most bytes of text returned, header and truncation
	// note included (default DefaultMaxOutput).
	MaxOutput int
	// AllowHosts lists destinations that bypass the SSRF guard, for tests
	// and trusted internal services. Each entry is a host name or IP
	// ("localhost", "127.0.0.1", "[::1]"), a host:port ("127.0.0.1:8080"),
	// or a CIDR range ("10.1.0.0/16"). Host names match the name in the URL;
	// IPs and ranges match the resolved address. Unparsable entries never
	// match anything.
	AllowHosts []string
	// Client, when set, is used for requests: its settings (TLS roots,
	// timeout, cookie jar) are kept, but its redirect policy is replaced and,
	// when its Transport is nil or an *http.Transport, a clone of that
	// transport gets the guarded dialer, no proxy and no keep-alives. Any
	// other RoundTripper is used as is: the URL checks still run, but the
	// dial-time guard cannot, so such a transport must enforce its own
	// egress policy.
	Client *http.Client
}

// Tool returns the fetch_url hosted tool. The handler takes {"url": string}
// and returns the final URL, the page title when there is one, and the
// page's readable text; failures (refused destination, timeout, non-2xx
// status, unsupported content type) come back as errors.
func Tool(cfg Config) tools.Hosted {
	return newTool(cfg, nil)
}

func newTool(cfg Config, lookup egress.LookupFunc) tools.Hosted {
	f := newFetcher(cfg, lookup)
	return tools.Hosted{
		Definition: tooldef.ToolDefinition{
			Name:        Name,
			Description: description,
			Parameters:  json.RawMessage(parameters),
		},
		Handler: f.handle,
	}
}

const description = "Fetch a web page or other text resource from the public internet with an HTTP GET and return its readable text. " +
	"HTML pages are converted to plain text (scripts, styles and markup removed; headings, paragraphs, list items and table rows kept on their own lines; link text kept, link targets dropped). " +
	"Plain text and JSON are returned as is; images, PDFs and other binary content are not supported. " +
	"Only absolute http:// and https:// URLs on public hosts can be fetched: localhost, private networks and cloud metadata addresses are refused. " +
	"Redirects are followed (up to 5). The result starts with the final URL and the page title; long pages are cut off with a [truncated] note. " +
	"Use it to read a specific page whose URL you know, e.g. documentation or an article."

const parameters = `{
  "type": "object",
  "properties": {
    "url": {
      "type": "string",
      "description": "Absolute http:// or https:// URL of the page to fetch, e.g. \"https://go.dev/doc/\"."
    }
  },
  "required": ["url"],
  "additionalProperties": false
}`

type fetcher struct {
	client    *http.Client
	guard     *egress.Guard
	timeout   time.Duration
	maxBytes  int64
	maxOutput int
}

func newFetcher(cfg Config, lookup egress.LookupFunc) *fetcher {
	f := &fetcher{
		guard:     egress.NewWithLookup(cfg.AllowHosts, lookup),
		timeout:   cfg.Timeout,
		maxBytes:  cfg.MaxBytes,
		maxOutput: cfg.MaxOutput,
	}
	if f.timeout <= 0 {
		f.timeout = DefaultTimeout
	}
	if f.maxBytes <= 0 {
		f.maxBytes = DefaultMaxBytes
	}
	if f.maxOutput <= 0 {
		f.maxOutput = DefaultMaxOutput
	}
	f.client = f.guard.Client(cfg.Client, false)
	return f
}

type arguments struct {
	URL *string `json:"url"`
}

func (f *fetcher) handle(ctx context.Context, call tools.ToolCall) (string, error) {
	var args arguments
	if err := json.Unmarshal([]byte(call.Arguments), &args); err != nil {
		return "", fmt.Errorf("invalid arguments: expected a JSON object like {\"url\": \"https://example.com/\"}: %w", err)
	}
	if args.URL == nil || strings.TrimSpace(*args.URL) == "" {
		return "", errors.New("missing required argument \"url\"")
	}
	raw := strings.TrimSpace(*args.URL)
	if len(raw) > maxURLLength {
		return "", fmt.Errorf("URL too long: %d bytes (max %d)", len(raw), maxURLLength)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("invalid URL: %w", err)
	}
	if !u.IsAbs() {
		return "", fmt.Errorf("invalid URL %q: it must be absolute and start with http:// or https://", raw)
	}
	u.Fragment, u.RawFragment = "", ""
	if err := f.guard.CheckURL(u); err != nil {
		return "", fmt.Errorf("fetch %s: %w", u.Redacted(), err)
	}

	reqCtx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(reqCtx, http.MethodGet, u.String(), nil)
	if err != nil {
		return "", fmt.Errorf("fetch %s: %w", u.Redacted(), err)
	}
	req.Header.Set("User-Agent", UserAgent)
	req.Header.Set("Accept", "text/html,application/xhtml+xml,text/plain;q=0.9,application/json;q=0.9,*/*;q=0.5")

	resp, err := f.client.Do(req)
	if err != nil {
		return "", f.fetchError(ctx, reqCtx, u, err)
	}
	// Closed unread (an error answer): this client keeps no connections
	// (egress.DrainClose would save none).
	defer func() { _ = resp.Body.Close() }()
	final := u
	if resp.Request != nil && resp.Request.URL != nil {
		final = resp.Request.URL
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return "", fmt.Errorf("fetch %s: HTTP %s", final.Redacted(), resp.Status)
	}

	body, bodyTruncated, err := bounded.Read(resp.Body, 0, f.maxBytes)
	if err != nil {
		return "", f.fetchError(ctx, reqCtx, final, err)
	}

	title, text, err := f.render(resp.Header.Get("Content-Type"), body)
	if err != nil {
		return "", fmt.Errorf("fetch %s: %w", final.Redacted(), err)
	}
	return f.format(final.Redacted(), title, text, bodyTruncated), nil
}

// fetchError turns a transport error into a message for the model, naming
// our own timeout explicitly.
func (f *fetcher) fetchError(parent, reqCtx context.Context, u *url.URL, err error) error {
	target := u.Redacted()
	var ue *url.Error
	if errors.As(err, &ue) {
		if pu, perr := url.Parse(ue.URL); perr == nil {
			target = pu.Redacted()
		}
		err = ue.Err
	}
	if parent.Err() == nil && errors.Is(reqCtx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("fetch %s: timed out after %s: %w", target, f.timeout, err)
	}
	return fmt.Errorf("fetch %s: %w", target, err)
}

type contentKind int

const (
	kindUnsupported contentKind = iota
	kindHTML
	kindText
)

func classify(mediaType string) contentKind {
	switch {
	case mediaType == "text/html" || mediaType == "application/xhtml+xml":
		return kindHTML
	case strings.HasPrefix(mediaType, "text/"),
		mediaType == "application/json", strings.HasSuffix(mediaType, "+json"),
		mediaType == "application/x-ndjson", mediaType == "application/ndjson",
		mediaType == "application/xml", strings.HasSuffix(mediaType, "+xml"),
		mediaType == "application/javascript", mediaType == "application/x-javascript",
		mediaType == "application/ecmascript",
		mediaType == "application/yaml", mediaType == "application/x-yaml",
		mediaType == "application/toml":
		return kindText
	}
	return kindUnsupported
}

// render converts a body to text according to its (declared or sniffed)
// content type.
func (f *fetcher) render(contentType string, body []byte) (title, text string, err error) {
	mediaType, params, perr := mime.ParseMediaType(contentType)
	if perr != nil || mediaType == "application/octet-stream" || mediaType == "binary/octet-stream" {
		contentType = http.DetectContentType(body)
		mediaType, params, _ = mime.ParseMediaType(contentType)
	}
	switch classify(mediaType) {
	case kindHTML:
		title, text = extractHTML(decodeHTML(body, contentType), f.maxOutput+1)
		return title, text, nil
	case kindText:
		return "", decodeText(body, params["charset"]), nil
	default:
		return "", "", fmt.Errorf("unsupported content type %q: only HTML, text and JSON can be fetched", mediaType)
	}
}

// format assembles the tool output and enforces MaxOutput.
func (f *fetcher) format(finalURL, title, text string, bodyTruncated bool) string {
	var b strings.Builder
	b.WriteString("URL: " + finalURL + "\n")
	if title != "" {
		b.WriteString("Title: " + title + "\n")
	}
	b.WriteString("\n")
	if text == "" {
		text = "(no text content)"
	}
	b.WriteString(text)
	out := b.String()
	if !bodyTruncated && len(out) <= f.maxOutput {
		return out
	}
	var note string
	if bodyTruncated {
		note = fmt.Sprintf("\n\n[truncated] the response is larger than %d bytes; only its beginning was read.", f.maxBytes)
	} else {
		note = fmt.Sprintf("\n\n[truncated] the text is longer than shown; output is limited to %d bytes.", f.maxOutput)
	}
	out = strings.TrimRight(textcut.Prefix(out, f.maxOutput-len(note)), " \n") + note
	return textcut.Prefix(out, f.maxOutput)
}
