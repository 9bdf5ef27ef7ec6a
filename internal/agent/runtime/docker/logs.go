package docker

import (
	"context"
	"fmt"
	"io"
	"strconv"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/client"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agent/runtime"
)

var _ runtime.Logger = (*Runtime)(nil)

// Logs streams what the instance's container wrote (the startup command's
// output and the init's own lines), stdout and stderr merged as written,
// from the bounded json-file log the daemon keeps (Config.LogMaxBytes).
// With Follow the stream ends when the container stops or ctx ends.
func (r *Runtime) Logs(ctx context.Context, instanceID string, opt runtime.LogOptions) (io.ReadCloser, error) {
	if !validName(instanceID) {
		return nil, gpurent.Errorf(gpurent.CodeInvalid, "instance id %q is not usable as a container name", instanceID)
	}
	if opt.Tail < 0 {
		return nil, gpurent.Errorf(gpurent.CodeInvalid, "logs: tail must not be negative")
	}
	name := r.name(instanceID)
	c, found, err := r.inspect(ctx, name)
	if err != nil {
		return nil, err
	}
	if !found || checkOwned(c, instanceID) != nil || !r.inScope(c) {
		return nil, gpurent.Errorf(gpurent.CodeNotFound, "instance %s has no container on this host", instanceID)
	}
	opts := client.ContainerLogsOptions{ShowStdout: true, ShowStderr: true, Follow: opt.Follow}
	if !opt.Since.IsZero() {
		// The daemon takes seconds.nanoseconds since the epoch.
		opts.Since = strconv.FormatInt(opt.Since.Unix(), 10) + "." + fmt.Sprintf("%09d", opt.Since.Nanosecond())
	}
	if opt.Tail > 0 {
		opts.Tail = strconv.Itoa(opt.Tail)
	}
	ctx, cancel := context.WithCancel(ctx)
	res, err := r.cli.ContainerLogs(ctx, c.ID, opts)
	if err != nil {
		cancel()
		return nil, wrap(err, "read the logs of instance %s", instanceID)
	}
	pr, pw := io.Pipe()
	go func() {
		defer cancel()
		defer res.Close()
		// One writer for both streams: their order is kept as written.
		_, err := stdcopy.StdCopy(pw, pw, res)
		pw.CloseWithError(err)
	}()
	return &logStream{PipeReader: pr, cancel: cancel}, nil
}

// logStream ends the daemon's stream when closed.
type logStream struct {
	*io.PipeReader
	cancel context.CancelFunc
}

func (s *logStream) Close() error {
	s.cancel()
	return s.PipeReader.Close()
}
