package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/gpurent/gpurent"
)

// configFile is the name of the saved login inside Env.ConfigDir.
const configFile = "config.json"

// config is the saved login: the server and the token it issued.
type config struct {
	Server string `json:"server,omitempty"`
	Token  string `json:"token,omitempty"`
}

// loadConfig reads dir/config.json; a missing file is an empty config. A
// file others can read gets a warning on warn, since it holds a credential.
func loadConfig(dir string, warn io.Writer) (config, error) {
	var cfg config
	if dir == "" {
		return cfg, nil
	}
	path := filepath.Join(dir, configFile)
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return cfg, nil
	}
	if err != nil {
		return cfg, gpurent.WrapError(gpurent.CodeInternal, err, "cannot read %s", path)
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Mode().Perm()&0o077 != 0 {
		fmt.Fprintf(warn, "warning: %s holds a token and is readable by others (mode %04o); run: chmod 600 %s\n",
			path, st.Mode().Perm(), path)
	}
	if err := json.NewDecoder(io.LimitReader(f, 1<<20)).Decode(&cfg); err != nil {
		return cfg, gpurent.WrapError(gpurent.CodeInvalid, err, "%s is not valid JSON; fix it or remove it and log in again", path)
	}
	return cfg, nil
}

// saveConfig writes cfg to dir/config.json with mode 0600 (dir 0700),
// replacing the file atomically so a crash never leaves half a file.
func saveConfig(dir string, cfg config) error {
	if dir == "" {
		return gpurent.Errorf(gpurent.CodeInternal, "no configuration directory: cannot save the login")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return gpurent.WrapError(gpurent.CodeInternal, err, "cannot create %s", dir)
	}
	data, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return gpurent.WrapError(gpurent.CodeInternal, err, "cannot encode the configuration")
	}
	data = append(data, '\n')
	tmp, err := os.CreateTemp(dir, ".config-*.json")
	if err != nil {
		return gpurent.WrapError(gpurent.CodeInternal, err, "cannot write to %s", dir)
	}
	defer os.Remove(tmp.Name()) // no-op once renamed
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return gpurent.WrapError(gpurent.CodeInternal, err, "cannot restrict %s", tmp.Name())
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return gpurent.WrapError(gpurent.CodeInternal, err, "cannot write %s", tmp.Name())
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return gpurent.WrapError(gpurent.CodeInternal, err, "cannot write %s", tmp.Name())
	}
	if err := tmp.Close(); err != nil {
		return gpurent.WrapError(gpurent.CodeInternal, err, "cannot write %s", tmp.Name())
	}
	path := filepath.Join(dir, configFile)
	if err := os.Rename(tmp.Name(), path); err != nil {
		return gpurent.WrapError(gpurent.CodeInternal, err, "cannot replace %s", path)
	}
	return nil
}

// normaliseServer checks a server URL and drops a trailing slash.
func normaliseServer(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", gpurent.Errorf(gpurent.CodeInvalid,
			"invalid server URL %q: want http://host[:port] or https://host[:port]", raw)
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return "", gpurent.Errorf(gpurent.CodeInvalid,
			"invalid server URL %q: no user, query or fragment allowed", raw)
	}
	return strings.TrimRight(u.String(), "/"), nil
}

// sameServer reports whether two server URLs name the same server.
func sameServer(a, b string) bool {
	na, errA := normaliseServer(a)
	nb, errB := normaliseServer(b)
	return errA == nil && errB == nil && strings.EqualFold(na, nb)
}
