package app

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// ErrParameterNotFound: SSM has no parameter of that name.
var ErrParameterNotFound = errors.New("ssm: parameter not found")

// signedSSM calls SSM GetParameter with one SigV4-signed HTTP request. The
// gateway reads one parameter once per cold start; the full SSM client
// would add about 0.65 MB to every bootstrap for that.
type signedSSM struct {
	cfg      aws.Config
	endpoint string // e.g. https://ssm.us-east-1.amazonaws.com
	client   *http.Client
}

func newSignedSSM(cfg aws.Config) *signedSSM {
	ep := "https://ssm." + cfg.Region + ".amazonaws.com"
	if e := endpointOverride("SSM"); e != "" {
		ep = e
	}
	return &signedSSM{cfg: cfg, endpoint: ep, client: &http.Client{Timeout: 10 * time.Second}}
}

// GetParameter returns the decrypted value of the parameter name.
func (s *signedSSM) GetParameter(ctx context.Context, name string) (string, error) {
	body, err := json.Marshal(map[string]any{"Name": name, "WithDecryption": true})
	if err != nil {
		return "", err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.endpoint+"/", bytes.NewReader(body))
	if err != nil {
		return "", fmt.Errorf("ssm: %w", err)
	}
	req.Header.Set("Content-Type", "application/x-amz-json-1.1")
	req.Header.Set("X-Amz-Target", "AmazonSSM.GetParameter")
	creds, err := s.cfg.Credentials.Retrieve(ctx)
	if err != nil {
		return "", fmt.Errorf("ssm: credentials: %w", err)
	}
	sum := sha256.Sum256(body)
	if err := v4.NewSigner().SignHTTP(ctx, creds, req, hex.EncodeToString(sum[:]), "ssm", s.cfg.Region, time.Now()); err != nil {
		return "", fmt.Errorf("ssm: sign: %w", err)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return "", fmt.Errorf("ssm: %w", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return "", fmt.Errorf("ssm: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Type    string `json:"__type"`
			Message string `json:"message"`
		}
		_ = json.Unmarshal(data, &e)
		if e.Type == "ParameterNotFound" {
			return "", fmt.Errorf("%w: %s", ErrParameterNotFound, e.Message)
		}
		return "", fmt.Errorf("ssm: GetParameter: HTTP %d %s: %s", resp.StatusCode, e.Type, e.Message)
	}
	var out struct {
		Parameter *struct {
			Value string `json:"Value"`
		} `json:"Parameter"`
	}
	if err := json.Unmarshal(data, &out); err != nil {
		return "", fmt.Errorf("ssm: GetParameter: bad reply: %w", err)
	}
	if out.Parameter == nil {
		return "", errNoParameter
	}
	return out.Parameter.Value, nil
}
