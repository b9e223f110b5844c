package app

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/aws/aws-sdk-go-v2/service/ssm/types"

	"github.com/lambent/lambent/pkg/awsconf"
)

// SSMClient is the part of the SDK's SSM client (*ssm.Client) that reads
// Lambent's start-up parameters.
type SSMClient interface {
	GetParameter(ctx context.Context, in *ssm.GetParameterInput, optFns ...func(*ssm.Options)) (*ssm.GetParameterOutput, error)
}

// ErrParameterNotFound: SSM has no parameter of that name in the client's
// region.
var ErrParameterNotFound = errors.New("SSM parameter not found (check its name, and that it lives in the function's region and account)")

var (
	errNoParameter    = errors.New("SSM returned no parameter")
	errEmptyParameter = errors.New("the parameter's value is empty")
)

// newSSMClient returns an SSM client from the SDK's default configuration.
func newSSMClient(ctx context.Context) (SSMClient, error) {
	cfg, err := awsconf.Load(ctx)
	if err != nil {
		return nil, fmt.Errorf("load AWS configuration: %w", err)
	}
	return ssm.NewFromConfig(cfg), nil
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
	out, err := client.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(name), WithDecryption: aws.Bool(true)})
	if nf := (*types.ParameterNotFound)(nil); errors.As(err, &nf) {
		return "", fmt.Errorf("%w: %w", ErrParameterNotFound, err)
	}
	if err != nil {
		return "", err
	}
	if out.Parameter == nil || out.Parameter.Value == nil {
		return "", errNoParameter
	}
	v := aws.ToString(out.Parameter.Value)
	if strings.TrimSpace(v) == "" {
		return "", errEmptyParameter
	}
	return v, nil
}
