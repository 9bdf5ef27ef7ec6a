//go:build !linux

package access

import (
	"context"
	"net"

	"github.com/gpurent/gpurent"
)

// ServeSFTPChild needs Linux (it runs inside Linux instances).
func ServeSFTPChild(args []string) error {
	return gpurent.Errorf(gpurent.CodeUnavailable, "agent-sftp runs on Linux only")
}

func (s *Server) dialInstance(ctx context.Context, instanceID, addr string) (net.Conn, error) {
	return nil, gpurent.Errorf(gpurent.CodeUnavailable, "port forwarding into instances needs a Linux agent")
}
