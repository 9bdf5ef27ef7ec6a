//go:build linux

package access_test

import (
	"context"
	"io"
	"os/exec"
	"testing"
	"time"

	"github.com/gpurent/gpurent/internal/agent/runtime"
)

// firstByte runs a command line and reports the time to the first byte of
// its standard output (the timer stops while the rest drains).
func firstByte(b *testing.B, name string, args ...string) {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	var one [1]byte
	if _, err := io.ReadFull(out, one[:]); err != nil {
		b.Fatalf("%s: no output: %v", name, err)
	}
	b.StopTimer()
	_, _ = io.Copy(io.Discard, out)
	if err := cmd.Wait(); err != nil {
		b.Fatalf("%s: %v", name, err)
	}
	b.StartTimer()
}

// BenchmarkExecFirstByte is session setup through the access server with
// the real OpenSSH client: connect, key exchange, authentication, exec in
// the instance, to the first byte of `echo hi`.
func BenchmarkExecFirstByte(b *testing.B) {
	f := newFixture(b, nil)
	args := append(f.sshArgs(f.instance), "echo", "hi")
	b.ResetTimer()
	for range b.N {
		firstByte(b, "ssh", args...)
	}
}

// BenchmarkDockerExec is the baseline: `docker exec <container> echo hi`
// with the Docker CLI, to the first byte.
func BenchmarkDockerExec(b *testing.B) {
	f := newFixture(b, nil)
	if _, err := exec.LookPath("docker"); err != nil {
		b.Fatalf("the docker CLI is not installed: run `make test`, which installs it")
	}
	b.ResetTimer()
	for range b.N {
		firstByte(b, "docker", "exec", f.container, "echo", "hi")
	}
}

// BenchmarkRuntimeExec is the floor: the runtime's exec of the same
// command through the Engine API, to the first byte, with no SSH at all.
func BenchmarkRuntimeExec(b *testing.B) {
	f := newFixture(b, nil)
	b.ResetTimer()
	for range b.N {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		pr, pw := io.Pipe()
		s, err := f.rt.Exec(ctx, f.instance, runtime.ExecSpec{Cmd: []string{"echo", "hi"}, Stdout: pw})
		if err != nil {
			b.Fatal(err)
		}
		var one [1]byte
		if _, err := io.ReadFull(pr, one[:]); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		go func() { _, _ = io.Copy(io.Discard, pr) }()
		if _, err := s.Wait(ctx); err != nil {
			b.Fatal(err)
		}
		_ = s.Close()
		_ = pw.Close()
		cancel()
		b.StartTimer()
	}
}
