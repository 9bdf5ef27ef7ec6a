// Package app is the composition root: it turns flags and environment into
// constructors, wires the store, services, API server and agents together,
// and provides the `serve` and `agent` roles of the gpurent binary. Nothing
// else in the tree constructs adapters.
package app

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/cli"
	"github.com/gpurent/gpurent/internal/store/postgres"
	"github.com/gpurent/gpurent/internal/store/sqlite"
)

// Version is the build's version; release builds set it with -ldflags.
const Version = "0.1.0-dev"

// Main runs the gpurent binary and returns its exit status.
func Main(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root := cli.NewRoot(serveCommand(), agentCommand(), sftpHelperCommand(), instanceInitCommand(), execRelayCommand())
	root.SetOut(stdout)
	root.SetErr(stderr)
	return cli.Execute(ctx, root, args)
}

// openStore opens the database named by dsn: a postgres:// or postgresql://
// URL, or else a SQLite file path.
func openStore(ctx context.Context, dsn string) (gpurent.Store, error) {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		return postgres.Open(ctx, dsn)
	}
	if err := os.MkdirAll(filepath.Dir(dsn), 0o700); err != nil {
		return nil, fmt.Errorf("create the database directory: %w", err)
	}
	return sqlite.Open(ctx, dsn)
}

// newLogger logs text lines to w at level.
func newLogger(w io.Writer, level slog.Level) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
}

// defaultDataDir is where a server or agent keeps its files.
func defaultDataDir() string {
	if d := os.Getenv("GPURENT_DATA_DIR"); d != "" {
		return d
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".local", "share", "gpurent")
	}
	return ".gpurent"
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
