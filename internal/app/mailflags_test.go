package app

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/gpurent/gpurent"
)

// TestServeMailFlags: serve refuses a mail server without a public URL
// (the mailed links would name the listen address) and a mail URL that
// does not parse, before it opens anything.
func TestServeMailFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--smtp-url", "smtp://127.0.0.1:25?from=ops@gpu.example"}, "--smtp-url needs --public-url"},
		{[]string{"--smtp-url", "smtp://relay:hunter2@127.0.0.1:25", "--public-url", "https://gpu.example"}, "from=ADDRESS is required"},
	} {
		cmd := serveCommand()
		cmd.SetArgs(append(c.args, "--data-dir", t.TempDir(), "--listen", "127.0.0.1:0", "--ssh-listen", ""))
		cmd.SetOut(io.Discard)
		cmd.SetErr(io.Discard)
		err := cmd.ExecuteContext(context.Background())
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("serve %v: %v, want an error saying %q (and no password)", c.args, err, c.want)
		}
	}
	if _, err := StartServer(context.Background(), ServerConfig{DSN: ":memory:", MailURL: "http://mail.example"}); !gpurent.IsCode(err, gpurent.CodeInvalid) {
		t.Errorf("StartServer with an http mail URL: %v", err)
	}
}
