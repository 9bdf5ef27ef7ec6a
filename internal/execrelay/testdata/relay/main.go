// Command relay is execrelay.Main alone, for the package's tests that
// signal the relay's own process.
package main

import (
	"fmt"
	"os"

	"github.com/gpurent/gpurent/internal/execrelay"
)

func main() {
	code, err := execrelay.Main(os.Args[1:], os.Stdin, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "relay:", err)
	}
	os.Exit(code)
}
