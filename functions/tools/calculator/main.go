// Command calculator is the "calculator" hosted tool as its own Lambda
// function (payload: docs/architecture.md, "Tool Lambda payload").
package main

import (
	"github.com/lambent/lambent/pkg/tools/calculator"
	"github.com/lambent/lambent/pkg/tools/lambdatool"
)

func main() {
	lambdatool.Serve(calculator.Tool())
}
