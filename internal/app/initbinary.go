package app

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/gpurent/gpurent/internal/staticexe"
)

// EnvInitBinary names the static gpurent executable (a CGO_ENABLED=0
// build) the Docker runtime mounts into every instance as its PID 1
// (`gpurent instance-init`), when the agent's own binary is not static.
const EnvInitBinary = "GPURENT_INIT"

// modulePath is this module's, to find its source for a demo's build.
const modulePath = "github.com/gpurent/gpurent"

// initBinary finds the static gpurent executable instances run as their
// init (and their sftp helper): the flag's or GPURENT_INIT's path, else
// this executable when it is static. Without one, a demo (buildDir set)
// builds a static copy into buildDir/gpurent-static when the go command
// and this module's source are at hand (`go run` with gcc present makes a
// dynamic binary); otherwise the answer names `make build`.
func initBinary(ctx context.Context, flagPath, buildDir string, log *slog.Logger) (string, error) {
	if flagPath == "" {
		flagPath = os.Getenv(EnvInitBinary)
	}
	if flagPath != "" {
		abs, err := filepath.Abs(flagPath)
		if err != nil {
			return "", err
		}
		if err := staticexe.CheckFile(abs); err != nil {
			return "", fmt.Errorf("the init binary %s (--init-binary or %s) cannot run inside instances: %w; %s", abs, EnvInitBinary, err, staticexe.Hint)
		}
		return abs, nil
	}
	self, err := os.Executable()
	if err == nil {
		if self, err = filepath.EvalSymlinks(self); err == nil {
			if err = staticexe.CheckFile(self); err == nil {
				return self, nil
			}
		}
	}
	why := fmt.Sprintf("this gpurent executable (%s) cannot be instances' init: %v", self, err)
	if buildDir == "" {
		return "", fmt.Errorf("%s; %s (`make build`), or pass a static one with --init-binary or %s", why, staticexe.Hint, EnvInitBinary)
	}
	built, err := buildStatic(ctx, buildDir, log)
	if err != nil {
		return "", fmt.Errorf("%s, and building a static one failed: %w; %s (`make build`), or pass a static one with %s", why, err, staticexe.Hint, EnvInitBinary)
	}
	return built, nil
}

// buildStatic builds ./cmd/gpurent with CGO_ENABLED=0 from the module
// source above the working directory into dir/gpurent-static.
func buildStatic(ctx context.Context, dir string, log *slog.Logger) (string, error) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		return "", errors.New("no go command")
	}
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	out := filepath.Join(dir, "gpurent-static")
	tmp := out + ".tmp"
	log.Warn("building a static gpurent for instances' init (CGO_ENABLED=0 go build ./cmd/gpurent); this executable is dynamically linked",
		"source", root, "output", out)
	cmd := exec.CommandContext(ctx, goTool, "build", "-trimpath", "-o", tmp, "./cmd/gpurent")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if msg, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build: %v: %s", err, strings.TrimSpace(string(msg)))
	}
	if err := staticexe.CheckFile(tmp); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, out); err != nil {
		return "", err
	}
	log.Warn("built the static gpurent for instances' init", "path", out)
	return out, nil
}

// moduleRoot is the directory, from the working one up, whose go.mod is
// this module's.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if isModule(filepath.Join(dir, "go.mod")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no source of %s in the working directory or above", modulePath)
		}
		dir = parent
	}
}

func isModule(goMod string) bool {
	f, err := os.Open(goMod)
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); strings.HasPrefix(line, "module ") {
			return strings.Trim(strings.TrimSpace(strings.TrimPrefix(line, "module ")), `"`) == modulePath
		}
	}
	return false
}
