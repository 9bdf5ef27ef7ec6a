package dockertest

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/types/build"
	"github.com/moby/moby/api/types/jsonstream"
	"github.com/moby/moby/client"
)

// File is one file of a build context.
type File struct {
	Name string
	Mode int64
	Body []byte
}

// BuildImage builds the context of files (a Dockerfile among them) as tag,
// with no network (FROM images this machine has, such as BusyboxImage's),
// and fails the test with the build's log when it fails. The daemon's
// build cache makes a rebuild of the same context cheap.
func BuildImage(t testing.TB, tag string, files ...File) string {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		hdr := &tar.Header{Name: f.Name, Mode: f.Mode, Size: int64(len(f.Body)), Typeflag: tar.TypeReg, ModTime: time.Unix(0, 0)}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(f.Body); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	res, err := Client(t).ImageBuild(t.Context(), &buf, client.ImageBuildOptions{
		Tags: []string{tag}, Remove: true, ForceRemove: true, NetworkMode: "none", Version: build.BuilderV1,
	})
	if err != nil {
		t.Fatalf("build %s: %v", tag, err)
	}
	defer res.Body.Close()
	readBuild(t, tag, res.Body)
	return tag
}

// readBuild reads a build's progress to its end and fails the test, with
// the build's log, when the build failed.
func readBuild(t testing.TB, tag string, progress io.Reader) {
	t.Helper()
	var log strings.Builder
	dec := json.NewDecoder(progress)
	for {
		var m jsonstream.Message
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			return
		} else if err != nil {
			t.Fatalf("build %s: read progress: %v\n%s", tag, err, log.String())
		}
		log.WriteString(m.Stream)
		if m.Error != nil {
			t.Fatalf("build %s: %s\n%s", tag, m.Error.Message, log.String())
		}
	}
}
