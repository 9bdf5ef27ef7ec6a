package cli

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gpurent/gpurent/internal/apiv1"
)

func (a *app) imagesCmd() *cobra.Command {
	var cn conn
	cmd := &cobra.Command{
		Use:   "images",
		Short: "List the operator's base images (rent one with `gpurent rent --image NAME`)",
		Long: `List the operator's base image catalog: curated images in the operator's
registry, with their frameworks and versions. Rent one by its name:

  gpurent rent --gpu h100-80g-sxm --count 1 --image NAME

Operators change the catalog with images add, rm and prepull.`,
		Args: argsError(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, asJSON, err := a.connectFor(cmd, &cn)
			if err != nil {
				return err
			}
			l, err := c.Images(cmd.Context())
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(out(cmd), l)
			}
			if len(l) == 0 {
				fmt.Fprintln(out(cmd), "The operator's catalog has no base images yet.")
				return nil
			}
			t := newTable(out(cmd), "NAME", "FRAMEWORK", "VERSIONS", "CUDA", "GPU TYPES", "SIZE", "PRE-PULLED", "DESCRIPTION")
			for _, img := range l {
				t.row(img.Name, orDash(img.Framework), orDash(versionsText(img.Versions)), orDash(img.MinCUDA),
					orDash(strings.Join(img.GPUTypes, ",")), sizeText(img.SizeBytes), yesNo(img.Prepull), orDash(img.Description))
			}
			return t.flush()
		},
	}
	cn.addFlags(cmd, true)
	cmd.AddCommand(a.imagesAddCmd(), a.imagesRemoveCmd(), a.imagesPrepullCmd())
	return cmd
}

// versionsText is "pytorch 2.5.1, cuda 12.4", by name.
func versionsText(v map[string]string) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(v)) {
		parts = append(parts, k+" "+v[k])
	}
	return strings.Join(parts, ", ")
}

// sizeText is a byte count in MiB or GiB, "-" when unknown.
func sizeText(b int64) string {
	switch {
	case b <= 0:
		return "-"
	case b >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30))
	default:
		return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
	}
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func (a *app) imagesAddCmd() *cobra.Command {
	var (
		cn                                  conn
		description, framework, cuda, types string
		versions                            []string
		sizeMiB                             int64
		prepull                             bool
	)
	cmd := &cobra.Command{
		Use:   "add NAME REF",
		Short: "Add a base image to the catalog, or replace the one of NAME (operators)",
		Example: `  gpurent images add pytorch:2.5-cuda12.4 registry.example.com/base/pytorch:2.5.1-cuda12.4 \
    --framework pytorch --version pytorch=2.5.1 --version cuda=12.4 --version python=3.11 \
    --min-cuda 12.4 --size-mib 7800 --prepull`,
		Args: argsError(cobra.ExactArgs(2)),
		RunE: func(cmd *cobra.Command, args []string) error {
			req := apiv1.PutBaseImageRequest{Ref: args[1], Description: description, Framework: framework,
				MinCUDA: cuda, Prepull: prepull}
			if sizeMiB < 0 || sizeMiB > 1<<20 {
				return usageError{err: fmt.Errorf("--size-mib must be 0 (unknown) to %d", 1<<20)}
			}
			req.SizeBytes = sizeMiB << 20
			for _, v := range versions {
				k, val, ok := strings.Cut(v, "=")
				if !ok || k == "" || val == "" {
					return usageError{err: fmt.Errorf("--version must be NAME=VERSION (e.g. pytorch=2.5.1), got %q", v)}
				}
				if req.Versions == nil {
					req.Versions = map[string]string{}
				}
				req.Versions[k] = val
			}
			for _, g := range strings.Split(types, ",") {
				if g = strings.TrimSpace(g); g != "" {
					req.GPUTypes = append(req.GPUTypes, g)
				}
			}
			c, asJSON, err := a.connectFor(cmd, &cn)
			if err != nil {
				return err
			}
			img, err := c.PutImage(cmd.Context(), args[0], req)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(out(cmd), img)
			}
			fmt.Fprintf(out(cmd), "Base image %s is %s%s.\n", img.Name, img.Ref, prepullText(img.Prepull))
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&description, "description", "", "one line customers see")
	f.StringVar(&framework, "framework", "", "main framework: pytorch, tensorflow, jax, cuda, base...")
	f.StringArrayVar(&versions, "version", nil, "NAME=VERSION of what it holds, e.g. pytorch=2.5.1 (repeatable)")
	f.StringVar(&cuda, "min-cuda", "", "the CUDA version the host's driver must support, e.g. 12.4")
	f.StringVar(&types, "gpu-types", "", "GPU types it suits, comma-separated (default: every type)")
	f.Int64Var(&sizeMiB, "size-mib", 0, "its size unpacked, in MiB (0: unknown)")
	f.BoolVar(&prepull, "prepull", false, "have every agent pull it ahead of any rent")
	cn.addFlags(cmd, true)
	return cmd
}

func prepullText(p bool) string {
	if p {
		return ", pre-pulled by every host"
	}
	return ""
}

func (a *app) imagesRemoveCmd() *cobra.Command {
	var cn conn
	cmd := &cobra.Command{
		Use:     "rm NAME",
		Aliases: []string{"remove"},
		Short:   "Remove a base image from the catalog (operators; instances rented with it keep it)",
		Args:    argsError(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.connect(cmd, &cn)
			if err != nil {
				return err
			}
			if err := c.DeleteImage(cmd.Context(), args[0]); err != nil {
				return err
			}
			fmt.Fprintf(out(cmd), "Base image %s removed from the catalog.\n", args[0])
			return nil
		},
	}
	cn.addFlags(cmd, false)
	return cmd
}

func (a *app) imagesPrepullCmd() *cobra.Command {
	var (
		cn  conn
		off bool
	)
	cmd := &cobra.Command{
		Use:   "prepull NAME [--off]",
		Short: "Have every agent pull a base image ahead of any rent, or stop (operators)",
		Args:  argsError(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, asJSON, err := a.connectFor(cmd, &cn)
			if err != nil {
				return err
			}
			img, err := c.SetImagePrepull(cmd.Context(), args[0], !off)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(out(cmd), img)
			}
			if img.Prepull {
				fmt.Fprintf(out(cmd), "Every host now pulls %s (%s) ahead of any rent.\n", img.Name, img.Ref)
			} else {
				fmt.Fprintf(out(cmd), "Hosts no longer pull %s ahead; they pull it when an instance needs it.\n", img.Name)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&off, "off", false, "stop pre-pulling it")
	cn.addFlags(cmd, true)
	return cmd
}
