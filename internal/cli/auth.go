package cli

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/apiv1"
	"github.com/gpurent/gpurent/internal/client"
	"github.com/gpurent/gpurent/internal/money"
)

func (a *app) loginCmd() *cobra.Command {
	var cn conn
	var email string
	var passwordStdin bool
	cmd := &cobra.Command{
		Use:   "login",
		Short: "Log in and save the server and token",
		Long: "Log in with an email and password (prompted for when missing) and save the\n" +
			"server and the session token to " + configFile + " in the configuration\n" +
			"directory, readable only by you. With --token, check an API token and save it instead.",
		Args: argsError(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			t, err := a.resolve(cmd, &cn)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			var token string
			var acct apiv1.Account
			if cn.token != "" {
				token = cn.token
				if acct, err = client.New(t.server, token, a.env.HTTPClient).Me(ctx); err != nil {
					return err
				}
			} else {
				in := newInput(cmd)
				if email == "" {
					if passwordStdin {
						return usageError{err: errors.New("--password-stdin needs --email")}
					}
					if email, err = in.line("Email: "); err != nil {
						return err
					}
				}
				password, err := readPassword(in, passwordStdin, false)
				if err != nil {
					return err
				}
				resp, err := client.New(t.server, "", a.env.HTTPClient).Login(ctx,
					apiv1.LoginRequest{Email: email, Password: password})
				if err != nil {
					return err
				}
				token, acct = resp.Token, resp.Account
			}
			if token == "" {
				return gpurent.Errorf(gpurent.CodeInternal, "the server answered without a token")
			}
			if err := saveConfig(a.env.ConfigDir, config{Server: t.server, Token: token}); err != nil {
				return err
			}
			fmt.Fprintf(out(cmd), "Logged in to %s as %s (%s, %s).\n", t.server, acct.Email, acct.Name, acct.Role)
			if a.env.Getenv(EnvToken) != "" {
				fmt.Fprintf(cmd.ErrOrStderr(), "note: $%s is set and takes precedence over the saved login\n", EnvToken)
			}
			return nil
		},
	}
	cn.addFlags(cmd, false)
	cmd.Flags().StringVar(&email, "email", "", "account email (prompted for when missing)")
	cmd.Flags().BoolVar(&passwordStdin, "password-stdin", false, "read the password from standard input")
	return cmd
}

// readPassword reads a password from all of stdin or from a prompt; confirm
// asks twice on a terminal.
func readPassword(in *input, fromStdin, confirm bool) (string, error) {
	if fromStdin {
		pw, err := in.all()
		if err != nil {
			return "", err
		}
		return nonEmpty("the password", pw)
	}
	pw, err := in.password("Password: ")
	if err != nil {
		return "", err
	}
	if pw, err = nonEmpty("the password", pw); err != nil {
		return "", err
	}
	if confirm && in.tty {
		again, err := in.password("Password again: ")
		if err != nil {
			return "", err
		}
		if again != pw {
			return "", gpurent.Errorf(gpurent.CodeInvalid, "the passwords do not match")
		}
	}
	return pw, nil
}

func (a *app) logoutCmd() *cobra.Command {
	var cn conn
	cmd := &cobra.Command{
		Use:   "logout",
		Short: "Revoke the token and forget it",
		Args:  argsError(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			t, err := a.resolve(cmd, &cn)
			if err != nil {
				return err
			}
			if t.token == "" {
				fmt.Fprintf(out(cmd), "Not logged in to %s.\n", t.server)
				return nil
			}
			revokeErr := a.client(t).Logout(cmd.Context())
			if gpurent.IsCode(revokeErr, gpurent.CodeUnauthorized) {
				revokeErr = nil // already invalid: nothing left to revoke
			}
			if t.cfg.Token == t.token && sameServer(t.cfg.Server, t.server) {
				if err := saveConfig(a.env.ConfigDir, config{Server: t.cfg.Server}); err != nil {
					return err
				}
			}
			if revokeErr != nil {
				return fmt.Errorf("the saved login is removed, but the token may still be valid on the server: %w", revokeErr)
			}
			fmt.Fprintf(out(cmd), "Logged out of %s.\n", t.server)
			return nil
		},
	}
	cn.addFlags(cmd, false)
	return cmd
}

func (a *app) whoamiCmd() *cobra.Command {
	var cn conn
	cmd := &cobra.Command{
		Use:   "whoami",
		Short: "Show the account you are logged in as",
		Args:  argsError(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			asJSON, err := cn.json()
			if err != nil {
				return err
			}
			t, err := a.resolve(cmd, &cn)
			if err != nil {
				return err
			}
			acct, err := a.client(t).Me(cmd.Context())
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(out(cmd), acct)
			}
			return printAccount(cmd, t.server, acct)
		},
	}
	cn.addFlags(cmd, true)
	return cmd
}

func printAccount(cmd *cobra.Command, server string, acct apiv1.Account) error {
	t := newPairs(out(cmd))
	if server != "" {
		t.pair("Server", server)
	}
	t.pair("Account", acct.ID)
	t.pair("Email", acct.Email)
	t.pair("Name", acct.Name)
	t.pair("Role", acct.Role)
	t.pair("Balance", money.Format(acct.BalanceFen))
	if acct.AcademicUntil != nil {
		t.pair("Academic", "verified until "+acct.AcademicUntil.UTC().Format(time.DateOnly))
	}
	return t.flush()
}

func (a *app) registerCmd() *cobra.Command {
	var cn conn
	var email, name string
	var passwordStdin bool
	cmd := &cobra.Command{
		Use:   "register",
		Short: "Create a customer account",
		Args:  argsError(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			asJSON, err := cn.json()
			if err != nil {
				return err
			}
			t, err := a.resolve(cmd, &cn)
			if err != nil {
				return err
			}
			in := newInput(cmd)
			if passwordStdin && (email == "" || name == "") {
				return usageError{err: errors.New("--password-stdin needs --email and --name")}
			}
			if email == "" {
				if email, err = in.line("Email: "); err != nil {
					return err
				}
			}
			if name == "" {
				if name, err = in.line("Name: "); err != nil {
					return err
				}
			}
			password, err := readPassword(in, passwordStdin, true)
			if err != nil {
				return err
			}
			acct, err := client.New(t.server, "", a.env.HTTPClient).Register(cmd.Context(),
				apiv1.RegisterRequest{Email: email, Name: name, Password: password})
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(out(cmd), acct)
			}
			fmt.Fprintf(out(cmd), "Registered %s (%s) on %s.\n", acct.Email, acct.ID, t.server)
			fmt.Fprintf(cmd.ErrOrStderr(), "Log in with: gpurent login --server %s --email %s\n", t.server, acct.Email)
			return nil
		},
	}
	cn.addFlags(cmd, true)
	cmd.Flags().StringVar(&email, "email", "", "account email (prompted for when missing)")
	cmd.Flags().StringVar(&name, "name", "", "your name or your organisation's (prompted for when missing)")
	cmd.Flags().BoolVar(&passwordStdin, "password-stdin", false, "read the password from standard input")
	return cmd
}

func (a *app) tokenCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "token", Short: "Manage API tokens for scripts"}
	parent(cmd)
	var cn conn
	create := &cobra.Command{
		Use:   "create NAME",
		Short: "Create an API token (shown once)",
		Args:  argsError(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, asJSON, err := a.connectFor(cmd, &cn)
			if err != nil {
				return err
			}
			tok, err := c.CreateToken(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(out(cmd), tok)
			}
			p := newPairs(out(cmd))
			p.pair("ID", tok.ID)
			p.pair("Name", tok.Name)
			p.pair("Token", tok.Token)
			if err := p.flush(); err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "Store the token now: it is not shown again. Use it with --token or $%s.\n", EnvToken)
			return nil
		},
	}
	cn.addFlags(create, true)
	cmd.AddCommand(create)
	return cmd
}
