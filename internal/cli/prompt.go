package cli

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/gpurent/gpurent"
)

// input reads answers from a command's stdin. Prompts go to stderr so that
// stdout carries only the result. When stdin is a terminal, passwords are
// read without echo.
type input struct {
	br     *bufio.Reader
	fd     int
	tty    bool
	prompt io.Writer
}

func newInput(cmd *cobra.Command) *input {
	r := cmd.InOrStdin()
	in := &input{br: bufio.NewReader(r), prompt: cmd.ErrOrStderr()}
	if f, ok := r.(interface{ Fd() uintptr }); ok && term.IsTerminal(int(f.Fd())) {
		in.fd, in.tty = int(f.Fd()), true
	}
	return in
}

// line prompts for and reads one line, without its line ending.
func (in *input) line(prompt string) (string, error) {
	fmt.Fprint(in.prompt, prompt)
	s, err := in.br.ReadString('\n')
	if err != nil && !(errors.Is(err, io.EOF) && s != "") {
		if errors.Is(err, io.EOF) {
			return "", gpurent.Errorf(gpurent.CodeInvalid, "no answer: standard input ended")
		}
		return "", gpurent.WrapError(gpurent.CodeInternal, err, "cannot read standard input")
	}
	return strings.TrimRight(s, "\r\n"), nil
}

// password prompts for a password, without echo on a terminal.
func (in *input) password(prompt string) (string, error) {
	if !in.tty {
		return in.line(prompt)
	}
	fmt.Fprint(in.prompt, prompt)
	b, err := term.ReadPassword(in.fd)
	fmt.Fprintln(in.prompt) // the user's Enter was not echoed
	if err != nil {
		return "", gpurent.WrapError(gpurent.CodeInternal, err, "cannot read the password")
	}
	return string(b), nil
}

// all reads the rest of stdin (for --password-stdin), dropping the final
// line ending.
func (in *input) all() (string, error) {
	b, err := io.ReadAll(io.LimitReader(in.br, 64<<10))
	if err != nil {
		return "", gpurent.WrapError(gpurent.CodeInternal, err, "cannot read standard input")
	}
	return strings.TrimRight(string(b), "\r\n"), nil
}

// nonEmpty refuses an empty answer.
func nonEmpty(what, v string) (string, error) {
	if strings.TrimSpace(v) == "" {
		return "", gpurent.Errorf(gpurent.CodeInvalid, "%s must not be empty", what)
	}
	return v, nil
}
