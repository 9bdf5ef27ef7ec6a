//go:build linux

package access

import (
	"errors"
	"flag"
	"io"
	"os"

	"github.com/pkg/sftp"
	"golang.org/x/sys/unix"

	"github.com/gpurent/gpurent"
)

// ServeSFTPChild is the sftp helper, wired to the hidden `gpurent
// agent-sftp` command (args are the arguments after it; none are taken).
// The access server copies a static build of it into the instance and
// starts it there through the runtime's exec, so it runs inside the
// instance's isolation: its mount namespace (its "/" is the instance's
// root, and nothing of the host is reachable by any path or symbolic
// link), its user, capabilities, seccomp filter and device cgroup. It
// serves sftp on stdin/stdout until stdin ends, and only regular files,
// directories and symbolic links (see sftpFS): a device node, fifo or
// socket is refused before it is opened.
func ServeSFTPChild(args []string) error {
	fs := flag.NewFlagSet(SFTPHelperCommand, flag.ContinueOnError)
	fs.SetOutput(os.Stderr)
	if err := fs.Parse(args); err != nil {
		return gpurent.WrapError(gpurent.CodeInvalid, err, "agent-sftp: bad arguments")
	}
	if fs.NArg() > 0 {
		return gpurent.Errorf(gpurent.CodeInvalid, "agent-sftp takes no arguments")
	}
	unix.Umask(0o022)
	home := "/"
	if st, err := os.Stat("/root"); err == nil && st.IsDir() {
		home = "/root"
	}
	if h := os.Getenv("HOME"); h != "" {
		if st, err := os.Stat(h); err == nil && st.IsDir() {
			home = h
		}
	}
	srv := sftp.NewRequestServer(stdio{}, sftpFS{}.handlers(), sftp.WithStartDirectory(home))
	if err := srv.Serve(); err != nil && !errors.Is(err, io.EOF) {
		return gpurent.WrapError(gpurent.CodeUnavailable, err, "agent-sftp: serve")
	}
	return nil
}

// stdio is the helper's standard input and output as one stream.
type stdio struct{}

func (stdio) Read(p []byte) (int, error)  { return os.Stdin.Read(p) }
func (stdio) Write(p []byte) (int, error) { return os.Stdout.Write(p) }
func (stdio) Close() error                { return errors.Join(os.Stdin.Close(), os.Stdout.Close()) }
