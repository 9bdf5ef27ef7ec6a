//go:build !linux

package access

import (
	"context"
	"io"
	"net"
	"os/exec"

	"github.com/gpurent/gpurent"
)

// ServeSFTPChild needs Linux (chroot into /proc/<pid>/root).
func ServeSFTPChild(args []string) error {
	return gpurent.Errorf(gpurent.CodeUnavailable, "agent-sftp runs on Linux only")
}

type sftpChild struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout io.ReadCloser
}

func (s *Server) startSFTP(ctx, life context.Context, instanceID string) (*sftpChild, error) {
	return nil, gpurent.Errorf(gpurent.CodeUnavailable, "sftp into instances needs a Linux agent")
}

func (s *Server) dialInstance(ctx context.Context, instanceID, addr string) (net.Conn, error) {
	return nil, gpurent.Errorf(gpurent.CodeUnavailable, "port forwarding into instances needs a Linux agent")
}
