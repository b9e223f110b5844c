package main

import (
	"errors"

	"github.com/lambent/lambent/pkg/app"
)

// serveLambda runs the handler inside AWS Lambda.
func serveLambda(a *app.App) error {
	_ = a
	return errors.New("running inside AWS Lambda is not supported by this build yet")
}
