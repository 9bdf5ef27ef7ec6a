//go:build linux

package access

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"github.com/pkg/sftp"
	"golang.org/x/sys/unix"

	"github.com/gpurent/gpurent"
)

// rootFD is where the sftp helper finds the instance's root directory.
const rootFD = 3

// ServeSFTPChild is the sftp helper process, wired to the hidden `gpurent
// agent-sftp` command (args are the arguments after it). It finds the
// instance's root directory open on fd 3 (an O_PATH descriptor of
// /proc/<pid>/root the server verified), chroots into it, takes the
// instance root's host uid and gid and capability set (-uid, -gid, -caps,
// from the instance's init process), and serves sftp on stdin/stdout until
// stdin ends. Inside the chroot "/" is the instance's root, so an absolute
// symlink in the instance resolves inside the instance, never on the host;
// files it writes belong to the instance's root and land in the instance's
// mounts (its volume at /root/data, /tmp, ...).
func ServeSFTPChild(args []string) error {
	fs := flag.NewFlagSet("agent-sftp", flag.ContinueOnError)
	fs.SetOutput(os.Stderr)
	uid := fs.Int("uid", 0, "host uid of the instance's root")
	gid := fs.Int("gid", 0, "host gid of the instance's root")
	caps := fs.String("caps", "", "capability set of the instance, hex (CapBnd of its init)")
	if err := fs.Parse(args); err != nil {
		return gpurent.WrapError(gpurent.CodeInvalid, err, "agent-sftp: bad arguments")
	}
	if err := unix.Fchdir(rootFD); err != nil {
		return gpurent.WrapError(gpurent.CodeInvalid, err, "agent-sftp: no instance root on fd %d (this command is started by the agent only)", rootFD)
	}
	if err := unix.Chroot("."); err != nil {
		return gpurent.WrapError(gpurent.CodeInternal, err, "agent-sftp: chroot into the instance")
	}
	if err := unix.Chdir("/"); err != nil {
		return gpurent.WrapError(gpurent.CodeInternal, err, "agent-sftp: chdir / in the instance")
	}
	_ = unix.Close(rootFD)
	unix.Umask(0o022)
	// Go applies these to every thread of the process.
	if err := syscall.Setgroups(nil); err != nil {
		return gpurent.WrapError(gpurent.CodeInternal, err, "agent-sftp: drop supplementary groups")
	}
	if *gid != 0 {
		if err := syscall.Setgid(*gid); err != nil {
			return gpurent.WrapError(gpurent.CodeInternal, err, "agent-sftp: setgid %d", *gid)
		}
	}
	if *uid != 0 {
		// An unprivileged uid has no capabilities left.
		if err := syscall.Setuid(*uid); err != nil {
			return gpurent.WrapError(gpurent.CodeInternal, err, "agent-sftp: setuid %d", *uid)
		}
	} else if *caps != "" {
		mask, err := strconv.ParseUint(*caps, 16, 64)
		if err != nil {
			return gpurent.WrapError(gpurent.CodeInvalid, err, "agent-sftp: -caps %q is not hex", *caps)
		}
		if err := limitCaps(mask); err != nil {
			// A cgo build cannot change every thread's set: serve with
			// the agent's (the chroot still confines every path).
			fmt.Fprintf(os.Stderr, "agent-sftp: keeping the agent's capabilities: %v\n", err)
		}
	}
	home := "/"
	if st, err := os.Stat("/root"); err == nil && st.IsDir() {
		home = "/root"
	}
	srv, err := sftp.NewServer(stdio{}, sftp.WithServerWorkingDirectory(home))
	if err != nil {
		return gpurent.WrapError(gpurent.CodeInternal, err, "agent-sftp: start the sftp server")
	}
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

// limitCaps sets the permitted and effective capabilities of every thread
// to mask (and clears the inheritable ones).
func limitCaps(mask uint64) error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	data := [2]unix.CapUserData{
		{Effective: uint32(mask), Permitted: uint32(mask)},
		{Effective: uint32(mask >> 32), Permitted: uint32(mask >> 32)},
	}
	_, _, errno := syscall.AllThreadsSyscall(unix.SYS_CAPSET,
		uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0)
	if errno != 0 {
		return errno
	}
	return nil
}

// sftpChild is a running helper.
type sftpChild struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout io.ReadCloser
}

// startSFTP starts the helper for an instance. ctx bounds the lookups,
// life the helper's life.
func (s *Server) startSFTP(ctx, life context.Context, instanceID string) (*sftpChild, error) {
	if len(s.cfg.SFTPHelper) == 0 {
		return nil, gpurent.Errorf(gpurent.CodeUnavailable, "no sftp helper configured")
	}
	p, err := attachProc(ctx, s.cfg.Runtime, instanceID)
	if err != nil {
		return nil, err
	}
	defer p.close()
	root, err := p.open("root", unix.O_PATH|unix.O_DIRECTORY)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	uidMap, err := p.read("uid_map")
	if err != nil {
		return nil, err
	}
	gidMap, err := p.read("gid_map")
	if err != nil {
		return nil, err
	}
	status, err := p.read("status")
	if err != nil {
		return nil, err
	}
	uid, err := hostIDOfRoot(uidMap)
	if err != nil {
		return nil, gpurent.WrapError(gpurent.CodeInternal, err, "instance %s: uid_map", instanceID)
	}
	gid, err := hostIDOfRoot(gidMap)
	if err != nil {
		return nil, gpurent.WrapError(gpurent.CodeInternal, err, "instance %s: gid_map", instanceID)
	}
	caps := statusField(status, "CapBnd")
	if caps == "" {
		return nil, gpurent.Errorf(gpurent.CodeInternal, "instance %s: no CapBnd in its init's status", instanceID)
	}
	args := append(append([]string(nil), s.cfg.SFTPHelper[1:]...),
		"-uid", strconv.FormatUint(uint64(uid), 10), "-gid", strconv.FormatUint(uint64(gid), 10), "-caps", caps)
	cmd := exec.CommandContext(life, s.cfg.SFTPHelper[0], args...)
	cmd.ExtraFiles = []*os.File{root} // fd 3
	cmd.Stderr = &logLines{log: s.log.With("instance", instanceID, "helper", "sftp")}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, gpurent.WrapError(gpurent.CodeInternal, err, "sftp helper pipes")
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		_ = stdin.Close()
		return nil, gpurent.WrapError(gpurent.CodeInternal, err, "sftp helper pipes")
	}
	if err := cmd.Start(); err != nil {
		_ = stdin.Close()
		_ = stdout.Close()
		return nil, gpurent.WrapError(gpurent.CodeUnavailable, err, "start the sftp helper %s", s.cfg.SFTPHelper[0])
	}
	return &sftpChild{cmd: cmd, stdin: stdin, stdout: stdout}, nil
}

// hostIDOfRoot maps id 0 of a namespace through its uid_map or gid_map.
func hostIDOfRoot(m []byte) (uint32, error) {
	for _, line := range strings.Split(string(m), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 {
			continue
		}
		inside, err1 := strconv.ParseUint(f[0], 10, 32)
		outside, err2 := strconv.ParseUint(f[1], 10, 32)
		count, err3 := strconv.ParseUint(f[2], 10, 32)
		if err1 != nil || err2 != nil || err3 != nil {
			return 0, fmt.Errorf("bad line %q", line)
		}
		if inside == 0 && count > 0 {
			return uint32(outside), nil
		}
	}
	return 0, errors.New("root is not mapped")
}

// statusField is a field of /proc/<pid>/status.
func statusField(status []byte, name string) string {
	sc := bufio.NewScanner(strings.NewReader(string(status)))
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && k == name {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
