package app

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/lambent/lambent/pkg/awsconf"
	"github.com/lambent/lambent/pkg/awsjson"
)

// SSMClient reads SSM parameters (*awsjson.SSM): GetParameter returns the
// decrypted value of the parameter name.
type SSMClient interface {
	GetParameter(ctx context.Context, name string) (string, error)
}

// ErrParameterNotFound: SSM has no parameter of that name in the client's
// region.
var ErrParameterNotFound = errors.New("SSM parameter not found (check its name, and that it lives in the function's region and account)")

var errEmptyParameter = errors.New("the parameter's value is empty")

// newSSMClient returns an SSM client (awsjson.NewSSM) from the SDK's
// default configuration.
func newSSMClient(ctx context.Context) (SSMClient, error) {
	cfg, err := awsconf.Load(ctx)
	if err != nil {
		return nil, fmt.Errorf("load AWS configuration: %w", err)
	}
	return awsjson.NewSSM(cfg)
}

// parameter is an SSM parameter to read, named by the environment variable
// env; its value goes to dst.
type parameter struct {
	env, name string
	dst       *string
}

func (p parameter) String() string { return p.env + "=" + p.name }

// readParameters reads params, decrypted, in parallel through one client,
// made by newClient only when there is something to read. An empty value is
// an error. Every failure is reported, each naming its variable.
func readParameters(ctx context.Context, params []parameter, newClient func(context.Context) (SSMClient, error)) error {
	if len(params) == 0 {
		return nil
	}
	client, err := newClient(ctx)
	if err != nil {
		names := make([]string, len(params))
		for i, p := range params {
			names[i] = p.String()
		}
		return fmt.Errorf("%s: %w", strings.Join(names, ", "), err)
	}
	errs := make([]error, len(params))
	var wg sync.WaitGroup
	for i, p := range params {
		wg.Go(func() {
			v, err := getParameter(ctx, client, p.name)
			if err != nil {
				errs[i] = fmt.Errorf("%s: get parameter: %w", p, err)
				return
			}
			*p.dst = v
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// getParameter returns the decrypted, non-empty value of the parameter name.
func getParameter(ctx context.Context, client SSMClient, name string) (string, error) {
	v, err := client.GetParameter(ctx, name)
	if ae := (*awsjson.Error)(nil); errors.As(err, &ae) && ae.Code == "ParameterNotFound" {
		return "", fmt.Errorf("%w: %w", ErrParameterNotFound, err)
	}
	if err != nil {
		return "", err
	}
	if strings.TrimSpace(v) == "" {
		return "", errEmptyParameter
	}
	return v, nil
}
