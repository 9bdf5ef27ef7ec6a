package app

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/gpurent/gpurent/internal/agent/pid1"
	"github.com/gpurent/gpurent/internal/cli"
	"github.com/gpurent/gpurent/internal/execrelay"
)

// InstanceInitCommand is the hidden subcommand a runtime starts as an
// instance's PID 1: `gpurent instance-init [--status PATH] [-- COMMAND...]`.
const InstanceInitCommand = "instance-init"

// instanceInitCommand runs internal/agent/pid1 inside an instance. Its
// arguments are parsed by pid1.Main, not by cobra: the startup command's
// own flags must reach it untouched.
func instanceInitCommand() *cobra.Command {
	return &cobra.Command{
		Use:                InstanceInitCommand + " [--status PATH] [-- COMMAND [ARG...]]",
		Short:              "the init of an instance (PID 1 of its container): starts its startup command and keeps the instance up",
		Hidden:             true,
		DisableFlagParsing: true,
		RunE: func(_ *cobra.Command, args []string) error {
			// Not the command's context: that one ends on SIGTERM, which
			// the init passes on to the startup command and waits out.
			return pid1.Main(args)
		},
	}
}

// execRelayCommand is the hidden `gpurent exec-relay -- COMMAND...` the
// Docker runtime runs an instance's commands under (internal/execrelay):
// its exit status is the command's.
func execRelayCommand() *cobra.Command {
	return &cobra.Command{
		Use:                execrelay.Command + " -- COMMAND [ARG...]",
		Short:              "runs a command inside an instance for the agent, so that its output arrives whole",
		Hidden:             true,
		DisableFlagParsing: true,
		RunE: func(_ *cobra.Command, args []string) error {
			code, err := execrelay.Main(args, os.Stdin, os.Stdout)
			if err != nil {
				return err
			}
			if code != 0 {
				return cli.ExitError{Code: code}
			}
			return nil
		},
	}
}
