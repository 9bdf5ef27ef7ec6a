// Command initbin is `gpurent instance-init`, `gpurent agent-sftp` and
// `gpurent exec-relay` alone, for tests: a small static executable (dockertest.InitBinary
// builds it) that the Docker runtime mounts into test instances as their
// PID 1, and an agent copies in as their sftp helper, as they use a
// CGO_ENABLED=0 gpurent binary in production. Its arguments are those of
// gpurent: `initbin instance-init [--status PATH] -- COMMAND...`.
package main

import (
	"fmt"
	"os"

	"github.com/gpurent/gpurent/internal/access"
	"github.com/gpurent/gpurent/internal/agent/pid1"
	"github.com/gpurent/gpurent/internal/execrelay"
)

func main() {
	var err error
	switch {
	case len(os.Args) >= 2 && os.Args[1] == "instance-init":
		err = pid1.Main(os.Args[2:])
	case len(os.Args) >= 2 && os.Args[1] == access.SFTPHelperCommand:
		err = access.ServeSFTPChild(os.Args[2:])
	case len(os.Args) >= 2 && os.Args[1] == execrelay.Command:
		code, err := execrelay.Main(os.Args[2:], os.Stdin, os.Stdout)
		if err != nil {
			fmt.Fprintln(os.Stderr, os.Args[1]+":", err)
		}
		os.Exit(code)
	default:
		fmt.Fprintln(os.Stderr, "usage: initbin instance-init [--status PATH] -- COMMAND... | initbin "+access.SFTPHelperCommand+" | initbin "+execrelay.Command+" -- COMMAND...")
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, os.Args[1]+":", err)
		os.Exit(1)
	}
}
