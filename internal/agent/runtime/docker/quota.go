package docker

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/moby/moby/api/types/system"

	"github.com/gpurent/gpurent"
)

// Disk quotas.
//
// The data volume: with Config.VolumeQuotaDir set, a volume of VolumeGiB > 0
// is an ext4 file system in an image file of exactly that size under the
// directory, its blocks reserved at creation (fallocate), loop-mounted
// (nosuid, nodev) by the agent, and bound into the container through
// Docker's local driver (type none, o=bind). A tenant who writes past it
// gets ENOSPC inside; the host's disk holds nothing beyond the image. This
// works on a stock Debian host (loop devices, e2fsprogs), whatever Docker's
// storage driver. The mount is made again after a reboot when the volume is
// next used, and goes with the volume.
//
// The writable layer: Docker enforces --storage-opt size= only on overlay2
// over xfs mounted with pquota (and on a few other drivers). New detects
// overlay2 over xfs; elsewhere Config.LayerQuota says what to do: "warn"
// (the default: start, and say that the writable layer is not limited),
// "require" (refuse to start), or "off".

// Layer quota policies of Config.LayerQuota.
const (
	LayerQuotaWarn    = "warn"
	LayerQuotaRequire = "require"
	LayerQuotaOff     = "off"
)

// DefaultLayerGiB is the writable-layer limit where the driver enforces one
// and Config.LayerGiB is 0.
const DefaultLayerGiB = 50

// layerQuotaSupported reports whether the daemon's storage driver enforces
// a size on a container's writable layer.
func layerQuotaSupported(info system.Info) bool {
	switch info.Driver {
	case "overlay2":
		for _, kv := range info.DriverStatus {
			if kv[0] == "Backing Filesystem" {
				return kv[1] == "xfs" // needs pquota too; the daemon refuses at create otherwise
			}
		}
		return false
	case "btrfs", "zfs", "devicemapper", "windowsfilter":
		return true
	}
	return false
}

// settleLayerQuota applies Config.LayerQuota to what the daemon supports.
func (r *Runtime) settleLayerQuota(info system.Info) error {
	policy := r.cfg.LayerQuota
	if policy == "" {
		policy = LayerQuotaWarn
	}
	switch policy {
	case LayerQuotaOff:
		return nil
	case LayerQuotaWarn, LayerQuotaRequire:
	default:
		return gpurent.Errorf(gpurent.CodeInvalid, "docker runtime: layer quota policy %q is not warn, require or off", policy)
	}
	if layerQuotaSupported(info) {
		r.layerBytes = r.cfg.LayerGiB
		if r.layerBytes <= 0 {
			r.layerBytes = DefaultLayerGiB
		}
		r.layerBytes <<= 30
		return nil
	}
	if policy == LayerQuotaRequire {
		return gpurent.Errorf(gpurent.CodeUnavailable,
			"the storage driver %s cannot limit an instance's writable layer (it needs overlay2 on xfs with pquota); "+
				"move /var/lib/docker to such a file system or run the agent with --layer-quota warn", info.Driver)
	}
	r.log.Warn("docker: instances' writable layers are not size-limited: the storage driver cannot enforce it (it needs overlay2 on xfs with pquota); data volumes still are with a volume quota directory",
		"driver", info.Driver)
	return nil
}

// LayerQuotaBytes is the size limit put on each instance's writable layer
// (0: none, the driver cannot enforce one).
func (r *Runtime) LayerQuotaBytes() int64 { return r.layerBytes }

// quotaPaths are where a quota'd volume's image and mount live.
func (r *Runtime) quotaPaths(volume string) (img, mnt string) {
	return filepath.Join(r.cfg.VolumeQuotaDir, volume+".img"), filepath.Join(r.cfg.VolumeQuotaDir, volume)
}

// ensureQuotaMount makes (once) the image of the volume, of gib GiB, and
// mounts it when it is not; it returns the mount point.
func (r *Runtime) ensureQuotaMount(ctx context.Context, volume string, gib int64) (string, error) {
	img, mnt := r.quotaPaths(volume)
	if err := os.MkdirAll(mnt, 0o700); err != nil {
		return "", gpurent.WrapError(gpurent.CodeUnavailable, err, "volume %s: make its mount point", volume)
	}
	if mounted(mnt) {
		return mnt, nil
	}
	if _, err := os.Stat(img); os.IsNotExist(err) {
		if err := makeImage(ctx, img, gib<<30); err != nil {
			_ = os.Remove(img)
			return "", gpurent.WrapError(gpurent.CodeUnavailable, err, "volume %s: make its %d GiB file system", volume, gib)
		}
		r.log.Info("docker: volume file system made", "volume", volume, "gib", gib)
	} else if err != nil {
		return "", gpurent.WrapError(gpurent.CodeUnavailable, err, "volume %s: look up its image", volume)
	}
	if err := run(ctx, "mount", "-o", "loop,nosuid,nodev", img, mnt); err != nil {
		return "", gpurent.WrapError(gpurent.CodeUnavailable, err, "volume %s: mount its file system", volume)
	}
	return mnt, nil
}

// makeImage makes an ext4 file system in a new file of size bytes, its
// blocks reserved so that the tenant's writes never meet a full host disk.
func makeImage(ctx context.Context, img string, size int64) error {
	f, err := os.OpenFile(img, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	err = unix.Fallocate(int(f.Fd()), 0, 0, size)
	if err != nil {
		err = f.Truncate(size) // a file system without fallocate: sparse
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	// -m 0: no blocks reserved for root (the tenant is root anyway).
	return run(ctx, "mkfs.ext4", "-q", "-F", "-m", "0", "-E", "lazy_itable_init=0,lazy_journal_init=0", img)
}

// releaseQuota unmounts and deletes a removed volume's file system.
func (r *Runtime) releaseQuota(ctx context.Context, volume string) error {
	if r.cfg.VolumeQuotaDir == "" {
		return nil
	}
	img, mnt := r.quotaPaths(volume)
	if mounted(mnt) {
		if err := run(ctx, "umount", mnt); err != nil {
			return gpurent.WrapError(gpurent.CodeUnavailable, err, "volume %s: unmount its file system", volume)
		}
	}
	_ = os.Remove(mnt)
	if err := os.Remove(img); err != nil && !os.IsNotExist(err) {
		return gpurent.WrapError(gpurent.CodeUnavailable, err, "volume %s: delete its image", volume)
	}
	return nil
}

// mounted reports whether path is a mount point.
func mounted(path string) bool {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 4 && unescapeMount(fields[4]) == path {
			return true
		}
	}
	return false
}

func unescapeMount(s string) string {
	return strings.NewReplacer(`\040`, " ", `\011`, "\t", `\012`, "\n", `\134`, `\`).Replace(s)
}

func run(ctx context.Context, name string, args ...string) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %w: %s", name, err, firstLine(strings.TrimSpace(out.String())))
	}
	return nil
}
