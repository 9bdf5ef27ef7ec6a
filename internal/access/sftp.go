package access

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agent/runtime"
	"github.com/gpurent/gpurent/internal/staticexe"
)

// SFTPHelperDir is the directory inside an instance that holds the sftp
// helper copied there (named by the helper's checksum, so that a new agent
// version copies its own beside an old one).
const SFTPHelperDir = "/.gpurent"

// sftpHelper is the static executable that serves sftp inside instances,
// held open from the first use, so that the copies are of the file that was
// checked and summed even if the agent's binary is replaced meanwhile.
type sftpHelper struct {
	file   *os.File
	size   int64
	inside string   // its path inside an instance
	args   []string // its arguments
}

// helper opens, checks and sums Config.SFTPHelper once.
func (s *Server) helper() (*sftpHelper, error) {
	s.helperOnce.Do(func() {
		s.sftpHelper, s.helperErr = openSFTPHelper(s.cfg.SFTPHelper)
		if s.helperErr != nil {
			s.log.Error("no sftp for instances", "err", s.helperErr)
		}
	})
	return s.sftpHelper, s.helperErr
}

func openSFTPHelper(cmd []string) (*sftpHelper, error) {
	if len(cmd) == 0 || cmd[0] == "" {
		return nil, gpurent.Errorf(gpurent.CodeUnavailable, "no sftp helper configured")
	}
	f, err := os.Open(cmd[0])
	if err != nil {
		return nil, gpurent.WrapError(gpurent.CodeUnavailable, err, "open the sftp helper %s", cmd[0])
	}
	if err := staticexe.Check(f); err != nil {
		f.Close()
		return nil, gpurent.WrapError(gpurent.CodeUnavailable, err,
			"the sftp helper %s cannot run inside instances: it must be a static Linux executable (%s)", cmd[0], staticexe.Hint)
	}
	h := sha256.New()
	size, err := io.Copy(h, f)
	if err != nil {
		f.Close()
		return nil, gpurent.WrapError(gpurent.CodeUnavailable, err, "read the sftp helper %s", cmd[0])
	}
	return &sftpHelper{
		file:   f,
		size:   size,
		inside: SFTPHelperDir + "/sftp-" + hex.EncodeToString(h.Sum(nil)[:12]),
		args:   append([]string(nil), cmd[1:]...),
	}, nil
}

// file describes the helper for runtime.Installer.
func (h *sftpHelper) installFile() runtime.File {
	return runtime.File{
		Path: h.inside, Mode: 0o755, Size: h.size,
		Open: func() (io.ReadCloser, error) {
			return io.NopCloser(io.NewSectionReader(h.file, 0, h.size)), nil
		},
	}
}
