package dockertest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
)

// initPkg is the test init's main package.
const initPkg = "github.com/gpurent/gpurent/internal/agent/runtime/docker/dockertest/initbin"

var initBuilt struct {
	once sync.Once
	path string
	out  []byte
	err  error
}

// InitBinary builds a static executable that runs as an instance's init
// (it takes the arguments of `gpurent instance-init`), once per test
// process, and returns its path for docker.Config.InitBinary. A test
// binary itself (built with -race and cgo) could not run inside an image
// without the host's libraries. The build goes through the go command's
// cache, so a rebuild is a link; the file is replaced atomically, so other
// test processes that mount an older one keep theirs.
func InitBinary(t testing.TB) string {
	t.Helper()
	path, err := BuildInitBinary()
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// BuildInitBinary is InitBinary for callers without a testing.TB.
func BuildInitBinary() (string, error) {
	initBuilt.once.Do(func() {
		goTool, err := exec.LookPath("go")
		if err != nil {
			initBuilt.err = err
			return
		}
		dir := filepath.Join(os.TempDir(), "gpurent-test-init-"+strconv.Itoa(os.Getuid()))
		if initBuilt.err = os.MkdirAll(dir, 0o700); initBuilt.err != nil {
			return
		}
		tmp := filepath.Join(dir, "init."+strconv.Itoa(os.Getpid()))
		cmd := exec.Command(goTool, "build", "-trimpath", "-o", tmp, initPkg)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if initBuilt.out, initBuilt.err = cmd.CombinedOutput(); initBuilt.err != nil {
			return
		}
		// Running containers keep the inode they mounted.
		initBuilt.path = filepath.Join(dir, "init")
		initBuilt.err = os.Rename(tmp, initBuilt.path)
	})
	if initBuilt.err != nil {
		return "", fmt.Errorf("build the static test init %s: %w\n%s", initPkg, initBuilt.err, initBuilt.out)
	}
	return initBuilt.path, nil
}
