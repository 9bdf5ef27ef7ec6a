package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/build"
	"github.com/moby/moby/client"
)

// BuildShellImage builds tag FROM scratch with the host's static busybox
// (busyboxPath) and a link for each of its applets, and a shell as its
// command, like real base images (ubuntu, nvidia/cuda): the demo's base
// images, built without any pull. A build of the same binary hits the
// daemon's cache.
func (r *Runtime) BuildShellImage(ctx context.Context, tag, busyboxPath string, labels map[string]string) error {
	bin, err := os.ReadFile(busyboxPath)
	if err != nil {
		return fmt.Errorf("read %s (busybox-static): %w", busyboxPath, err)
	}
	list, err := exec.CommandContext(ctx, busyboxPath, "--list-full").Output()
	if err != nil {
		return fmt.Errorf("%s --list-full: %w", busyboxPath, err)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	at := time.Unix(0, 0)
	add := func(h *tar.Header, body []byte) {
		h.ModTime = at
		h.Size = int64(len(body))
		if err == nil {
			err = tw.WriteHeader(h)
		}
		if err == nil && len(body) > 0 {
			_, err = tw.Write(body)
		}
	}
	var labelLines strings.Builder
	for k, v := range labels {
		fmt.Fprintf(&labelLines, "LABEL %q=%q\n", k, v)
	}
	add(&tar.Header{Name: "Dockerfile", Mode: 0o644, Typeflag: tar.TypeReg},
		[]byte("FROM scratch\nCOPY rootfs/ /\nWORKDIR /root\nENV PATH=/usr/sbin:/usr/bin:/sbin:/bin\n"+labelLines.String()+"CMD [\"/bin/sh\"]\n"))
	for _, d := range []string{"rootfs", "rootfs/bin", "rootfs/sbin", "rootfs/usr", "rootfs/usr/bin", "rootfs/usr/sbin", "rootfs/etc", "rootfs/root", "rootfs/tmp"} {
		mode := int64(0o755)
		switch d {
		case "rootfs/root":
			mode = 0o700
		case "rootfs/tmp":
			mode = 0o1777
		}
		add(&tar.Header{Name: d + "/", Mode: mode, Typeflag: tar.TypeDir}, nil)
	}
	add(&tar.Header{Name: "rootfs/bin/busybox", Mode: 0o755, Typeflag: tar.TypeReg}, bin)
	add(&tar.Header{Name: "rootfs/etc/passwd", Mode: 0o644, Typeflag: tar.TypeReg}, []byte("root:x:0:0:root:/root:/bin/sh\n"))
	add(&tar.Header{Name: "rootfs/etc/group", Mode: 0o644, Typeflag: tar.TypeReg}, []byte("root:x:0:\n"))
	for _, applet := range strings.Fields(string(list)) {
		if !strings.Contains(applet, "/") || applet == "bin/busybox" {
			continue
		}
		add(&tar.Header{Name: "rootfs/" + applet, Linkname: "/bin/busybox", Mode: 0o777, Typeflag: tar.TypeSymlink}, nil)
	}
	if err == nil {
		err = tw.Close()
	}
	if err != nil {
		return fmt.Errorf("the build context of %s: %w", tag, err)
	}
	res, err := r.cli.ImageBuild(ctx, &buf, client.ImageBuildOptions{Tags: []string{tag}, Remove: true, ForceRemove: true,
		NetworkMode: "none", Version: build.BuilderV1})
	if err != nil {
		return wrap(err, "build %s", tag)
	}
	defer res.Body.Close()
	dec := json.NewDecoder(res.Body)
	for {
		var m struct {
			Error string `json:"error"`
		}
		if err := dec.Decode(&m); err == io.EOF {
			return nil
		} else if err != nil {
			return fmt.Errorf("build %s: %w", tag, err)
		}
		if m.Error != "" {
			return fmt.Errorf("build %s: %s", tag, m.Error)
		}
	}
}

// PushImage tags the local image src as ref and pushes it, anonymously
// (the demo's registry on loopback takes any push).
func (r *Runtime) PushImage(ctx context.Context, src, ref string) error {
	if _, err := r.cli.ImageTag(ctx, client.ImageTagOptions{Source: src, Target: ref}); err != nil {
		return wrap(err, "tag %s as %s", src, ref)
	}
	resp, err := r.cli.ImagePush(ctx, ref, client.ImagePushOptions{RegistryAuth: "e30="})
	if err == nil {
		err = resp.Wait(ctx)
		_ = resp.Close()
	}
	if err != nil {
		return wrap(err, "push %s", ref)
	}
	return nil
}

// RemoveImage removes the tag ref from the daemon (the image stays while
// another tag holds it); a missing one is not an error.
func (r *Runtime) RemoveImage(ctx context.Context, ref string) error {
	if _, err := r.cli.ImageRemove(ctx, ref, client.ImageRemoveOptions{}); err != nil && !cerrdefs.IsNotFound(err) {
		return wrap(err, "remove %s", ref)
	}
	return nil
}
