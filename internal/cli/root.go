// Package cli is the gpurent command line: the client commands (login, gpus,
// rent, ls, show, stop, start, rm, upgrade, migrate, incidents, failover, sla,
// hosts, gpu, rma, ...) built with cobra on top of internal/client. It
// stays thin: it resolves the server and token, calls the API, and prints
// the answer as a table or as the API's JSON.
//
// Everything the commands touch outside themselves comes from an Env value
// (configuration directory, environment, HTTP client, clock) and from the
// command's own streams, so the commands run in-process in tests.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/client"
)

// DefaultServer is the server used when no flag, environment variable or
// saved configuration names one.
const DefaultServer = "http://127.0.0.1:8080"

// Environment variables read by the client commands.
const (
	EnvServer = "GPURENT_SERVER"
	EnvToken  = "GPURENT_TOKEN"
)

// Env is what the commands need from outside: where the configuration
// lives, the environment, the HTTP client and the clock.
type Env struct {
	// ConfigDir is the directory holding config.json; DefaultEnv uses
	// <os.UserConfigDir()>/gpurent. Empty: no configuration file.
	ConfigDir string
	// Getenv reads an environment variable; nil reads none.
	Getenv func(string) string
	// HTTPClient makes the API calls; nil uses a client with a 60 s
	// per-request timeout.
	HTTPClient *http.Client
	// Now is the clock, for "last seen 5s ago"; nil is time.Now.
	Now func() time.Time
	// Location is where times are shown; nil is time.Local.
	Location *time.Location
	// PollInterval is how often --wait polls (default 2 s).
	PollInterval time.Duration
}

// DefaultEnv is the environment of a real process.
func DefaultEnv() Env {
	env := Env{Getenv: os.Getenv}
	if dir, err := os.UserConfigDir(); err == nil {
		env.ConfigDir = filepath.Join(dir, "gpurent")
	}
	return env
}

func (e Env) withDefaults() Env {
	if e.Getenv == nil {
		e.Getenv = func(string) string { return "" }
	}
	if e.HTTPClient == nil {
		e.HTTPClient = &http.Client{Timeout: 60 * time.Second}
	}
	if e.Now == nil {
		e.Now = time.Now
	}
	if e.Location == nil {
		e.Location = time.Local
	}
	if e.PollInterval <= 0 {
		e.PollInterval = 2 * time.Second
	}
	return e
}

// NewRoot returns the root gpurent command with the client commands and the
// given extra commands (the lead adds serve and agent), for a real process.
func NewRoot(extra ...*cobra.Command) *cobra.Command {
	return NewRootWith(DefaultEnv(), extra...)
}

// NewRootWith is NewRoot with an explicit environment.
func NewRootWith(env Env, extra ...*cobra.Command) *cobra.Command {
	a := &app{env: env.withDefaults()}
	root := &cobra.Command{
		Use:   "gpurent",
		Short: "Rent GPUs by the second, day, week or month",
		Long: "gpurent is an open-source GPU rental cloud.\n\n" +
			"The client commands talk to a gpurent server, chosen by --server, then\n" +
			"$" + EnvServer + ", then the server saved by `gpurent login`, then " + DefaultServer + ".",
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	parent(root)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return usageError{err: err}
	})
	root.AddGroup(
		&cobra.Group{ID: "account", Title: "Account:"},
		&cobra.Group{ID: "rent", Title: "Renting GPUs:"},
		&cobra.Group{ID: "operator", Title: "Operating hosts:"},
	)
	add := func(group string, cmds ...*cobra.Command) {
		for _, c := range cmds {
			c.GroupID = group
			root.AddCommand(c)
		}
	}
	add("account", a.loginCmd(), a.logoutCmd(), a.whoamiCmd(), a.registerCmd(), a.tokenCmd(), a.academicCmd(), a.walletCmd(), a.voucherCmd(), a.sshKeyCmd())
	add("rent", a.gpusCmd(), a.imagesCmd(), a.zonesCmd(), a.priceCmd(), a.pricesCmd(), a.billCmd(), a.rentCmd(), a.lsCmd(), a.showCmd(), a.logsCmd(), a.setCmdCmd(),
		a.stopCmd(), a.startCmd(), a.rmCmd(), a.upgradeCmd(), a.migrateCmd(), a.operationsCmd(), a.queueCmd(), a.planCmd(), a.sshCmd(), a.portForwardCmd(), a.openCmd(), a.sessionsCmd(),
		a.incidentsCmd(), a.failoverCmd(), a.slaCmd(), a.verifyCmd(), a.transparencyCmd())
	add("operator", a.hostsCmd(), a.cordonCmd(), a.uncordonCmd(), a.drainCmd(), a.creditCmd(), a.paymentCmd(), a.revenueCmd(),
		a.gpuCmd(), a.rmaCmd(), a.faultCmd(), a.certifyCmd())
	root.AddCommand(extra...)
	return root
}

// Execute runs root with args (nil: os.Args[1:]) and returns the process
// exit status: 0 on success, 1 when the command failed, 2 on a usage error.
// The error is written to root's error stream as "error: <detail> (<code>)",
// with a hint to log in when the server refused the credentials.
func Execute(ctx context.Context, root *cobra.Command, args []string) int {
	if args != nil {
		root.SetArgs(args)
	}
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return 0
	}
	if cmd == nil {
		cmd = root
	}
	var ee ExitError
	if errors.As(err, &ee) { // ssh's own status: ssh printed why
		return ee.Code
	}
	w := cmd.ErrOrStderr()
	fmt.Fprintln(w, "error: "+errorText(err))
	var ue usageError
	if errors.As(err, &ue) {
		fmt.Fprintf(w, "usage: %s\nRun '%s --help' for more.\n", cmd.UseLine(), cmd.CommandPath())
		return 2
	}
	if gpurent.IsCode(err, gpurent.CodeUnauthorized) {
		fmt.Fprintln(w, "hint: run `gpurent login` to sign in, or set "+EnvToken)
	}
	return 1
}

// errorText renders err for a person: an API answer as "detail (code)", an
// error of ours as "message (code)", anything else as its text.
func errorText(err error) string {
	var apiErr *client.APIError
	if errors.As(err, &apiErr) {
		return apiErr.Error()
	}
	var e *gpurent.Error
	if errors.As(err, &e) {
		msg := e.Message
		if e.Err != nil {
			msg += ": " + e.Err.Error()
		}
		return msg + " (" + string(e.Code) + ")"
	}
	return err.Error()
}

// ExitError is a program the command ran (ssh) ending with a status other
// than 0: gpurent exits with the same status and adds nothing.
type ExitError struct{ Code int }

func (e ExitError) Error() string { return fmt.Sprintf("exit status %d", e.Code) }

// usageError is a flag or argument the command cannot accept.
type usageError struct {
	err error
}

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// parent makes cmd, a command that only groups subcommands, print its help
// when called alone and refuse an unknown subcommand as a usage error
// (cobra would otherwise print the help and succeed).
func parent(cmd *cobra.Command) {
	cmd.Args = argsError(func(c *cobra.Command, args []string) error {
		if len(args) > 0 {
			return fmt.Errorf("unknown command %q for %q", args[0], c.CommandPath())
		}
		return nil
	})
	cmd.RunE = func(c *cobra.Command, _ []string) error { return c.Help() }
}

// argsError wraps a cobra.PositionalArgs so its errors count as usage errors.
func argsError(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := check(cmd, args); err != nil {
			return usageError{err: err}
		}
		return nil
	}
}

// app carries the environment to every command.
type app struct {
	env Env
}

// conn holds the connection flags every client command has.
type conn struct {
	server string
	token  string
	output string
}

// addFlags adds --server and --token to cmd; withOutput adds -o too.
func (cn *conn) addFlags(cmd *cobra.Command, withOutput bool) {
	f := cmd.Flags()
	f.StringVar(&cn.server, "server", "", "server URL (default: $"+EnvServer+", saved login, "+DefaultServer+")")
	f.StringVar(&cn.token, "token", "", "API token (default: $"+EnvToken+", saved login)")
	if withOutput {
		f.StringVarP(&cn.output, "output", "o", "table", "output format: table or json")
	}
}

// json reports whether -o json was asked for, refusing unknown formats.
func (cn *conn) json() (bool, error) {
	switch cn.output {
	case "", "table":
		return false, nil
	case "json":
		return true, nil
	default:
		return false, gpurent.Errorf(gpurent.CodeInvalid, "unknown output format %q: use table or json", cn.output)
	}
}

// target is the resolved server and token of one command run.
type target struct {
	server string
	token  string
	cfg    config
}

// resolve picks the server and token: flag, then environment, then the
// saved configuration, then the default server. The saved token is used only
// with the server it was saved for, so it is never sent to another server.
func (a *app) resolve(cmd *cobra.Command, cn *conn) (target, error) {
	cfg, err := loadConfig(a.env.ConfigDir, cmd.ErrOrStderr())
	if err != nil {
		return target{}, err
	}
	server := firstNonEmpty(cn.server, a.env.Getenv(EnvServer), cfg.Server, DefaultServer)
	server, err = normaliseServer(server)
	if err != nil {
		return target{}, err
	}
	token := firstNonEmpty(cn.token, a.env.Getenv(EnvToken))
	if token == "" && cfg.Token != "" && sameServer(cfg.Server, server) {
		token = cfg.Token
	}
	return target{server: server, token: token, cfg: cfg}, nil
}

func (a *app) client(t target) *client.Client {
	return client.New(t.server, t.token, a.env.HTTPClient)
}

// connect resolves the target and returns a client for it.
func (a *app) connect(cmd *cobra.Command, cn *conn) (*client.Client, error) {
	t, err := a.resolve(cmd, cn)
	if err != nil {
		return nil, err
	}
	return a.client(t), nil
}

// connectFor checks the output format (-o) and connects: the start of
// every command that prints what the API answers.
func (a *app) connectFor(cmd *cobra.Command, cn *conn) (c *client.Client, asJSON bool, err error) {
	if asJSON, err = cn.json(); err != nil {
		return nil, false, err
	}
	c, err = a.connect(cmd, cn)
	return c, asJSON, err
}

func firstNonEmpty(vs ...string) string {
	for _, v := range vs {
		if v = strings.TrimSpace(v); v != "" {
			return v
		}
	}
	return ""
}

// out is where a command prints its result.
func out(cmd *cobra.Command) io.Writer { return cmd.OutOrStdout() }
