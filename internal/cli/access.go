package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gpurent/gpurent/internal/apiv1"
)

// EnvSSH names the ssh program `gpurent ssh` runs (default "ssh").
const EnvSSH = "GPURENT_SSH"

func (a *app) sshKeyCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "ssh-key",
		Short: "Register the SSH public keys that reach your instances",
	}
	parent(cmd)
	cmd.AddCommand(a.sshKeyAddCmd(), a.sshKeyListCmd(), a.sshKeyRemoveCmd())
	return cmd
}

func (a *app) sshKeyAddCmd() *cobra.Command {
	var cn conn
	var name string
	cmd := &cobra.Command{
		Use:     "add [PUBLIC_KEY_FILE|-]",
		Short:   "Register a public key (default ~/.ssh/id_ed25519.pub; - reads standard input)",
		Example: "  gpurent ssh-key add ~/.ssh/id_ed25519.pub\n  cat key.pub | gpurent ssh-key add - --name laptop",
		Args:    argsError(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			asJSON, err := cn.json()
			if err != nil {
				return err
			}
			path := "~/.ssh/id_ed25519.pub"
			if len(args) == 1 {
				path = args[0]
			}
			var text []byte
			if path == "-" {
				text, err = readAllLimited(cmd.InOrStdin(), 16<<10)
			} else {
				text, err = os.ReadFile(expandHome(path))
			}
			if err != nil {
				return usageError{err: fmt.Errorf("reading the public key: %w (make one with `ssh-keygen -t ed25519`)", err)}
			}
			c, err := a.connect(cmd, &cn)
			if err != nil {
				return err
			}
			k, err := c.AddSSHKey(cmd.Context(), apiv1.AddSSHKeyRequest{PublicKey: string(text), Name: name})
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(out(cmd), k)
			}
			fmt.Fprintf(out(cmd), "Key %s (%s) registered: it reaches your instances through `gpurent ssh`.\n", k.Fingerprint, orDash(k.Name))
			return nil
		},
	}
	cn.addFlags(cmd, true)
	cmd.Flags().StringVar(&name, "name", "", "a name for the key (default: its comment)")
	return cmd
}

func (a *app) sshKeyListCmd() *cobra.Command {
	var cn conn
	cmd := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List your SSH keys",
		Args:    argsError(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, asJSON, err := a.connectFor(cmd, &cn)
			if err != nil {
				return err
			}
			keys, err := c.SSHKeys(cmd.Context())
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(out(cmd), keys)
			}
			t := newTable(out(cmd), "ID", "NAME", "FINGERPRINT", "ADDED", "LAST USED")
			for _, k := range keys {
				used := "never"
				if k.LastUsedAt != nil {
					used = formatTime(*k.LastUsedAt, a.env.Location)
				}
				t.row(k.ID, orDash(k.Name), k.Fingerprint, formatTime(k.CreatedAt, a.env.Location), used)
			}
			return t.flush()
		},
	}
	cn.addFlags(cmd, true)
	return cmd
}

func (a *app) sshKeyRemoveCmd() *cobra.Command {
	var cn conn
	cmd := &cobra.Command{
		Use:     "rm ID|FINGERPRINT",
		Aliases: []string{"remove"},
		Short:   "Remove an SSH key",
		Args:    argsError(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.connect(cmd, &cn)
			if err != nil {
				return err
			}
			if err := c.DeleteSSHKey(cmd.Context(), args[0]); err != nil {
				return err
			}
			fmt.Fprintf(out(cmd), "Key %s removed.\n", args[0])
			return nil
		},
	}
	cn.addFlags(cmd, false)
	return cmd
}

// sshFlags are what `gpurent ssh` and `port-forward` pass on to ssh.
type sshFlags struct {
	identity string
	extra    []string
}

func (f *sshFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVarP(&f.identity, "identity", "i", "", "private key file for ssh (default: ssh's own choice and agent)")
	cmd.Flags().StringArrayVar(&f.extra, "ssh-option", nil, "an extra ssh option, e.g. ServerAliveInterval=30 (repeatable)")
}

// sshArgs prepares an ssh command line to the instance through the
// gateway: the gateway's host key is pinned in gpurent's own known_hosts
// file, so ssh checks it strictly without asking.
func (a *app) sshArgs(acc apiv1.InstanceAccess, f *sshFlags, more ...string) ([]string, error) {
	known, err := a.knownHosts(acc)
	if err != nil {
		return nil, err
	}
	args := []string{"-p", strconv.Itoa(acc.Port), "-o", "UserKnownHostsFile=" + known, "-o", "StrictHostKeyChecking=yes",
		"-o", "HostKeyAlgorithms=" + strings.Fields(acc.HostKey)[0]}
	if f.identity != "" {
		args = append(args, "-i", expandHome(f.identity), "-o", "IdentitiesOnly=yes")
	}
	for _, o := range f.extra {
		args = append(args, "-o", o)
	}
	args = append(args, more...)
	return append(args, acc.User+"@"+acc.Host), nil
}

// knownHosts writes the gateway's key to <config dir>/known_hosts (in a
// temporary directory without one) and returns the file's path.
func (a *app) knownHosts(acc apiv1.InstanceAccess) (string, error) {
	dir := a.env.ConfigDir
	if dir == "" {
		dir = os.TempDir()
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	path := filepath.Join(dir, "known_hosts")
	host := strings.Fields(acc.KnownHostsLine)[0]
	var keep []string
	if b, err := os.ReadFile(path); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) > 0 && f[0] != host {
				keep = append(keep, line)
			}
		}
	}
	keep = append(keep, acc.KnownHostsLine)
	return path, os.WriteFile(path, []byte(strings.Join(keep, "\n")+"\n"), 0o600)
}

// runSSH runs ssh with the terminal of the command; its exit status
// becomes gpurent's.
func (a *app) runSSH(cmd *cobra.Command, args []string) error {
	prog := a.env.Getenv(EnvSSH)
	if prog == "" {
		prog = "ssh"
	}
	c := exec.CommandContext(cmd.Context(), prog, args...)
	c.Stdin, c.Stdout, c.Stderr = cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr()
	err := c.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ExitError{Code: ee.ExitCode()}
	}
	if errors.Is(err, exec.ErrNotFound) {
		return fmt.Errorf("%s not found: install OpenSSH (openssh-client) or set %s", prog, EnvSSH)
	}
	return err
}

func (a *app) sshCmd() *cobra.Command {
	var cn conn
	var sf sshFlags
	var printOnly bool
	cmd := &cobra.Command{
		Use:   "ssh ID [-- COMMAND...]",
		Short: "Open a shell in an instance, or run a command there, with OpenSSH through the gateway",
		Example: "  gpurent ssh i-xxxx\n  gpurent ssh i-xxxx -- nvidia-smi\n" +
			"  scp -P 2222 data.tar i-xxxx@gateway:/root/data/   # plain OpenSSH works too: see `gpurent show`",
		Args: argsError(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.connect(cmd, &cn)
			if err != nil {
				return err
			}
			acc, err := c.InstanceAccess(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			// OpenSSH's own log level stays: below INFO it hides the
			// gateway's banner, the one place a refusal says why.
			sargs, err := a.sshArgs(acc, &sf)
			if err != nil {
				return err
			}
			sargs = append(sargs, args[1:]...)
			if printOnly {
				fmt.Fprintln(out(cmd), "ssh "+strings.Join(sargs, " "))
				return nil
			}
			return a.runSSH(cmd, sargs)
		},
	}
	cn.addFlags(cmd, false)
	sf.add(cmd)
	cmd.Flags().BoolVar(&printOnly, "print", false, "print the ssh command instead of running it")
	return cmd
}

func (a *app) portForwardCmd() *cobra.Command {
	var cn conn
	var sf sshFlags
	cmd := &cobra.Command{
		Use:   "port-forward ID PORT[:LOCAL_PORT]...",
		Short: "Forward ports of an instance to this machine (Jupyter, TensorBoard), until Ctrl-C",
		Example: "  gpurent port-forward i-xxxx 8888          # then open http://127.0.0.1:8888\n" +
			"  gpurent port-forward i-xxxx 6006:16006",
		Args: argsError(cobra.MinimumNArgs(2)),
		RunE: func(cmd *cobra.Command, args []string) error {
			var more []string
			var shown []string
			for _, spec := range args[1:] {
				remote, local, _ := strings.Cut(spec, ":")
				if local == "" {
					local = remote
				}
				rp, err1 := strconv.Atoi(remote)
				lp, err2 := strconv.Atoi(local)
				if err1 != nil || err2 != nil || rp < 1 || rp > 65535 || lp < 1 || lp > 65535 {
					return usageError{err: fmt.Errorf("%q: want PORT or PORT:LOCAL_PORT, ports 1 to 65535", spec)}
				}
				more = append(more, "-L", fmt.Sprintf("127.0.0.1:%d:localhost:%d", lp, rp))
				shown = append(shown, fmt.Sprintf("http://127.0.0.1:%d → %s port %d", lp, args[0], rp))
			}
			c, err := a.connect(cmd, &cn)
			if err != nil {
				return err
			}
			acc, err := c.InstanceAccess(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			more = append(more, "-N", "-o", "ExitOnForwardFailure=yes", "-o", "ServerAliveInterval=30")
			sargs, err := a.sshArgs(acc, &sf, more...)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "Forwarding (Ctrl-C stops):\n  %s\n", strings.Join(shown, "\n  "))
			return a.runSSH(cmd, sargs)
		},
	}
	cn.addFlags(cmd, false)
	sf.add(cmd)
	return cmd
}

func (a *app) openCmd() *cobra.Command {
	var cn conn
	cmd := &cobra.Command{
		Use:     "open ID PORT",
		Short:   "Print a browser link to an HTTP port of an instance (Jupyter 8888, TensorBoard 6006), for you only",
		Example: "  gpurent open i-xxxx 8888",
		Args:    argsError(cobra.ExactArgs(2)),
		RunE: func(cmd *cobra.Command, args []string) error {
			asJSON, err := cn.json()
			if err != nil {
				return err
			}
			port, err := strconv.Atoi(args[1])
			if err != nil {
				return usageError{err: fmt.Errorf("PORT must be a number, got %q", args[1])}
			}
			c, err := a.connect(cmd, &cn)
			if err != nil {
				return err
			}
			l, err := c.PortLink(cmd.Context(), args[0], port)
			if err != nil {
				return err
			}
			if !strings.HasPrefix(l.URL, "http") {
				l.URL = strings.TrimRight(c.Server(), "/") + l.URL
			}
			if asJSON {
				return writeJSON(out(cmd), l)
			}
			fmt.Fprintf(out(cmd), "%s\n(open it before %s; it then works in that browser for the session. The app is at / of\n"+
				"its own host name: no base URL or path prefix is needed)\n", l.URL, formatTime(l.ExpiresAt, a.env.Location))
			return nil
		},
	}
	cn.addFlags(cmd, true)
	return cmd
}

func (a *app) sessionsCmd() *cobra.Command {
	var cn conn
	var all bool
	var limit int
	cmd := &cobra.Command{
		Use:   "sessions",
		Short: "The audit log of SSH and browser sessions to your instances",
		Args:  argsError(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, asJSON, err := a.connectFor(cmd, &cn)
			if err != nil {
				return err
			}
			list, err := c.AccessSessions(cmd.Context(), all, limit)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(out(cmd), list)
			}
			t := newTable(out(cmd), "STARTED", "INSTANCE", "KIND", "DETAIL", "FROM", "EXIT", "IN", "OUT")
			for _, s := range list {
				exit := "-"
				if s.ExitStatus != nil {
					exit = strconv.Itoa(*s.ExitStatus)
				}
				t.row(formatTime(s.StartedAt, a.env.Location), s.InstanceID, s.Kind, orDash(s.Detail), s.ClientAddr, exit,
					strconv.FormatInt(s.BytesIn, 10), strconv.FormatInt(s.BytesOut, 10))
			}
			return t.flush()
		},
	}
	cn.addFlags(cmd, true)
	cmd.Flags().BoolVar(&all, "all", false, "every account's sessions (operators)")
	cmd.Flags().IntVar(&limit, "limit", 50, "how many, newest first")
	return cmd
}

func expandHome(path string) string {
	if rest, ok := strings.CutPrefix(path, "~/"); ok {
		if home, err := os.UserHomeDir(); err == nil {
			return filepath.Join(home, rest)
		}
	}
	return path
}

// readAllLimited reads r up to limit bytes; more is an error.
func readAllLimited(r io.Reader, limit int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err == nil && int64(len(b)) > limit {
		err = fmt.Errorf("more than %d bytes", limit)
	}
	return b, err
}
