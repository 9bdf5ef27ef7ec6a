package app

import (
	"github.com/spf13/cobra"

	"github.com/gpurent/gpurent/internal/agent/pid1"
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
