// Command gpurent is the GPU rental cloud in one binary: the control plane
// (serve), the host agent (agent) and the client commands.
package main

import (
	"os"

	"github.com/gpurent/gpurent/internal/app"
)

func main() {
	os.Exit(app.Main(os.Args[1:], os.Stdout, os.Stderr))
}
